internal import Glibc

/// An independent check of an LMDB data file's own structure, modelled on libmdbx's `mdbx_chk`: both
/// meta pages, the file's length, and (``walk(snapshotID:)``) every B-tree and the free list, each
/// page reachable exactly once and within bounds.
///
/// It reads the file with `pread`, never through the memory map, so a truncated file is reported
/// instead of killing the process with `SIGBUS` when LMDB touches a page past its end. The layout is
/// LMDB 0.9's on a 64-bit little-endian machine (docs/FORMAT.md, "The data file"): a page header
/// (page number 8, padding 2, flags 2, lower 2, upper 2), meta pages 0 and 1 holding the magic, the
/// version, the free and main trees' descriptors, the last page number and the transaction id.
package struct DataFileCheck {
    /// What one meta page says.
    package struct Meta: Sendable, Equatable {
        package let index: Int
        package let transactionID: UInt64
        package let lastPage: UInt64
        package let pageSize: Int
        /// The free list's and the main tree's roots (`UInt64.max` for an empty tree).
        package let freeRoot: UInt64
        package let mainRoot: UInt64
        /// The free list's and the main tree's depths (levels; 0 where not known).
        package var freeDepth = 0
        package var mainDepth = 0
    }

    /// One thing wrong with the file, and what to do about it.
    package struct Damage: Sendable, Equatable, CustomStringConvertible {
        /// What a repair can do about it.
        package enum Repair: Sendable, Equatable {
            /// Nothing in place: restore from a copy.
            case none
            /// Meta page `index` is not a meta page: rebuild its header, or copy the other.
            case metaHeader(index: Int)
            /// Meta page `index`'s transaction id differs from its tree's stamp: put the stamp back.
            case transactionID(index: Int, stamp: UInt64)
            /// Meta page `index`'s last page number is wrong: set it to the last page in use.
            case lastPage(index: Int, lastPage: UInt64)
            /// Meta page `index` is to be rewritten from the commit record, whose state is intact.
            case fromRecord(index: Int, record: CommitRecord)
            /// Transaction `lost`, the last one committed, cannot be recovered: only going back to the
            /// state LMDB opens, transaction `current`, can, and that loses what `lost` wrote.
            case rollback(lost: UInt64, current: UInt64)
        }

        package let part: String
        package let problem: String
        package var repair: Repair = .none
        package var description: String { "\(part): \(problem)" }
    }

    package static let magic: UInt32 = 0xBEEF_C0DE
    package static let noPage = UInt64.max
    package static let headerSize = 16
    private static let metaFlag: UInt16 = 0x08
    private static let branchFlag: UInt16 = 0x01
    private static let leafFlag: UInt16 = 0x02
    private static let overflowFlag: UInt16 = 0x04

    /// How many pages a value of `size` bytes stored out of its node takes: it starts after the
    /// first page's header (LMDB's `OVPAGES`). A free-list record of 510 page ids (4,088 bytes)
    /// takes two pages, not one; reading one made the check report a sound free list as damaged.
    package static func overflowPages(size: Int, pageSize: Int) -> UInt64 {
        UInt64((headerSize + size + pageSize - 1) / pageSize)
    }
    private static let bigData: UInt16 = 0x01
    private static let subDatabase: UInt16 = 0x02
    private static let duplicates: UInt16 = 0x04

    package let path: String
    package let fileSize: UInt64
    /// The meta pages that are valid, by index.
    package let metas: [Meta]
    /// What is wrong with the meta pages and the file's length.
    package private(set) var damage: [Damage] = []
    private let descriptor: Int32

    /// The meta page LMDB opens: the valid one with the larger transaction id.
    package var current: Meta? { metas.max { $0.transactionID < $1.transactionID } }

    /// The commit record the meta pages were compared with (``CommitRecord``), if one was asked
    /// for.
    package let recordPath: String?

    /// Reads the meta pages of the data file at `path`, and compares them with the commit record at
    /// `recordPath` (``CommitRecord``) if given: a state older than the one last committed is damage.
    ///
    /// - Returns: `nil` when the file cannot be opened, or holds neither meta page (it is not an LMDB
    ///   file at all, which opening reports).
    package init?(path: String, recordPath: String? = nil) {
        self.path = path
        self.recordPath = recordPath
        // Read before the meta pages: a record names only states committed before it was written.
        let records = recordPath.map(CommitRecord.read(at:)) ?? []
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        fstat(descriptor, &status)
        fileSize = UInt64(max(status.st_size, 0))
        var metas: [Meta] = []
        var damage: [Damage] = []
        // Meta 0 gives the page size; meta 1 sits one page in.
        var pageSize = 4096
        for index in 0..<2 {
            let page = Self.read(descriptor, at: UInt64(index * pageSize), count: 152)
            switch Self.meta(page, index: index) {
            case .valid(let meta):
                metas.append(meta)
                if index == 0 { pageSize = meta.pageSize }
            case .damaged(let problem):
                damage.append(Damage(part: "meta page \(index)", problem: problem, repair: .metaHeader(index: index)))
            }
        }
        if metas.isEmpty {
            Glibc.close(descriptor)
            return nil
        }
        self.metas = metas
        if let current = metas.max(by: { $0.transactionID < $1.transactionID }) {
            // The file may end before the last page when the pages past its end are free and were never
            // written; it is cut short only if a page of a tree lies past the end.
            let needed = (current.lastPage + 1) * UInt64(current.pageSize)
            // Cheap first: when every page past the end is listed as free (the common case), no tree
            // can reach there and the trees need not be walked at all.
            let beyondEnd = fileSize < needed ? current.lastPage + 1 - fileSize / UInt64(current.pageSize) : 0
            var freeOnly = TreeWalk(check: self, meta: current, light: true)
            if beyondEnd > 0 {
                freeOnly.tree(
                    root: current.freeRoot,
                    depth: current.freeDepth,
                    part: "the free list",
                    holdsTables: false,
                    isFreeList: true
                )
            }
            if beyondEnd > 0, freeOnly.freeBeyondEnd < beyondEnd {
                var walk = TreeWalk(check: self, meta: current, light: true)
                walk.mainTreeAndFreeList()
                let reached = (walk.highest + 1) * UInt64(current.pageSize)
                let beyond = beyondEnd
                if reached > fileSize {
                    damage.append(
                        Damage(
                            part: "data.mdb",
                            problem:
                                "the file is \(fileSize) bytes, but its current state (transaction \(current.transactionID)) uses \(reached): it was cut short (an interrupted copy or a full disk)"
                        )
                    )
                } else if walk.freeBeyondEnd < beyond {
                    damage.append(
                        Damage(
                            part: "meta page \(current.index)",
                            problem:
                                "its last page number (\(current.lastPage)) lies \(beyond) pages past the file's end, and neither a tree nor the free list accounts for \(beyond - walk.freeBeyondEnd) of them: the number was altered",
                            repair: .lastPage(index: current.index, lastPage: max(walk.highest, walk.highestFree))
                        )
                    )
                }
            }
        }
        // Stamps tell an altered meta page from a genuine one, within limits: once a newer state is
        // committed the older state's pages may be reused (its tree can hold anything), and a Coffer
        // from before stamps writes without updating the stamp (it stays behind, on both pages). So
        // only this is damage: the page LMDB opens points at an older stamped state than the other
        // page consistently does, or at no stamped state while the other page's state is stamped as
        // its own.
        var stampDamage = false
        if let current = metas.max(by: { $0.transactionID < $1.transactionID }),
            let other = metas.first(where: { $0.index != current.index })
        {
            let currentStamp = Self.stamp(in: current, descriptor: descriptor)
            let otherStamp = Self.stamp(in: other, descriptor: descriptor)
            // The other page's stamp counts only if it is consistent with that page (a failed commit
            // may have rewritten its reused pages with a later stamp).
            let otherConsistent = otherStamp.map { $0 <= other.transactionID } ?? false
            if currentStamp == current.transactionID {
                // The page LMDB opens is the state its tree says: sound.
            } else if let currentStamp, let otherStamp, otherConsistent, otherStamp > currentStamp {
                damage.append(
                    Damage(
                        part: "meta page \(current.index)",
                        problem:
                            "it claims transaction \(current.transactionID), but the state it points to was written by transaction \(currentStamp), older than meta page \(other.index)'s: the page was altered, and LMDB would open an older state as the current one",
                        repair: .transactionID(index: current.index, stamp: currentStamp)
                    )
                )
                stampDamage = true
            } else if currentStamp == nil, otherStamp == other.transactionID {
                // Putting its id just below the other's makes the intact page current.
                damage.append(
                    Damage(
                        part: "meta page \(current.index)",
                        problem:
                            "it claims transaction \(current.transactionID), newer than meta page \(other.index)'s \(other.transactionID), but points at no state Coffer wrote: the page was altered",
                        repair: .transactionID(index: current.index, stamp: other.transactionID - 1)
                    )
                )
                stampDamage = true
            }
        }
        if metas.count == 2, !stampDamage {
            let (older, newer) = (metas[0].transactionID, metas[1].transactionID)
            let gap = older > newer ? older - newer : newer - older
            if gap > 1 {
                damage.append(
                    Damage(
                        part: "meta pages",
                        problem:
                            "their transaction ids \(older) and \(newer) are not consecutive, as LMDB writes them: one was altered, and LMDB may open an older state as the current one"
                    )
                )
            }
        }
        if let current = metas.max(by: { $0.transactionID < $1.transactionID }) {
            damage = Self.compare(current, with: records, damage: damage, descriptor: descriptor, fileSize: fileSize)
        }
        self.damage = damage
        // Cheap enough for every open: the main tree (a page or two) and the root page of each table
        // and of the free list, each checked before LMDB is let near it.
        if damage.isEmpty, let current {
            var roots = TreeWalk(check: self, meta: current, shallow: true)
            roots.mainTreeAndFreeList()
            // Damaged roots under a meta page whose roots differ from the committed ones: the meta
            // page was altered (a flipped free-list root, say), and the record is the repair.
            self.damage =
                roots.damage.isEmpty
                ? []
                : Self.compare(
                    current,
                    with: records,
                    damage: roots.damage,
                    descriptor: descriptor,
                    fileSize: fileSize,
                    treesSound: false
                )
        }
    }

    /// The damage found once the meta page LMDB opens (`current`) is compared with the commit
    /// record: an older state than the one last committed is damage (a rollback, or a newest meta
    /// page made to look older); at the same transaction, roots other than the committed ones are
    /// damage unless the tree they lead to carries that transaction's stamp (a compaction by a
    /// Coffer that wrote no record). The record's state, when its tree is intact, is the repair.
    private static func compare(
        _ current: Meta,
        with records: [CommitRecord],
        damage: [Damage],
        descriptor: Int32,
        fileSize: UInt64,
        treesSound: Bool = true
    ) -> [Damage] {
        guard let newest = records.map(\.transactionID).max() else { return damage }
        let candidates = records.filter { $0.transactionID == newest }
        let intact = candidates.first { record in
            let meta = Meta(
                index: Int(newest & 1),
                transactionID: newest,
                lastPage: record.lastPage,
                pageSize: record.pageSize,
                freeRoot: record.freeRoot,
                mainRoot: record.mainRoot
            )
            return record.pageSize == current.pageSize && record.mainRoot < fileSize / UInt64(current.pageSize)
                && stamp(in: meta, descriptor: descriptor) == newest
        }
        let others = damage.filter { !$0.part.hasPrefix("meta page") }
        if newest > current.transactionID {
            let problem =
                "LMDB would open transaction \(current.transactionID), but transaction \(newest) was committed after it (\(CommitRecord.fileName) says so): the vault's files were rolled back, or the newest meta page is damaged"
            if let intact {
                return others + [
                    Damage(
                        part: "data.mdb",
                        problem: problem + "; transaction \(newest)'s state is intact in the file",
                        repair: .fromRecord(index: Int(newest & 1), record: intact)
                    )
                ]
            }
            return others + [
                Damage(
                    part: "data.mdb",
                    problem: problem,
                    repair: .rollback(lost: newest, current: current.transactionID)
                )
            ]
        }
        guard newest == current.transactionID, let intact,
            !candidates.contains(where: {
                $0.mainRoot == current.mainRoot && $0.freeRoot == current.freeRoot && $0.lastPage == current.lastPage
            }),
            !treesSound || stamp(in: current, descriptor: descriptor) != current.transactionID
        else { return damage }
        let differences = [
            ("the main tree's root", current.mainRoot, intact.mainRoot),
            ("the free list's root", current.freeRoot, intact.freeRoot),
            ("the last page", current.lastPage, intact.lastPage),
        ]
        .filter { $0.1 != $0.2 }
        .map { "\($0.0) is page \($0.1) where transaction \(newest) committed page \($0.2)" }
        return (treesSound ? others : []) + [
            Damage(
                part: "meta page \(current.index)",
                problem:
                    "\(differences.joined(separator: ", ")) (as \(CommitRecord.fileName) says): the page was altered",
                repair: .fromRecord(index: current.index, record: intact)
            )
        ]
    }

    /// The transaction id the state `meta` points to recorded in its main tree
    /// (``Transaction/stampKey``), or `nil` where there is none (a vault last written by a Coffer
    /// without stamps) or the tree cannot be read.
    package static func stamp(in meta: Meta, descriptor: Int32) -> UInt64? {
        var number = meta.mainRoot
        for _ in 0..<64 {
            guard number != noPage, number <= meta.lastPage else { return nil }
            let page = read(descriptor, at: number * UInt64(meta.pageSize), count: meta.pageSize)
            guard page.count == meta.pageSize else { return nil }
            let flags = integer(page, 10, as: UInt16.self)
            let lower = Int(integer(page, 12, as: UInt16.self))
            guard lower >= headerSize, lower <= meta.pageSize else { return nil }
            var child: UInt64?
            for slot in 0..<((lower - headerSize) / 2) {
                let offset = Int(integer(page, headerSize + slot * 2, as: UInt16.self))
                guard offset + 8 <= meta.pageSize else { return nil }
                let keySize = Int(integer(page, offset + 6, as: UInt16.self))
                guard offset + 8 + keySize <= meta.pageSize else { return nil }
                let key = page[(offset + 8)..<(offset + 8 + keySize)]
                let low = UInt64(integer(page, offset, as: UInt16.self))
                let high = UInt64(integer(page, offset + 2, as: UInt16.self))
                if flags & branchFlag != 0 {
                    // The first node's key is empty; descend into the last node not after the key.
                    if slot == 0 || !Transaction.stampKey.lexicographicallyPrecedes(key) {
                        child = low | high << 16 | UInt64(integer(page, offset + 4, as: UInt16.self)) << 32
                    }
                } else if key.elementsEqual(Transaction.stampKey) {
                    guard low | high << 16 == 8, offset + 16 + keySize <= meta.pageSize else { return nil }
                    return (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(page[offset + 8 + keySize + $1]) }
                }
            }
            guard flags & branchFlag != 0, let next = child else { return nil }
            number = next
        }
        return nil
    }

    /// What ``repairMetaPage(acceptingLoss:)`` did or would do.
    package enum RepairOutcome: Sendable, Equatable {
        /// The page was rewritten; what was done (and, when a loss was accepted, what was lost).
        case repaired(String)
        /// Only a repair that loses a committed transaction is possible, and it was not accepted:
        /// what would be lost. Nothing was changed.
        case wouldLose(String)
        /// Nothing can be repaired safely (the reason is in ``damage``). Nothing was changed.
        case impossible
    }

    /// Rewrites the damaged meta page from what can be trusted, when it is the only damage: from the
    /// commit record when it names a newer or different state whose tree is intact (nothing lost); a
    /// page that is not a meta page gets its header back if the rest agrees with its tree's stamp,
    /// else becomes a copy of the intact one; a page whose transaction id differs from its tree's
    /// stamp gets the stamp back; a last page number no tree or free list accounts for becomes the
    /// last page in use. A repair that goes back to an older state than one committed (losing the
    /// newest transaction) is done only with `acceptingLoss`. Run it with no other process using the
    /// vault. The page is written with `pwrite` and flushed, then the commit record is brought up to
    /// the state the file now opens.
    ///
    /// - Returns: What was done, or what would be lost, or that nothing can be done.
    package func repairMetaPage(acceptingLoss: Bool) -> RepairOutcome {
        guard damage.count == 1, let repair = damage.first?.repair, let pageSize = metas.first?.pageSize else {
            return .impossible
        }
        let index: Int
        var action: String
        var loss: String?
        var page: [UInt8]
        switch repair {
        case .none:
            return .impossible
        case .fromRecord(let damaged, let record):
            index = damaged
            page = Self.read(descriptor, at: UInt64(index * pageSize), count: pageSize)
            guard page.count == pageSize else { return .impossible }
            withUnsafeBytes(of: UInt64(index).littleEndian) { page.replaceSubrange(0..<8, with: $0) }
            page[10] |= UInt8(Self.metaFlag)
            page.replaceSubrange(CommitRecord.metaRange, with: record.meta)
            action =
                "meta page \(index) was rewritten from \(CommitRecord.fileName): transaction \(record.transactionID), the last one committed, is current again; nothing was lost"
        case .rollback(let lost, let current):
            guard acceptingLoss else {
                return .wouldLose(
                    "transaction \(lost), the last one committed, cannot be recovered (neither its meta page nor \(CommitRecord.fileName) leads to an intact tree); the newest state that can be recovered is transaction \(current), and going back to it loses what transaction \(lost) wrote (the last write before the damage)"
                )
            }
            guard let meta = metas.first(where: { $0.transactionID == current }),
                CommitRecord.reset(fromDataFile: path, metaIndex: meta.index, pageSize: pageSize, at: recordPath)
            else { return .impossible }
            return .repaired(
                "the vault was set back to transaction \(current), the newest state that can be recovered. Lost: what transaction \(lost) wrote (the last write before the damage)"
            )
        case .transactionID(let damaged, let stamp):
            index = damaged
            page = Self.read(descriptor, at: UInt64(index * pageSize), count: pageSize)
            withUnsafeBytes(of: stamp.littleEndian) { page.replaceSubrange(144..<152, with: $0) }
            action = "meta page \(index)'s transaction id was set back to \(stamp), as its tree records"
            // A page that held the genuine next id (one past the other page's) was the newest state:
            // its own tree is gone, and setting it back makes the older page current.
            if let claimed = metas.first(where: { $0.index == index })?.transactionID,
                let other = metas.first(where: { $0.index != index }),
                claimed == other.transactionID + 1, stamp < other.transactionID
            {
                loss =
                    "meta page \(index) claims transaction \(claimed), the last one committed, but its tree is not the one that transaction wrote (its stamp says \(stamp)); transaction \(claimed) cannot be recovered, and setting the page back makes transaction \(other.transactionID) current: what transaction \(claimed) wrote (the last write before the damage) is lost"
            }
        case .lastPage(let damaged, let lastPage):
            index = damaged
            page = Self.read(descriptor, at: UInt64(index * pageSize), count: pageSize)
            withUnsafeBytes(of: lastPage.littleEndian) { page.replaceSubrange(136..<144, with: $0) }
            action = "meta page \(index)'s last page number was set to \(lastPage), the last page in use"
        case .metaHeader(let damaged):
            index = damaged
            guard let source = metas.first(where: { $0.index != index }) else { return .impossible }
            page = Self.read(descriptor, at: UInt64(index * pageSize), count: pageSize)
            if let candidate = Self.unchecked(page, index: index, pageSize: pageSize),
                Self.stamp(in: candidate, descriptor: descriptor) == candidate.transactionID
            {
                // Only its header or magic was hit: the rest agrees with its tree, so keep it.
                withUnsafeBytes(of: UInt64(index).littleEndian) { page.replaceSubrange(0..<8, with: $0) }
                page[10] |= UInt8(Self.metaFlag)
                withUnsafeBytes(of: Self.magic.littleEndian) { page.replaceSubrange(16..<20, with: $0) }
                withUnsafeBytes(of: UInt32(1).littleEndian) { page.replaceSubrange(20..<24, with: $0) }
                action =
                    "meta page \(index)'s header was rewritten; its state (transaction \(candidate.transactionID)) agrees with its tree"
            } else {
                let claimed = Self.unchecked(page, index: index, pageSize: pageSize)?.transactionID
                if claimed.map({ $0 + 1 != source.transactionID }) ?? true {
                    // It held the newest state, or what it held cannot be read.
                    let which =
                        claimed == source.transactionID + 1
                        ? "transaction \(source.transactionID + 1), the last one committed"
                        : "a transaction committed after \(source.transactionID), if there was one"
                    loss =
                        "meta page \(index) is unreadable and its tree cannot be proven; copying meta page \(source.index) (transaction \(source.transactionID)) over it loses what \(which) wrote"
                }
                page = Self.read(descriptor, at: UInt64(source.index * pageSize), count: pageSize)
                withUnsafeBytes(of: UInt64(index).littleEndian) { page.replaceSubrange(0..<8, with: $0) }
                action =
                    "meta page \(index) was unreadable and was rewritten as a copy of meta page \(source.index) (transaction \(source.transactionID))"
            }
        }
        if let loss, !acceptingLoss { return .wouldLose(loss) }
        guard page.count == pageSize else { return .impossible }
        let writable = open(path, O_WRONLY | O_CLOEXEC)
        guard writable >= 0 else { return .impossible }
        defer { Glibc.close(writable) }
        let written = page.withUnsafeBytes { pwrite(writable, $0.baseAddress, $0.count, off_t(index * pageSize)) }
        guard written == page.count, fsync(writable) == 0 else { return .impossible }
        if let recordPath, let reread = DataFileCheck(path: path) {
            reread.close()
            // The record follows the state the file now opens (after a loss, it must not name the
            // lost transaction any more).
            guard let after = reread.current else { return .repaired(action) }
            if loss != nil {
                CommitRecord.reset(fromDataFile: path, metaIndex: after.index, pageSize: pageSize, at: recordPath)
            } else {
                CommitRecord.note(transactionID: after.transactionID, dataFile: path, pageSize: pageSize)
            }
        }
        return .repaired(loss.map { action + ". Lost: " + $0 } ?? action)
    }

    /// Whether another process has the environment in `directory` open: every LMDB process holds a
    /// shared lock on the first byte of `lock.mdb` while it has the environment open.
    package static func isOpenElsewhere(directory: String) -> Bool {
        let descriptor = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { Glibc.close(descriptor) }
        // Would an exclusive lock conflict? (lockf's test asks about a shared one, which never does.)
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        guard fcntl(descriptor, F_GETLK, &probe) == 0 else { return false }
        return probe.l_type != Int16(F_UNLCK)
    }

    /// Closes the file. Call it once, when done.
    package func close() { Glibc.close(descriptor) }

    /// Walks every tree of the snapshot whose meta page has transaction id `snapshotID` (hold a read
    /// transaction on it meanwhile, so its pages are not reused): the main tree with every named
    /// table in it, the free list and the pages it lists. Every page from 2 to the last must be
    /// reached exactly once, as a tree page or as a free page, and lie within the file.
    ///
    /// - Returns: What is wrong; empty for a sound file.
    package func walk(snapshotID: UInt64) -> [Damage] {
        guard let meta = metas.first(where: { $0.transactionID == snapshotID }) ?? current else {
            return [Damage(part: "meta pages", problem: "neither describes the open snapshot \(snapshotID)")]
        }
        var walker = TreeWalk(check: self, meta: meta)
        walker.mainTreeAndFreeList()
        walker.unaccounted()
        return walker.damage
    }

    // MARK: Reading

    package static func read(_ descriptor: Int32, at offset: UInt64, count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { raw in
                valueOrErrno {
                    pread(descriptor, raw.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                }
            }
            guard case .success(let read) = got, read > 0 else { break }
            filled += read
        }
        bytes.removeLast(count - filled)
        return bytes
    }

    package func page(_ number: UInt64, pageSize: Int, count: Int = 1) -> [UInt8] {
        Self.read(descriptor, at: number * UInt64(pageSize), count: pageSize * count)
    }

    package static func integer<T: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as _: T.Type) -> T {
        var value: T = 0
        for index in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(bytes[offset + index]) }
        return value
    }

    private enum MetaReading {
        case valid(Meta)
        case damaged(String)
    }

    private static func meta(_ page: [UInt8], index: Int) -> MetaReading {
        guard page.count == 152 else { return .damaged("the file ends before it") }
        let flags = integer(page, 10, as: UInt16.self)
        let magic = integer(page, 16, as: UInt32.self)
        let version = integer(page, 20, as: UInt32.self)
        guard magic == Self.magic else {
            return .damaged("its magic number is \(String(magic, radix: 16)), not beefc0de: the page is damaged")
        }
        guard version == 1 else { return .damaged("it says data version \(version), not 1") }
        guard flags & metaFlag != 0, integer(page, 0, as: UInt64.self) == UInt64(index) else {
            return .damaged("its page header is not a meta page's")
        }
        let pageSize = Int(integer(page, 40, as: UInt32.self))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            return .damaged("it gives the page size \(pageSize)")
        }
        return unchecked(page, index: index, pageSize: pageSize).map(MetaReading.valid) ?? .damaged("it is short")
    }

    /// The fields of a meta page, without checking its magic or header (which may be what is
    /// damaged), if its page size is the one expected.
    private static func unchecked(_ page: [UInt8], index: Int, pageSize: Int) -> Meta? {
        guard page.count >= 152, Int(integer(page, 40, as: UInt32.self)) == pageSize else { return nil }
        return Meta(
            index: index,
            transactionID: integer(page, 144, as: UInt64.self),
            lastPage: integer(page, 136, as: UInt64.self),
            pageSize: pageSize,
            freeRoot: integer(page, 80, as: UInt64.self),
            mainRoot: integer(page, 128, as: UInt64.self),
            freeDepth: Int(integer(page, 46, as: UInt16.self)),
            mainDepth: Int(integer(page, 94, as: UInt16.self))
        )
    }

    /// The state of one walk: pages seen, and what was found wrong.
    private struct TreeWalk {
        package let check: DataFileCheck
        package let meta: Meta
        /// Which part each page was reached from, as an index into `parts`.
        package var owner: [UInt64: UInt16] = [:]
        package var parts: [String] = []
        package var damage: [Damage] = []
        /// Only find the highest page the trees reach: no ownership, no overflow headers read.
        package let light: Bool
        package var highest: UInt64 = 0
        /// In a light walk: free pages listed past the file's end (never written, as LMDB may leave them).
        package var freeBeyondEnd: UInt64 = 0
        /// In a light walk: the highest page the free list names.
        package var highestFree: UInt64 = 0

        /// Only the main tree in full, and the root page of each table and of the free list: the
        /// check at open.
        package let shallow: Bool

        package init(check: DataFileCheck, meta: Meta, light: Bool = false, shallow: Bool = false) {
            self.check = check
            self.meta = meta
            self.light = light
            self.shallow = shallow
        }

        package mutating func claim(_ page: UInt64, count: UInt64 = 1, by part: String) -> Bool {
            guard page >= 2, page + count - 1 <= meta.lastPage else {
                damage.append(
                    Damage(
                        part: part,
                        problem: "it points to page \(page), outside the database (pages 2 to \(meta.lastPage))"
                    )
                )
                return false
            }
            highest = max(highest, page + count - 1)
            if light { return true }
            if parts.last != part { parts.append(part) }
            let index = UInt16(truncatingIfNeeded: parts.count - 1)
            for number in page..<(page + count) {
                if let previous = owner[number] {
                    damage.append(Damage(part: part, problem: "page \(number) is also used by \(parts[Int(previous)])"))
                    return false
                }
                owner[number] = index
            }
            return true
        }

        /// Walks the main tree (with its tables) and the free list of ``meta``, every page of both
        /// even in a ``shallow`` walk: LMDB takes pages for every write from the free list, and a
        /// page number damaged there would have it write outside the file (`SIGSEGV`).
        package mutating func mainTreeAndFreeList() {
            tree(root: meta.mainRoot, depth: meta.mainDepth, part: "the main tree", holdsTables: true)
            tree(
                root: meta.freeRoot,
                depth: meta.freeDepth,
                part: "the free list",
                holdsTables: false,
                isFreeList: true
            )
        }

        /// Walks one tree from `root` (`depth` levels, 0 where not known), each page checked by
        /// ``TreePage`` before anything it points to is followed; the main tree's tables are walked
        /// in turn, the free list's records claim the pages they list.
        package mutating func tree(
            root: UInt64,
            depth treeDepth: Int,
            part: String,
            holdsTables: Bool,
            isFreeList: Bool = false,
            rootOnly: Bool = false
        ) {
            guard root != DataFileCheck.noPage else { return }
            guard treeDepth <= 32 else {
                damage.append(Damage(part: part, problem: "its depth is \(treeDepth), deeper than any B-tree can be"))
                return
            }
            // Each page with the key range its parent gives it: a branch's key i is at most every key
            // below child i and above every key below child i − 1 (LMDB's search relies on it).
            var pending: [(UInt64, Int, [UInt8]?, [UInt8]?)] = [(root, 1, nil, nil)]
            while let (number, level, lowest, above) = pending.popLast() {
                guard level <= 32 else {
                    damage.append(Damage(part: part, problem: "it is deeper than any B-tree can be: a cycle"))
                    return
                }
                guard claim(number, by: part) else { continue }
                let bytes = check.page(number, pageSize: meta.pageSize)
                guard bytes.count == meta.pageSize else {
                    damage.append(Damage(part: part, problem: "page \(number) lies past the end of the file"))
                    continue
                }
                let page: TreePage
                do {
                    page = try TreePage(
                        bytes,
                        number: number,
                        expectBranch: treeDepth > 0 ? level < treeDepth : nil,
                        integerKeys: isFreeList,
                        minimumBranchKeys: isFreeList ? 1 : 2
                    )
                } catch {
                    damage.append(Damage(part: part, problem: error.description))
                    continue
                }
                if rootOnly { return }
                let keys = page.nodes.map { Array(page.bytes[$0.key]) }
                let precedes: ([UInt8], [UInt8]) -> Bool = { first, second in
                    isFreeList && first.count == 8 && second.count == 8
                        ? DataFileCheck.integer(first, 0, as: UInt64.self)
                            < DataFileCheck.integer(second, 0, as: UInt64.self)
                        : first.lexicographicallyPrecedes(second)
                }
                let compared = keys.dropFirst(page.isBranch ? 1 : 0)
                if let first = compared.first, let last = compared.last,
                    lowest.map({ precedes(first, $0) }) ?? false || above.map({ !precedes(last, $0) }) ?? false
                {
                    damage.append(
                        Damage(
                            part: part,
                            problem:
                                "page \(number) holds keys outside the range its parent gives it: a key was altered"
                        )
                    )
                    continue
                }
                if page.isBranch {
                    // Reversed, so the stack walks the children in key order.
                    for (index, node) in page.nodes.enumerated().reversed() {
                        let low = index == 0 ? lowest : keys[index]
                        let high = index + 1 < keys.count ? keys[index + 1] : above
                        pending.append((node.child, level + 1, low, high))
                    }
                    continue
                }
                for node in page.nodes {
                    if node.flags & TreePage.bigData != 0 {
                        let first = DataFileCheck.integer(page.bytes, node.data.lowerBound, as: UInt64.self)
                        guard overflow(first, size: node.dataSize, part: part), isFreeList else { continue }
                        let run = check.page(
                            first,
                            pageSize: meta.pageSize,
                            count: Int(DataFileCheck.overflowPages(size: node.dataSize, pageSize: meta.pageSize))
                        )
                        freePages(
                            Array(run[DataFileCheck.headerSize...]),
                            size: node.dataSize,
                            page: number,
                            part: part
                        )
                    } else if node.flags & TreePage.subDatabase != 0 {
                        guard holdsTables else {
                            damage.append(Damage(part: part, problem: "page \(number) holds a table inside a table"))
                            continue
                        }
                        let name = String(decoding: page.bytes[node.key], as: UTF8.self)
                        let descriptor = node.data.lowerBound
                        let flags = DataFileCheck.integer(page.bytes, descriptor + 4, as: UInt16.self)
                        guard flags == 0 else {
                            damage.append(
                                Damage(
                                    part: "table '\(name)'",
                                    problem: "its descriptor has flags \(flags), which Coffer never sets"
                                )
                            )
                            continue
                        }
                        tree(
                            root: DataFileCheck.integer(page.bytes, descriptor + 40, as: UInt64.self),
                            depth: Int(DataFileCheck.integer(page.bytes, descriptor + 6, as: UInt16.self)),
                            part: "table '\(name)'",
                            holdsTables: false,
                            rootOnly: shallow
                        )
                    } else if isFreeList {
                        freePages(Array(page.bytes[node.data]), size: node.dataSize, page: number, part: part)
                    }
                }
            }
        }

        /// Claims the pages of one free-list record: an id list, its length then that many page numbers.
        package mutating func freePages(_ record: [UInt8], size: Int, page: UInt64, part: String) {
            guard size >= 8, record.count >= size else {
                damage.append(
                    Damage(part: part, problem: "page \(page) holds a free-page record too short for its length")
                )
                return
            }
            let count = Int(truncatingIfNeeded: integer(record, 0, as: UInt64.self))
            guard count >= 0, count <= (size - 8) / 8 else {
                damage.append(Damage(part: part, problem: "page \(page) holds a free-page list longer than its record"))
                return
            }
            let filePages = check.fileSize / UInt64(meta.pageSize)
            var previous = UInt64.max
            for index in 0..<count {
                let free = integer(record, 8 + index * 8, as: UInt64.self)
                // LMDB keeps each list in descending order: a flipped bit in one number breaks it.
                guard free < previous else {
                    damage.append(
                        Damage(
                            part: part,
                            problem: "page \(page) lists free page \(free) after \(previous), out of order"
                        )
                    )
                    return
                }
                previous = free
                if light {
                    if free >= filePages, free <= meta.lastPage { freeBeyondEnd += 1 }
                    if free <= meta.lastPage { highestFree = max(highestFree, free) }
                } else {
                    _ = claim(free, by: "the free pages")
                }
            }
        }

        @discardableResult
        package mutating func overflow(_ first: UInt64, size: Int, part: String) -> Bool {
            let pages = DataFileCheck.overflowPages(size: size, pageSize: meta.pageSize)
            if light { return claim(first, count: pages, by: part) }
            guard (first + pages) * UInt64(meta.pageSize) <= check.fileSize else {
                damage.append(
                    Damage(part: part, problem: "pages \(first) to \(first + pages - 1) lie past the end of the file")
                )
                return false
            }
            let header = check.page(first, pageSize: meta.pageSize)
            guard header.count == meta.pageSize, integer(header, 10, as: UInt16.self) & DataFileCheck.overflowFlag != 0,
                UInt64(integer(header, 12, as: UInt32.self)) == pages
            else {
                damage.append(
                    Damage(part: part, problem: "page \(first) should start a run of \(pages) overflow pages")
                )
                return false
            }
            return claim(first, count: pages, by: part)
        }

        package mutating func unaccounted() {
            let missing = (2...max(meta.lastPage, 2)).filter { owner[$0] == nil && $0 <= meta.lastPage }
            guard !missing.isEmpty else { return }
            damage.append(
                Damage(
                    part: "the free list",
                    problem:
                        "\(missing.count) pages (the first \(missing[0])) belong to no tree and are not listed as free"
                )
            )
        }

        private func integer<T: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as type: T.Type) -> T {
            DataFileCheck.integer(bytes, offset, as: type)
        }
    }
}
