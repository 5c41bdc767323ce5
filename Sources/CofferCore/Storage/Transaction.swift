internal import CLMDB
package import Foundation
internal import Synchronization

/// A read or write transaction, valid only inside the closure it was handed to.
///
/// Values read through ``withValue(_:key:_:)`` point straight into the memory map (no copy) and are
/// valid only inside that call. Not thread-safe, not Sendable: a transaction belongs to the thread
/// that runs its closure.
package final class Transaction {
    /// Thrown out of a write body when LMDB reports `MDB_MAP_FULL`, so ``Environment/write(_:)`` grows
    /// the map and retries even if the body wrapped or replaced the error on its way out.
    package struct MapFull: Error {
        package let underlying: LMDBError
    }

    /// Whether this transaction can only read.
    package let isReadOnly: Bool
    private var handle: OpaquePointer?
    private var sawMapFull: LMDBError?
    /// Whether a put or delete ran: only then does the commit write a new state (and its stamp).
    private var changed = false
    private unowned let environment: Environment

    package init(pointer: OpaquePointer, isReadOnly: Bool, environment: Environment) {
        handle = pointer
        self.isReadOnly = isReadOnly
        self.environment = environment
    }

    /// The id of the snapshot this transaction reads (`mdb_txn_id`): the meta page with this id
    /// describes it.
    package var snapshotID: UInt64 {
        guard let handle else { return 0 }
        return UInt64(mdb_txn_id(handle))
    }

    /// Chunks whose last reference went while frees were deferred in this transaction (`nil` when
    /// they are not): the content store keeps them, unreferenced, until the deferral ends, and frees
    /// those no one took again.
    package var deferredChunkFrees: [ChunkID]?

    /// Notes one operation at a random place in a large table (a chunk's reference count, say), so
    /// the environment can drop the map's pages every so often (``Environment/noteScatteredTouch(_:)``).
    ///
    /// - Parameter budget: What the touched pages are. The transaction keeps the largest budget its
    ///   work named, for its own scans and for the watch over what LMDB maps while it writes.
    package func noteScatteredTouch(_ budget: MappedPageBudget = .readOnce) {
        budgetInUse.include(budget)
        environment.noteScatteredTouch(budgetInUse.current)
    }

    /// The largest ``MappedPageBudget`` a transaction's touches named so far; read on another thread
    /// by the environment's watch while the transaction writes.
    package final class BudgetInUse: Sendable {
        private let largest = Atomic<Int>(MappedPageBudget.readOnce.rawValue)

        /// The budget in force.
        package var current: MappedPageBudget {
            MappedPageBudget(rawValue: largest.load(ordering: .relaxed)) ?? .readOnce
        }

        /// Raises the budget in force to `budget` if it is larger.
        package func include(_ budget: MappedPageBudget) {
            if budget > current { largest.store(budget.rawValue, ordering: .relaxed) }
        }
    }

    /// The budget this transaction's work asked for.
    package let budgetInUse = BudgetInUse()

    /// Whether this transaction runs on a disk too full for anything but freeing space
    /// (``Environment/writeFreeingSpace(_:)``, after giving up the space reserve): work that takes new
    /// pages now to save space later (rewriting a chunk pack) is left for a later transaction.
    package var sparesSpace = false

    /// State a layer above keeps for the length of this transaction, one object per type
    /// (``state(_:)``): such as the chunk pack a write is filling.
    private var states: [ObjectIdentifier: AnyObject] = [:]
    /// Work to do at the end of a body that commits, before the commit, in the order it was asked for.
    private var commitActions: [(Transaction) throws -> Void] = []

    /// This transaction's state of type `State`, made by `make` on first use and dropped with the
    /// transaction; `make` may ask for work before the commit (``beforeCommit(_:)``).
    package func state<State: AnyObject>(_ make: () throws -> State) rethrows -> State {
        if let state = states[ObjectIdentifier(State.self)] as? State { return state }
        let state = try make()
        states[ObjectIdentifier(State.self)] = state
        return state
    }

    /// This transaction's state of type `State`, or `nil` if none was made.
    package func existingState<State: AnyObject>(_ type: State.Type) -> State? {
        states[ObjectIdentifier(State.self)] as? State
    }

    /// Runs `action` when the body has returned and the transaction is about to commit (not when it
    /// aborts): a write can keep work in memory (a pack of chunks it is filling) and store it once.
    package func beforeCommit(_ action: @escaping (Transaction) throws -> Void) {
        commitActions.append(action)
    }

    deinit {
        if let handle { mdb_txn_abort(handle) }
    }

    /// The live transaction pointer; using a transaction after its closure returned is a programming
    /// error and stops the process rather than touch freed memory.
    package var pointer: OpaquePointer {
        guard let handle else { preconditionFailure("a transaction was used after its closure returned") }
        return handle
    }

    /// Runs `body`, then commits through `committer` (`mdb_txn_commit` with the environment's
    /// settings; it is told whether the transaction changed anything), or, for `commit: false`,
    /// aborts; aborts if `body` throws.
    package func run<R>(
        _ body: (Transaction) throws -> R,
        commit: Bool,
        committer: (OpaquePointer, _ changed: Bool) -> Int32
    ) throws -> R {
        defer {
            if let handle { mdb_txn_abort(handle) }
            handle = nil
        }
        let result: R
        do {
            result = try body(self)
            if commit {
                while !commitActions.isEmpty { try commitActions.removeFirst()(self) }
            }
        } catch {
            if let sawMapFull { throw MapFull(underlying: sawMapFull) }
            throw error
        }
        if let sawMapFull { throw MapFull(underlying: sawMapFull) }
        if commit {
            if changed {
                if let damage = environment.knownDamage { throw KnownDamage.Refusal(description: damage) }
                try environment.checkTreesBeforeFirstChange()
                try stamp()
            }
            let pointer = self.pointer
            handle = nil
            let status = committer(pointer, changed)
            if status == MDB_MAP_FULL { throw MapFull(underlying: LMDBError(.mapFull, operation: "mdb_txn_commit")) }
            try LMDB.check(status, "mdb_txn_commit")
        }
        return result
    }

    /// The key in LMDB's main tree (beside the named tables) under which every write transaction
    /// records its own id: a meta page whose transaction id differs from the stamp in the tree it
    /// points to was altered (``DataFileCheck``), which LMDB itself cannot tell.
    package static let stampKey = Array("coffer.txn".utf8)

    /// Records this transaction's id in the main tree, on a page the commit writes anyway (every
    /// change to a named table rewrites its entry in the main tree).
    private func stamp() throws {
        var main: MDB_dbi = 0
        try checkWrite(mdb_dbi_open(pointer, nil, 0, &main), "mdb_dbi_open(main)")
        var id = UInt64(mdb_txn_id(pointer)).bigEndian
        let status = Self.stampKey.withUnsafeBytes { key in
            withUnsafeBytes(of: &id) { value in
                var keyValue = MDB_val(key)
                var dataValue = MDB_val(value)
                return mdb_put(pointer, main, &keyValue, &dataValue, 0)
            }
        }
        try checkWrite(status, "mdb_put(main, stamp)")
    }

    /// Checks a write call's result, remembering a full map so the environment can grow it.
    private func checkWrite(_ result: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
        if result == MDB_SUCCESS { changed = true }
        if result == MDB_MAP_FULL { sawMapFull = LMDBError(.mapFull, operation: operation()) }
        try LMDB.check(result, operation())
    }

    // MARK: Reading

    /// Calls `body` with the value stored under `key`, straight from the map, or returns `nil` when
    /// there is none.
    ///
    /// The corresponding C function is `mdb_get`.
    package func withValue<R>(
        _ table: Table,
        key: some ContiguousBytes,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        var value = MDB_val()
        let found = try key.withUnsafeBytes { (key) throws(LMDBError) -> Bool in
            var keyValue = MDB_val(key)
            return try LMDB.found(mdb_get(pointer, table.handle, &keyValue, &value), "mdb_get(\(table))")
        }
        return found ? try body(value.bytes) : nil
    }

    /// A copy of the value stored under `key`, or `nil`.
    package func get(_ table: Table, key: some ContiguousBytes) throws -> [UInt8]? {
        try withValue(table, key: key) { Array($0) }
    }

    /// Whether `table` holds `key`.
    package func contains(_ table: Table, key: some ContiguousBytes) throws -> Bool {
        try withValue(table, key: key) { _ in true } ?? false
    }

    /// The number of entries in `table` (`mdb_stat`).
    package func count(_ table: Table) throws -> Int {
        var stat = MDB_stat()
        try LMDB.check(mdb_stat(pointer, table.handle, &stat), "mdb_stat(\(table))")
        return stat.ms_entries
    }

    /// How `table`'s B-tree uses the data file's pages (`mdb_stat`): what a space report splits a
    /// vault's bytes by.
    package func pages(_ table: Table) throws -> TablePages {
        var stat = MDB_stat()
        try LMDB.check(mdb_stat(pointer, table.handle, &stat), "mdb_stat(\(table))")
        return TablePages(
            pageSize: Int(stat.ms_psize),
            branchPages: stat.ms_branch_pages,
            leafPages: stat.ms_leaf_pages,
            overflowPages: stat.ms_overflow_pages,
            entries: stat.ms_entries,
            depth: Int(stat.ms_depth)
        )
    }

    /// Visits entries in key order, starting at the first key not less than `start` (all entries when
    /// `start` is empty) and stopping after the last key that begins with `prefix` (no limit when
    /// `prefix` is empty), or when `body` returns `false`.
    ///
    /// Keys and values point into the map and are valid only during each call of `body`. The
    /// corresponding C functions are `mdb_cursor_open` and `mdb_cursor_get`.
    package func forEach(
        in table: Table,
        from start: [UInt8] = [],
        prefix: [UInt8] = [],
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(pointer, table.handle, &cursor), "mdb_cursor_open(\(table))")
        defer { mdb_cursor_close(cursor) }
        let origin = prefix.lexicographicallyPrecedes(start) ? start : prefix
        var key = MDB_val()
        var value = MDB_val()
        var found = try origin.withUnsafeBytes { (bytes) throws(LMDBError) -> Bool in
            if bytes.isEmpty {
                return try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_FIRST), "mdb_cursor_get(\(table))")
            }
            key = MDB_val(bytes)
            return try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE), "mdb_cursor_get(\(table))")
        }
        var sinceTouch = 0
        while found {
            if !prefix.isEmpty, !key.bytes.starts(with: prefix) { return }
            guard try body(key.bytes, value.bytes) else { return }
            // A scan reads its leaf pages in key order, but they lie anywhere in the file, and so do
            // the pages of a value too large to share a leaf: each maps its folio. Noted as scattered
            // touches (one per 32 entries, or per large value), the environment keeps what a scan of
            // a large table leaves mapped within its budget (a full export's scan of a million items'
            // change log had mapped 260 MB).
            sinceTouch += value.mv_size > Self.largeValueSize ? Self.entriesPerTouch : 1
            if sinceTouch >= Self.entriesPerTouch {
                sinceTouch = 0
                environment.noteScatteredTouch(budgetInUse.current)
            }
            found = try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_NEXT), "mdb_cursor_get(\(table))")
        }
    }

    /// How many entries of a scan count as one scattered touch.
    private static let entriesPerTouch = 32
    /// Values larger than this are stored on overflow pages of their own (LMDB keeps a value on its
    /// leaf while a node fits a quarter of a 4 KiB page or so).
    private static let largeValueSize = 1024

    /// A copy of the last (greatest) key in `table`, or `nil` when it is empty.
    ///
    /// The corresponding C function is `mdb_cursor_get` with `MDB_LAST`.
    package func lastKey(in table: Table) throws -> [UInt8]? {
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(pointer, table.handle, &cursor), "mdb_cursor_open(\(table))")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        guard try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_LAST), "mdb_cursor_get(\(table))") else {
            return nil
        }
        return Array(key.bytes)
    }

    // MARK: Writing

    /// Stores `value` under `key`. With `overwrite: false`, an existing key is left alone and the call
    /// returns `false`.
    ///
    /// The corresponding C function is `mdb_put`.
    @discardableResult
    package func put(
        _ table: Table,
        key: some ContiguousBytes,
        value: some ContiguousBytes,
        overwrite: Bool = true
    ) throws -> Bool {
        let status = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                var keyValue = MDB_val(key)
                var dataValue = MDB_val(value)
                return mdb_put(pointer, table.handle, &keyValue, &dataValue, overwrite ? 0 : UInt32(MDB_NOOVERWRITE))
            }
        }
        if status == MDB_KEYEXIST, !overwrite { return false }
        try checkWrite(status, "mdb_put(\(table))")
        return true
    }

    /// Stores a value of `size` bytes under `key` that `fill` writes in place, in the map (no copy
    /// of a buffer made first): `fill` gets exactly `size` bytes, and must write them all.
    ///
    /// The corresponding C function is `mdb_put` with `MDB_RESERVE`.
    package func put(
        _ table: Table,
        key: some ContiguousBytes,
        reserving size: Int,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        var dataValue = MDB_val(mv_size: size, mv_data: nil)
        let status = key.withUnsafeBytes { key in
            var keyValue = MDB_val(key)
            return mdb_put(pointer, table.handle, &keyValue, &dataValue, UInt32(MDB_RESERVE))
        }
        try checkWrite(status, "mdb_put(\(table), reserve)")
        fill(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: size))
    }

    /// Removes `key`; returns whether it was there.
    ///
    /// The corresponding C function is `mdb_del`.
    @discardableResult
    package func delete(_ table: Table, key: some ContiguousBytes) throws -> Bool {
        let status = key.withUnsafeBytes { key in
            var keyValue = MDB_val(key)
            return mdb_del(pointer, table.handle, &keyValue, nil)
        }
        if status == MDB_NOTFOUND { return false }
        try checkWrite(status, "mdb_del(\(table))")
        return true
    }
}

/// The pages one table's B-tree holds (``Transaction/pages(_:)``, `mdb_stat`).
package struct TablePages: Sendable, Equatable {
    /// LMDB's page size.
    package let pageSize: Int
    /// Interior pages: keys that route to the leaves.
    package let branchPages: Int
    /// Leaf pages: keys, and values small enough to sit beside them.
    package let leafPages: Int
    /// Overflow pages: each value too large for a leaf takes whole pages of its own.
    package let overflowPages: Int
    /// The number of entries.
    package let entries: Int
    /// The tree's depth (0 when empty).
    package let depth: Int

    /// Bytes in all the table's pages.
    package var bytes: Int64 { Int64(branchPages + leafPages + overflowPages) * Int64(pageSize) }

    /// The pages a value of `size` bytes takes when it does not fit in a leaf (LMDB's `OVPAGES`: a
    /// 16-byte page header, then the value), or 0 when it fits: a leaf node (8-byte header, the key
    /// and the value) of at most `(pageSize - 16) / 2` bytes, rounded down to even, less 2
    /// (`me_nodemax`).
    package static func overflowPages(valueSize size: Int, keySize: Int, pageSize: Int) -> Int {
        let nodeMaximum = (((pageSize - 16) / 2) & ~1) - 2
        guard 8 + keySize + size > nodeMaximum else { return 0 }
        return (16 - 1 + size) / pageSize + 1
    }
}
