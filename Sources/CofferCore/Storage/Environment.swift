internal import CLMDB
package import Foundation
internal import Glibc
internal import Synchronization

/// One LMDB environment: a directory holding `data.mdb` and `lock.mdb`, with named tables, one writer
/// at a time and any number of concurrent readers (MVCC).
///
/// Transactions are closure-scoped and synchronous: the transaction commits when the closure returns
/// and aborts when it throws, and since the closure cannot `await`, a transaction can never be held
/// across a suspension point. When a write fills the map, the environment grows it and runs the
/// closure again, so write closures must not have side effects outside the transaction.
///
/// ```swift
/// let environment = try Environment(directory: url, options: .init(createIfMissing: true))
/// let items = try environment.openTables(["items"], create: true)[0]
/// try environment.write { txn in try txn.put(items, key: key, value: value) }
/// let value = try environment.read { txn in try txn.get(items, key: key) }
/// ```
package final class Environment: @unchecked Sendable {
    /// How to open an environment.
    package struct Options: Sendable {
        /// Create `data.mdb` when it is missing; when `false`, a directory without it is refused with
        /// ``LMDBError/Code/noSuchFile`` and left untouched.
        package var createIfMissing: Bool = false
        /// The initial map size in bytes; the map grows on demand. LMDB rounds it to whole pages.
        package var initialMapSize: Int = 64 << 20
        /// The largest the map may grow to.
        package var maximumMapSize: Int = 1 << 40
        /// The number of named tables the environment may hold.
        package var maximumTables: UInt32 = 32
        /// The number of concurrent read transactions across all processes.
        package var maximumReaders: UInt32 = 126
        /// Data files up to this size have their trees walked before the first change of every
        /// environment; larger ones only when ``CheckedTrees`` does not vouch for them
        /// (``Environment/walkEveryTimeLimit`` by default; tests lower it to reach the note's path).
        package var walkEveryTimeUpTo: UInt64 = Environment.walkEveryTimeLimit

        package init(
            createIfMissing: Bool = false,
            initialMapSize: Int = 64 << 20,
            maximumReaders: UInt32 = 126,
            walkEveryTimeUpTo: UInt64 = Environment.walkEveryTimeLimit
        ) {
            self.createIfMissing = createIfMissing
            self.initialMapSize = initialMapSize
            self.maximumReaders = maximumReaders
            self.walkEveryTimeUpTo = walkEveryTimeUpTo
        }
    }

    /// The directory holding the environment.
    package let directory: URL
    /// How many reader slots of dead processes were cleared when the environment opened
    /// (`mdb_reader_check`).
    package let staleReadersCleared: Int

    /// Whether opening created `lock.mdb` (so a caller that rejects the environment can remove it).
    package let createdLockFile: Bool

    private let options: Options
    private let gate = ResizeGate()
    /// Guarded by `gate`: read under shared, written under exclusive.
    private var handle: OpaquePointer?
    private let growthCount = Atomic<Int>(0)
    private let laterStaleReaders = Atomic<Int>(0)
    private let scatteredTouches = Atomic<Int>(0)
    private let mapDrops = Atomic<Int>(0)
    /// The process's account of mapped pages, which every open environment shares.
    private let mappedPages = MappedPageLedger.shared
    private let writesBegun = Atomic<Int>(0)
    /// Held across every write commit of this process: LMDB 0.9 reads `MDB_NOMETASYNC` from the
    /// environment when a transaction commits (its `mdb_txn_begin` ignores the flag), so a commit
    /// of ``CommitDurability/untilNextCommit`` sets it, commits and clears it with no other commit
    /// of this process in between. Writers are serialized by LMDB anyway; this adds no waiting.
    private let commitLock = Locked<Void>(())
    /// The file deleted to make room when a write that frees space finds the disk full.
    package let spaceReserve: SpaceReserve
    /// The data file's pages in use when this instance last sized the space reserve; 0 before its
    /// first commit.
    private let spaceReserveCheckedAt = Atomic<Int>(0)
    /// The handles of the tables this instance opened: with the free list's and the main table's,
    /// the B-trees whose pages a deletion may copy, which the space reserve is sized for.
    private let openedTables = Locked<Set<UInt32>>([])
    /// What ``KnownDamage`` says of the data file, if anything: writes that change something refuse.
    private let damageNote: Locked<String?>

    /// The damage found in the data file's trees (``KnownDamage``), if any: while there is, a write
    /// transaction that changed something does not commit.
    package var knownDamage: String? { damageNote.withLock { $0 } }

    /// Notes damage found in the data file's trees: writes refuse from now on, in this process and
    /// (through ``KnownDamage``) in every later one, until ``clearKnownDamage()``.
    package func noteDamage(_ what: String) {
        damageNote.withLock { $0 = what }
        treesVouched.store(false, ordering: .relaxed)
        CheckedTrees.clear(directory: directory.path)
        KnownDamage.record(what, directory: directory.path)
    }

    /// Forgets the damage noted, once a full check found the trees sound.
    package func clearKnownDamage() {
        damageNote.withLock { $0 = nil }
        KnownDamage.clear(directory: directory.path)
    }

    /// Data files up to this size get a full walk of their trees (``DataFileCheck/walk(snapshotID:)``)
    /// before the first write transaction of every environment that changes something commits, note
    /// or no note: tens of milliseconds at most, against a write landing on a damaged page (LMDB would
    /// follow it, and could write outside the map). Larger files are walked only when
    /// ``CheckedTrees`` does not vouch for them: a walk costs about 3 µs a tree page (120 ms for a
    /// 370 MB vault of small files), too much for every command, but once after each change to the
    /// file from outside Coffer is cheap.
    package static let walkEveryTimeLimit: UInt64 = 64 << 20

    private let treesChecked = Atomic<Bool>(false)
    /// Whether this environment's first change found the trees sound (walked, or vouched for by
    /// ``CheckedTrees``): only then does each commit renew the note for the state it made.
    private let treesVouched = Atomic<Bool>(false)
    private let firstChangeCheckRaw = Atomic<UInt8>(0)

    /// How the trees were checked before this environment's first change.
    package enum FirstChangeCheck: UInt8, Sendable {
        /// Walked in full.
        case walked = 1
        /// Taken as sound on the word of ``CheckedTrees``.
        case vouched = 2
    }

    /// How the trees were checked before this environment's first change, once it ran (for tests).
    package var firstChangeCheck: FirstChangeCheck? {
        FirstChangeCheck(rawValue: firstChangeCheckRaw.load(ordering: .relaxed))
    }

    /// Checks the data file's trees once, before the first change of this environment commits (from
    /// inside that write transaction, which holds LMDB's writer lock, so the committed state cannot
    /// move): walks them all when the file is no larger than ``Options/walkEveryTimeUpTo`` or when
    /// ``CheckedTrees`` does not vouch for the file as it is; a sound walk leaves that note.
    ///
    /// - Throws: ``KnownDamage/Refusal`` naming the damage, which is noted for later writes too.
    func checkTreesBeforeFirstChange() throws(KnownDamage.Refusal) {
        guard !treesChecked.exchange(true, ordering: .relaxed) else { return }
        guard let check = DataFileCheck(path: directory.appendingPathComponent("data.mdb").path) else { return }
        defer { check.close() }
        guard let current = check.current else { return }
        let before = CheckedTrees(directory: directory.path, transactionID: current.transactionID)
        if check.fileSize > options.walkEveryTimeUpTo, let before,
            CheckedTrees.read(directory: directory.path) == before
        {
            firstChangeCheckRaw.store(FirstChangeCheck.vouched.rawValue, ordering: .relaxed)
            treesVouched.store(true, ordering: .relaxed)
            return
        }
        firstChangeCheckRaw.store(FirstChangeCheck.walked.rawValue, ordering: .relaxed)
        let damage = check.walk(snapshotID: current.transactionID)
        guard !damage.isEmpty else {
            noteTreesSound(before)
            return
        }
        let shown = damage.prefix(3).map(\.description).joined(separator: "; ")
        let what = "data.mdb, " + shown + (damage.count > 3 ? "; and \(damage.count - 3) more" : "")
        noteDamage(what)
        throw KnownDamage.Refusal(description: what)
    }

    /// Notes that a walk found the trees of the data file sound, as `before` (taken before the walk
    /// began) describes it: the note (``CheckedTrees``) is left only if the file is still exactly as
    /// it was then, so damage arriving during the walk is never vouched for. From now on each commit
    /// of this environment renews it.
    package func noteTreesSound(_ before: CheckedTrees?) {
        treesVouched.store(true, ordering: .relaxed)
        guard let before, CheckedTrees(directory: directory.path, transactionID: before.transactionID) == before
        else { return }
        before.write(directory: directory.path)
    }

    /// The data file's path and page size, found at the first commit; guarded by ``commitLock``.
    private var recordTarget: (dataFile: String, pageSize: Int)?
    /// Where the map is (start, length) for the map size it was found at.
    private let mapRegion = Locked<(start: UInt, length: Int, mapSize: Int)?>(nil)

    /// Opens (or, with `createIfMissing`, creates) the environment in `directory`, which must exist.
    ///
    /// Files are created with mode 0600. Reader slots left by dead processes are cleared. If opening
    /// fails, nothing the call created is left behind.
    ///
    /// The corresponding C functions are `mdb_env_create`, `mdb_env_open` and `mdb_reader_check`.
    ///
    /// - Throws: ``LMDBError``: `noSuchFile` when there is no `data.mdb` and `createIfMissing` is false,
    ///   `invalid` when `data.mdb` is not an LMDB file, `versionMismatch`, `EINVAL` when `data.mdb` or
    ///   `lock.mdb` is not a regular file (a FIFO, a directory; nothing is opened), or an `errno` code.
    package init(directory: URL, options: Options) throws(LMDBError) {
        self.directory = directory
        self.options = options
        spaceReserve = SpaceReserve(directory: directory.path)
        let dataFile = directory.appendingPathComponent("data.mdb").path
        let lockFile = directory.appendingPathComponent("lock.mdb").path
        // Before any open: a FIFO would block it forever, a directory or device would fail obscurely.
        for path in [dataFile, lockFile] {
            if let found = FileKind.irregularContents(at: path) {
                throw LMDBError(LMDBError.Code(rawValue: EINVAL), operation: "open \(path), which is \(found)")
            }
        }
        if !options.createIfMissing, access(dataFile, F_OK) != 0 {
            throw LMDBError(.noSuchFile, operation: "open \(dataFile)")
        }
        // Before anything else: a compaction in progress is waited for here (DirectoryLock).
        let directoryLock = try DirectoryLock(directory: directory.path)
        let lockExisted = access(lockFile, F_OK) == 0
        let dataExisted = access(dataFile, F_OK) == 0
        do {
            try LockFile.prepare(path: lockFile, readers: options.maximumReaders)
        } catch {
            directoryLock.release()
            throw error
        }

        if !dataExisted {
            // A record left beside a data file that is gone would make the new one look rolled back,
            // and a damage note could name the new file's inode if the old one's is reused.
            unlink(CommitRecord.path(besideDataFile: dataFile))
            KnownDamage.clear(directory: directory.path)
            CheckedTrees.clear(directory: directory.path)
        }
        var environment: OpaquePointer?
        try LMDB.check(mdb_env_create(&environment), "mdb_env_create")
        guard let environment else { throw LMDBError(.invalid, operation: "mdb_env_create") }
        do {
            try LMDB.check(mdb_env_set_assert(environment, lmdbAssertion), "mdb_env_set_assert")
            try LMDB.check(mdb_env_set_maxdbs(environment, options.maximumTables), "mdb_env_set_maxdbs")
            try LMDB.check(mdb_env_set_maxreaders(environment, options.maximumReaders), "mdb_env_set_maxreaders")
            try LMDB.check(mdb_env_set_mapsize(environment, options.initialMapSize), "mdb_env_set_mapsize")
            try LMDB.check(
                mdb_env_open(environment, directory.path, UInt32(MDB_NOTLS), 0o600),
                "mdb_env_open(\(directory.path))"
            )
            var dead: Int32 = 0
            try LMDB.check(mdb_reader_check(environment, &dead), "mdb_reader_check")
            staleReadersCleared = Int(dead)
        } catch {
            mdb_env_close(environment)
            directoryLock.release()
            if !lockExisted { unlink(lockFile) }
            if !dataExisted { unlink(dataFile) }
            throw error
        }
        handle = environment
        damageNote = Locked(KnownDamage.read(directory: directory.path))
        self.directoryLock = directoryLock
        createdLockFile = !lockExisted
        mappedPages.add(self)
        releaseMappedPages()
    }

    deinit {
        mappedPages.remove(self)
        if let handle { mdb_env_close(handle) }
        directoryLock.release()
    }

    /// The shared lock on the directory, held from before LMDB's open until after its close.
    private let directoryLock: DirectoryLock

    /// Makes this environment the directory's only user, in this process and every other Coffer
    /// process (``DirectoryLock``), until it closes; openers meanwhile wait in their open.
    ///
    /// - Returns: Whether it now is; when not, close it.
    package func takeSoleAccess() -> Bool { directoryLock.makeExclusive() }

    /// Runs `body` with LMDB's handle, which stays valid meanwhile (no close, no resize).
    ///
    /// - Throws: ``LMDBError/Code/closed`` after ``close()``, or what `body` throws.
    func withHandle<R>(_ body: (OpaquePointer) throws(LMDBError) -> R) throws(LMDBError) -> R {
        let result: Result<R, LMDBError> = gate.shared {
            guard let handle else { return .failure(LMDBError(.closed, operation: "using the environment")) }
            do throws(LMDBError) { return .success(try body(handle)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Bytes free for this user on the file system holding the environment (`statvfs`), or `nil` when
    /// it cannot be asked.
    package var availableBytes: Int64? {
        var status = statvfs()
        guard statvfs(directory.path, &status) == 0 else { return nil }
        let blocks = geteuid() == 0 ? status.f_bfree : status.f_bavail
        return Int64(blocks) * Int64(status.f_frsize)
    }

    /// Closes the environment after any transactions in progress finish (`mdb_env_close`). Later
    /// transactions fail with ``LMDBError/Code/closed``. Closing twice is harmless.
    package func close() {
        mappedPages.remove(self)
        gate.exclusive {
            if let handle { mdb_env_close(handle) }
            handle = nil
            directoryLock.release()
        }
    }

    /// Closes the environment and removes the lock file if opening created it: for a caller that opened
    /// a directory, found it is not what it expected, and must leave it as it was.
    package func closeAndRemoveCreatedFiles() {
        close()
        if createdLockFile { unlink(directory.appendingPathComponent("lock.mdb").path) }
    }

    /// Whether ``close()`` has been called.
    package var isClosed: Bool { gate.shared { handle == nil } }

    /// The current map size in bytes (`mdb_env_info`).
    package var mapSize: Int {
        gate.shared {
            guard let handle else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return info.me_mapsize
        }
    }

    /// Drops this process's mappings of the map's pages (`madvise(MADV_DONTNEED)`); the data stays in
    /// the kernel's page cache and the next access maps it again.
    ///
    /// Every page a transaction touches stays mapped, and counts as resident memory, until the map is
    /// unmapped; on Linux 6 a fault maps the whole folio around the page, up to 2 MiB. A blob
    /// streaming through a large vault would so map far more than it holds, although those pages are
    /// clean page cache, not memory the process owns. The blob pipeline drops them every few scattered
    /// lookups (``noteScatteredTouch()``), so resident memory reflects what it really holds. Safe
    /// while other threads read the map: the map is read-only and file-backed, so a dropped page simply
    /// faults in again.
    package func releaseMappedPages() {
        gate.shared { releaseMappedPagesUnguarded() }
        mappedPages.noteDropped()
    }

    /// Drops the mappings, unless a resize or close holds the gate (or waits for it): another
    /// environment's drop of every map (``MappedPageLedger``) must not wait on this one.
    package func releaseMappedPagesIfIdle() {
        _ = gate.sharedIfFree { releaseMappedPagesUnguarded() }
    }

    /// Drops the mappings; runs under the shared side of the gate.
    private func releaseMappedPagesUnguarded() {
        guard let handle else { return }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        let region = mapRegion.withLock { cached -> (start: UInt, length: Int, mapSize: Int)? in
            if let current = cached, current.mapSize == info.me_mapsize { return current }
            cached = findMap().map { ($0.start, $0.length, info.me_mapsize) }
            return cached
        }
        guard let region, let address = UnsafeMutableRawPointer(bitPattern: region.start) else { return }
        // Advisory: a failure leaves the mappings in place, which is harmless.
        _ = madvise(address, region.length, MADV_DONTNEED)
        mapDrops.add(1, ordering: .relaxed)
    }

    /// How many times this environment's map pages have been dropped since it opened (once at open).
    package var mapDropCount: Int { mapDrops.load(ordering: .relaxed) }

    /// A watch over the mapped pages for a write transaction, if the used map is larger than the
    /// smallest budget (``MappedPageWatch``), checking against the budget the transaction's work
    /// asked for so far (`budget`); runs under the shared side of the gate.
    private func watchMappedPages(_ handle: OpaquePointer, budget: Transaction.BudgetInUse) -> MappedPageWatch? {
        guard mappedPages.canMeasure, usedMapExceeds(.readOnce, handle) else { return nil }
        return MappedPageWatch { [weak self] in
            guard let self else { return }
            gate.shared { releaseMappedPagesOverBudget(budget.current) }
        }
    }

    /// Whether the used part of the map (up to its last page) is larger than `budget`.
    private func usedMapExceeds(_ budget: MappedPageBudget, _ handle: OpaquePointer) -> Bool {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return (info.me_last_pgno + 1) * pageSize > budget.bytes
    }

    /// Drops every open environment's mappings if lookups have mapped more than `budget` of the
    /// process's maps (or, where that cannot be read, as without procfs, if this used map is larger
    /// than the budget); runs under the shared side of the gate.
    private func releaseMappedPagesOverBudget(_ budget: MappedPageBudget) {
        // A map this small can be mapped whole: no system call.
        guard let handle, usedMapExceeds(budget, handle), mappedPages.isOverBudget(budget) else { return }
        mappedPages.dropAll(current: self) { releaseMappedPagesUnguarded() }
    }

    /// The mapping of data.mdb, found by its inode in /proc/self/maps: LMDB does not expose the map's
    /// address (`me_mapaddr` is set only with MDB_FIXEDMAP). Also asks the kernel not to map it with
    /// huge pages (2 MiB page-table entries), which cannot be dropped piecemeal.
    private func findMap() -> (start: UInt, length: Int)? {
        var file = stat()
        guard stat(directory.appendingPathComponent("data.mdb").path, &file) == 0,
            let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        else { return nil }
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, UInt64(fields[4]) == UInt64(file.st_ino) else { continue }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                let address = UnsafeMutableRawPointer(bitPattern: start)
            else { continue }
            _ = madvise(address, Int(end - start), MADV_NOHUGEPAGE)
            return (start, Int(end - start))
        }
        return nil
    }

    /// Notes one operation at a random place in a large table (a chunk's reference count, a chunk
    /// record), from inside a transaction. Every ``MappedPageBudget/checkInterval`` such operations,
    /// in any thread, unless the used map is within the budget, the environment reads how many file
    /// pages the process has mapped (one `pread` of `/proc/self/statm`), and drops the map's pages
    /// (see ``releaseMappedPages()``) once lookups have mapped more than the budget since the last
    /// drop.
    ///
    /// On this kernel a fault maps a whole (up to 2 MiB) folio of the file, so one lookup in a large
    /// vault can map several megabytes and a thousand may map almost nothing new (the same tree
    /// pages again): measuring what is mapped bounds it whatever the lookups do, and spares a read
    /// whose pages fit the budget (a restore of a small vault, a keychain in a small vault) both
    /// the drops and the faults that map the same pages again after each.
    ///
    /// - Parameter budget: What the touched pages are: read once (the default) or read again and
    ///   again, which may keep more mapped.
    package func noteScatteredTouch(_ budget: MappedPageBudget = .readOnce) {
        let total = scatteredTouches.add(1, ordering: .relaxed).newValue
        if total % budget.checkInterval == 0 { releaseMappedPagesOverBudget(budget) }
    }

    private let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Reader slots of dead processes cleared since opening: at open, every
    /// ``staleReaderCheckInterval`` write transactions, and whenever the reader table was full.
    package var staleReadersClearedSinceOpen: Int {
        staleReadersCleared + laterStaleReaders.load(ordering: .relaxed)
    }

    /// One write transaction in this many clears the reader slots of dead processes first.
    ///
    /// A process killed inside a read transaction leaves its slot claiming that snapshot, and LMDB
    /// reuses no page freed after the oldest snapshot any slot claims: without the check, a writer
    /// opened before the crash would grow the file by everything it ever overwrote. The check
    /// (`mdb_reader_check`) costs a few microseconds, far below a commit.
    package static let staleReaderCheckInterval = 16

    /// Clears the reader slots of processes that have died (`mdb_reader_check`), counting them.
    private func clearStaleReaders() {
        gate.shared {
            if let handle { clearStaleReadersUnguarded(handle) }
        }
    }

    /// ``clearStaleReaders()`` for a caller already inside the gate; returns how many were cleared.
    @discardableResult
    private func clearStaleReadersUnguarded(_ handle: OpaquePointer) -> Int {
        var dead: Int32 = 0
        guard mdb_reader_check(handle, &dead) == MDB_SUCCESS, dead > 0 else { return 0 }
        laterStaleReaders.add(Int(dead), ordering: .relaxed)
        return Int(dead)
    }

    /// How many times this process has grown the map.
    package var growths: Int { growthCount.load(ordering: .relaxed) }

    /// Opens named tables, creating missing ones when `create` is true (in a write transaction) or
    /// failing with ``LMDBError/Code/notFound`` naming the first missing table otherwise.
    ///
    /// The corresponding C function is `mdb_dbi_open`.
    package func openTables(_ names: [String], create: Bool) throws -> [Table] {
        let body: (Transaction) throws -> [Table] = { txn in
            try names.map { name in
                var dbi: MDB_dbi = 0
                let flags = create ? UInt32(MDB_CREATE) : 0
                try LMDB.check(mdb_dbi_open(txn.pointer, name, flags, &dbi), "mdb_dbi_open(\(name))")
                return Table(name: name, handle: dbi)
            }
        }
        // Handles opened in a transaction survive only if it commits, so even the read-only path
        // commits rather than aborts.
        let tables = try create ? write(body) : transaction(readOnly: true, commit: true, body)
        openedTables.withLock { $0.formUnion(tables.map(\.handle)) }
        return tables
    }

    /// Runs `body` in a read-only transaction (a consistent snapshot), then ends it.
    ///
    /// The corresponding C functions are `mdb_txn_begin` with `MDB_RDONLY` and `mdb_txn_abort`.
    @discardableResult
    package func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        try transaction(readOnly: true, commit: false, body)
    }

    /// Runs `body` in a write transaction and commits it when `body` returns; aborts it when `body`
    /// throws, and rethrows. If the map fills, the transaction is aborted, the map grown, and `body`
    /// run again from the start.
    ///
    /// The corresponding C functions are `mdb_txn_begin`, `mdb_txn_commit` and `mdb_txn_abort`.
    ///
    /// - Parameters:
    ///   - durability: Whether the commit waits until the transaction would survive a crash
    ///     (``CommitDurability/immediate``, the default) or only until its pages are on disk.
    ///   - body: The transaction's work; it may run more than once.
    @discardableResult
    package func write<R>(
        durability: CommitDurability = .immediate,
        _ body: (Transaction) throws -> R
    ) throws -> R {
        let writeNumber = writesBegun.add(1, ordering: .relaxed).newValue
        if writeNumber % Self.staleReaderCheckInterval == 0 { clearStaleReaders() }
        while true {
            let growthsBefore = growths
            do {
                let result = try transaction(readOnly: false, commit: true, durability: durability, body)
                if spaceReserveDue(writeNumber: writeNumber) { makeSpaceReserve() }
                return result
            } catch let error as Transaction.MapFull {
                try grow(from: growthsBefore, cause: error.underlying)
            }
        }
    }

    /// How many writes go by between checks that the space reserve is there and sized for the data
    /// file's trees, which can grow into free pages without the file growing.
    private static let spaceReserveCheckInterval = 1024

    /// Whether the space reserve is due to be made or sized again after a commit: after this
    /// instance's first, once the data file has grown by an eighth (or 64 pages) since the last
    /// check, and every ``spaceReserveCheckInterval`` writes. `mdb_env_info` is all it costs.
    private func spaceReserveDue(writeNumber: Int) -> Bool {
        let checkedAt = spaceReserveCheckedAt.load(ordering: .relaxed)
        guard checkedAt > 0, writeNumber % Self.spaceReserveCheckInterval != 0 else { return true }
        return pagesInUse >= checkedAt + max(64, checkedAt / 8)
    }

    /// The data file's pages in use (`mdb_env_info`'s last page number, plus one), or 0 once closed.
    private var pagesInUse: Int {
        gate.shared {
            guard let handle else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return info.me_last_pgno + 1
        }
    }

    /// Makes the space reserve, or resizes it, for the data file as it is now
    /// (``spaceReserveSize()``). Does nothing when the size cannot be read.
    private func makeSpaceReserve() {
        guard let (size, pages) = try? spaceReserveSize() else { return }
        spaceReserveCheckedAt.store(pages, ordering: .relaxed)
        spaceReserve.make(size: size)
    }

    /// The size of space reserve the data file needs as it is now
    /// (``SpaceReserve/size(treePages:dataPages:pageSize:)``), from the branch and leaf pages of the
    /// free list, the main table and every table this instance opened, and the pages in use, which it
    /// also returns.
    ///
    /// The corresponding C functions are `mdb_stat` and `mdb_env_info`.
    package func spaceReserveSize() throws -> (bytes: Int, pagesInUse: Int) {
        let tables = openedTables.withLock { $0 }
        return try read { txn in
            var treePages = 0
            var pageSize = 0
            // 0 and 1 are LMDB's free list (FREE_DBI) and main table (MAIN_DBI).
            for handle in [0, 1] + tables.sorted() {
                var stat = MDB_stat()
                try LMDB.check(mdb_stat(txn.pointer, handle, &stat), "mdb_stat")
                treePages += stat.ms_branch_pages + stat.ms_leaf_pages
                pageSize = Int(stat.ms_psize)
            }
            var info = MDB_envinfo()
            try LMDB.check(mdb_env_info(mdb_txn_env(txn.pointer), &info), "mdb_env_info")
            let pages = info.me_last_pgno + 1
            return (SpaceReserve.size(treePages: treePages, dataPages: pages, pageSize: pageSize), pages)
        }
    }

    /// Runs `body` in a write transaction that frees space (releasing a failed write's chunks,
    /// deleting): like ``write(_:)``, but when the disk is too full for even this transaction, the
    /// space reserve (``SpaceReserve``) is deleted to make room and the transaction run again; the
    /// reserve is made again afterwards, if there is room.
    @discardableResult
    package func writeFreeingSpace<R>(_ body: (Transaction) throws -> R) throws -> R {
        do {
            return try write(body)
        } catch let error as LMDBError where error.code == .noSpace {
            guard spaceReserve.release() != nil else { throw error }
            // Made again after the retry whatever its outcome, where there is room (a deletion frees
            // pages inside data.mdb, not on the file system, so often there is not).
            defer { makeSpaceReserve() }
            return try write { txn in
                txn.sparesSpace = true
                return try body(txn)
            }
        }
    }

    /// Begins, runs and ends one transaction under the shared side of the gate.
    private func transaction<R>(
        readOnly: Bool,
        commit: Bool,
        durability: CommitDurability = .immediate,
        _ body: (Transaction) throws -> R
    ) throws -> R {
        while true {
            let outcome: Result<R, any Error>? = gate.shared {
                guard let handle else {
                    return .failure(LMDBError(.closed, operation: "mdb_txn_begin"))
                }
                var pointer: OpaquePointer?
                var begun = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &pointer)
                if begun == MDB_READERS_FULL, clearStaleReadersUnguarded(handle) > 0 {
                    // Slots held by crashed processes were what filled the table: retry once.
                    begun = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &pointer)
                }
                if begun == MDB_MAP_RESIZED { return nil }
                do {
                    try LMDB.check(begun, "mdb_txn_begin")
                } catch {
                    return .failure(error)
                }
                let txn = Transaction(pointer: pointer!, isReadOnly: readOnly, environment: self)
                let watch = readOnly ? nil : watchMappedPages(handle, budget: txn.budgetInUse)
                defer { watch?.stop() }
                return Result {
                    try txn.run(body, commit: commit) { pointer, changed in
                        readOnly ? mdb_txn_commit(pointer) : commitWrite(pointer, handle, durability, changed: changed)
                    }
                }
            }
            if let outcome {
                do {
                    return try outcome.get()
                } catch let error as LMDBError where error.code == .ioError && fileSystemIsFull() {
                    throw LMDBError(.noSpace, operation: error.operation)
                }
            }
            // Another process grew the map: adopt its size (set_mapsize 0) with no transaction open.
            try gate.exclusive {
                if let handle { try LMDB.check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize") }
            }
        }
    }

    /// Commits a write transaction under ``commitLock``, with the meta page's flush left to the next
    /// commit for ``CommitDurability/untilNextCommit``. A transaction that `changed` something and
    /// committed renews the note that the trees are sound (``CheckedTrees``), when this environment
    /// found them so: LMDB made the new state from a sound one. Runs under the shared side of the gate.
    private func commitWrite(
        _ pointer: OpaquePointer,
        _ handle: OpaquePointer,
        _ durability: CommitDurability,
        changed: Bool
    ) -> Int32 {
        commitLock.withLock { _ in
            let transactionID = UInt64(mdb_txn_id(pointer))
            guard durability == .untilNextCommit else {
                let status = mdb_txn_commit(pointer)
                if status == MDB_SUCCESS { noteCommit(transactionID, handle, changed: changed) }
                return status
            }
            // No commit record: the meta page is not flushed yet, and a record that reached the disk
            // before it would make the vault look rolled back after a crash. (The trees' note may
            // name it: after a crash the file opens an older state, which the note does not match.)
            let deferMetaSync = UInt32(MDB_NOMETASYNC)
            guard mdb_env_set_flags(handle, deferMetaSync, 1) == MDB_SUCCESS else { return mdb_txn_commit(pointer) }
            let status = mdb_txn_commit(pointer)
            mdb_env_set_flags(handle, deferMetaSync, 0)
            if status == MDB_SUCCESS, changed { renewCheckedTrees(transactionID) }
            return status
        }
    }

    /// Renews the note that the trees are sound for the state transaction `transactionID` just
    /// committed, if this environment found them sound before its first change.
    private func renewCheckedTrees(_ transactionID: UInt64) {
        guard treesVouched.load(ordering: .relaxed) else { return }
        CheckedTrees(directory: directory.path, transactionID: transactionID)?.write(directory: directory.path)
    }

    /// Copies the meta page a flushed commit wrote into the commit record (``CommitRecord``), after
    /// the commit returned, and renews the trees' note. A commit that changed nothing wrote no meta
    /// page, and the record is left.
    private func noteCommit(_ transactionID: UInt64, _ handle: OpaquePointer, changed: Bool) {
        if changed { renewCheckedTrees(transactionID) }
        if recordTarget == nil {
            var stat = MDB_stat()
            guard mdb_env_stat(handle, &stat) == MDB_SUCCESS else { return }
            recordTarget = (directory.appendingPathComponent("data.mdb").path, Int(stat.ms_psize))
        }
        guard let (dataFile, pageSize) = recordTarget else { return }
        CommitRecord.note(transactionID: transactionID, dataFile: dataFile, pageSize: pageSize)
    }

    /// Whether the file system holding the environment has (almost) no space left. LMDB turns a
    /// write the disk completed only in part into `EIO`, which is what a full disk gives: a commit
    /// failing with `EIO` on a full file system is reported as a full disk, which it is.
    private func fileSystemIsFull() -> Bool {
        var status = statvfs()
        guard statvfs(directory.path, &status) == 0 else { return false }
        let blocks = geteuid() == 0 ? status.f_bfree : status.f_bavail
        return UInt64(blocks) * UInt64(status.f_frsize) < 8 << 20
    }

    /// Grows the map after a write hit `MDB_MAP_FULL`, unless another thread already grew it since.
    private func grow(from growthsBefore: Int, cause: LMDBError) throws {
        try gate.exclusive {
            guard let handle else { throw LMDBError(.closed, operation: "mdb_env_set_mapsize") }
            guard growths == growthsBefore else { return }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            let current = info.me_mapsize
            guard current < options.maximumMapSize else { throw cause }
            // Double while small, then grow by a fixed step: map size is address space, not disk.
            let step = min(max(current, 1 << 20), 1 << 30)
            let next = min(current + step, options.maximumMapSize)
            try LMDB.check(mdb_env_set_mapsize(handle, next), "mdb_env_set_mapsize")
            growthCount.add(1, ordering: .relaxed)
        }
    }
}

/// LMDB's assertion handler (`mdb_env_set_assert`): LMDB asserts when a page breaks its rules (a leaf
/// where a branch belongs: `IS_LEAF(mp)`), which only a damaged data file does, and then calls
/// `abort()`. Nothing can go on after that: LMDB's cursor or transaction is half-way through an
/// operation, and its state is not to be trusted. So this runs first and ends the process itself: it
/// notes the damage (``KnownDamage``, so later writes refuse), says on standard error what happened
/// and what to do, and exits with status 1 instead of `SIGABRT` (134). What the process had not
/// committed is not in the file (LMDB writes a state's meta page last), and nothing but the note is
/// written on the way out.
private let lmdbAssertion: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Void = { environment, message in
    var path: UnsafePointer<CChar>?
    if let environment { _ = mdb_env_get_path(environment, &path) }
    let directory = path.map { String(cString: $0) }
    let what = "LMDB stopped on a page that breaks its rules (\(message.map { String(cString: $0) } ?? "an assertion"))"
    let noted = directory.map { KnownDamage.record(what, directory: $0) } ?? false
    let file = directory.map { $0 + "/data.mdb" } ?? "data.mdb"
    let text =
        "coffer: error: the vault's data file \(file) is damaged: \(what). The command stopped there: nothing it had not committed is in the vault"
        + (noted ? ", and writes are refused until \(InterfaceName.verify) finds the file sound" : "")
        + ". \(InterfaceName.verify) shows the damage; damaged tree pages cannot be mended in place (\(InterfaceName.repair) mends meta pages only): restore the vault from a complete copy\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    _exit(1)
}
