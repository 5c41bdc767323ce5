import Foundation

/// The `pending` table: for each write in progress (a blob being stored, a bundle being imported), its
/// owner and the chunks it has taken references to (docs/FORMAT.md, "Pending writes").
///
/// A writer counts a reference to each chunk it stores or finds already stored, and notes the chunk
/// here, in the same transaction. Until its manifest commits, nothing else refers to those chunks,
/// but their counts keep them alive, so a concurrent `gc` (in any process) never frees a chunk a
/// live write is about to use. When the manifest commits the entry goes (its references now belong to
/// the manifest); a write that fails releases them; a writer that died leaves an entry that
/// ``reclaimDead(store:environment:)`` recognises by its owner and releases.
package struct PendingWrites {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    /// Identifies one write.
    package struct WriteID: Hashable, Sendable {
        package let bytes: [UInt8]

        package init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        package static func random() -> WriteID { WriteID(bytes: SecureRandom.bytes(count: 16)) }
    }

    private static let ownerTag: UInt8 = 0
    private static let batchTag: UInt8 = 1
    private static let stagedRecordTag: UInt8 = 2

    /// Registers a new write owned by `owner`.
    package func begin(_ write: WriteID, owner: ProcessIdentity = .current, in txn: Transaction) throws {
        var record = BinaryWriter()
        record.write(owner.pid)
        record.write(owner.startTime)
        record.write(Int64(Date().timeIntervalSince1970 * 1000))
        record.write(try ChangeLog.lastSequence(in: txn, schema: schema))
        try txn.put(schema.pending, key: write.bytes + [Self.ownerTag], value: record.bytes)
    }

    /// The change sequence that was the latest when the oldest write still in progress began, or `nil`
    /// when none is. Chunks such a write stores are "born" at that sequence or later but may be
    /// referenced only by a manifest committed after an export, so an export remembers a point no
    /// later than this for its peer (see ``ChunkStore/References``).
    package func oldestBeginSequence(in txn: Transaction) throws -> UInt64? {
        var oldest: UInt64?
        try txn.forEach(in: schema.pending) { key, value in
            if Self.isOwnerKey(key) {
                guard value.count == 28 else {
                    throw CofferError(.decode, "a pending-write owner record is damaged; \(run: .collectGarbage)")
                }
                var reader = BinaryReader(Array(value), what: "a pending-write owner")
                try reader.skip(20)
                let begun = try reader.readUInt64()
                oldest = min(oldest ?? begun, begun)
            }
            return true
        }
        return oldest
    }

    /// Counts `write` as begun at the latest change sequence from now on: every chunk it stored so far
    /// is referenced by a record committed since (a backup's part, ``oldestBeginSequence(in:)``), so an
    /// export may credit its receiver past them.
    package func advanceBegin(of write: WriteID, in txn: Transaction) throws {
        let key = write.bytes + [Self.ownerTag]
        guard let stored = try txn.get(schema.pending, key: key), stored.count == 28 else {
            throw CofferError(.internalError, "a write in progress has no owner record")
        }
        var record = BinaryWriter()
        record.write(raw: stored[..<20])
        record.write(try ChangeLog.lastSequence(in: txn, schema: schema))
        try txn.put(schema.pending, key: key, value: record.bytes)
    }

    /// Whether `write` is registered: in progress, or ended by a process that died and not released yet.
    package func isRegistered(_ write: WriteID, in txn: Transaction) throws -> Bool {
        try txn.contains(schema.pending, key: write.bytes + [Self.ownerTag])
    }

    /// Notes chunks the write has taken references to, as batch number `batch` (one per transaction).
    package func note(_ chunkIDs: [ChunkID], batch: UInt32, of write: WriteID, in txn: Transaction) throws {
        guard !chunkIDs.isEmpty else { return }
        let key = write.bytes + [Self.batchTag] + withUnsafeBytes(of: batch.bigEndian) { Array($0) }
        try txn.put(schema.pending, key: key, value: chunkIDs.flatMap(\.bytes))
    }

    /// Keeps a record an import has read but may not apply before its whole bundle verifies, as
    /// record number `index` of the write.
    package func stage(_ record: [UInt8], index: UInt32, of write: WriteID, in txn: Transaction) throws {
        let key = write.bytes + [Self.stagedRecordTag] + withUnsafeBytes(of: index.bigEndian) { Array($0) }
        try txn.put(schema.pending, key: key, value: record)
    }

    /// Calls `body` with each record staged by `write`, in order.
    package func forEachStagedRecord(of write: WriteID, in txn: Transaction, _ body: ([UInt8]) throws -> Void) throws {
        try txn.forEach(in: schema.pending, prefix: write.bytes + [Self.stagedRecordTag]) { _, value in
            try body(Array(value))
            return true
        }
    }

    /// Ends a write whose references now belong to a committed manifest.
    ///
    /// A large write has one entry per batch, each written beside that batch's chunks and so on a page
    /// of its own far from the others: every entry read or deleted counts as a scattered touch, or
    /// this last transaction would map a folio per entry (40 to 120 MiB for a 1 GiB put in a large
    /// vault).
    package func finish(_ write: WriteID, in txn: Transaction) throws {
        for key in try keys(of: write, in: txn) {
            txn.noteScatteredTouch()
            try txn.delete(schema.pending, key: key)
        }
    }

    /// Ends a write that will not commit: releases every chunk it noted.
    ///
    /// - Returns: How many references were released, and how many chunks that freed (those no one
    ///   else took).
    @discardableResult
    package func abandon(_ write: WriteID, store: ChunkStore, in txn: Transaction) throws -> (released: Int, freed: Int)
    {
        var released = 0
        var freed = 0
        for key in try keys(of: write, in: txn) {
            if Self.isBatchKey(key) {
                let ids = try txn.get(schema.pending, key: key) ?? []
                guard ids.count % 32 == 0 else {
                    throw CofferError(.decode, "a pending-write record is damaged; \(run: .verify)")
                }
                for start in stride(from: 0, to: ids.count, by: 32) {
                    if try store.release(ChunkID(Array(ids[start..<(start + 32)])), in: txn) { freed += 1 }
                    released += 1
                }
            }
            txn.noteScatteredTouch()
            try txn.delete(schema.pending, key: key)
        }
        return (released, freed)
    }

    /// What releasing writes' references freed.
    package struct Released {
        /// Writes released.
        package var writes = 0
        /// Chunk references released.
        package var references = 0
        /// Chunks deleted because their last reference went.
        package var freedChunks = 0
        /// The sealed bytes of those chunks.
        package var freedBytes: Int64 = 0

        package init(writes: Int = 0, references: Int = 0, freedChunks: Int = 0, freedBytes: Int64 = 0) {
            self.writes = writes
            self.references = references
            self.freedChunks = freedChunks
            self.freedBytes = freedBytes
        }

        /// Adds this tally to `total`.
        package func add(to total: inout Released) {
            total.writes += writes
            total.references += references
            total.freedChunks += freedChunks
            total.freedBytes += freedBytes
        }
    }

    /// Ends a write that will not commit, like ``abandon(_:store:in:)``, but in small transactions:
    /// a few of its noted chunks at a time, newest first, then the rest of its entries. A failed write
    /// is often one that filled the disk, and releasing everything at once needs room for a
    /// transaction as large as the write; each step here needs a few pages (made room for by the environment's
    /// space reserve when the disk is full) and frees its chunks' pages for the next step. An entry another
    /// process released meanwhile is skipped, so two processes reclaiming the same write never release
    /// a chunk twice.
    @discardableResult
    package func release(_ write: WriteID, store: ChunkStore, environment: Environment) throws -> Released {
        let entries = try environment.read { txn in try keys(of: write, in: txn) }
        var released = Released(writes: 1)
        for key in entries.reversed() where Self.isBatchKey(key) {
            var more = true
            while more {
                let (tally, remaining) = try environment.writeFreeingSpace { txn -> (Released, Bool) in
                    guard let value = try txn.get(schema.pending, key: key) else { return (Released(), false) }
                    guard value.count % 32 == 0 else {
                        throw CofferError(.decode, "a pending-write record is damaged; \(run: .verify)")
                    }
                    let kept = max(0, value.count - Self.chunksPerStep * 32)
                    var tally = Released()
                    for start in stride(from: kept, to: value.count, by: 32) {
                        let id = ChunkID(Array(value[start..<(start + 32)]))
                        let size = try schema.records.withRecord(id, in: txn) { $0.count } ?? 0
                        if try store.release(id, in: txn) {
                            tally.freedChunks += 1
                            tally.freedBytes += Int64(size)
                        }
                        tally.references += 1
                    }
                    if kept == 0 {
                        try txn.delete(schema.pending, key: key)
                    } else {
                        try txn.put(schema.pending, key: key, value: Array(value[..<kept]))
                    }
                    // Counted only once the step commits (a retried closure starts over).
                    return (tally, kept > 0)
                }
                tally.add(to: &released)
                more = remaining
            }
        }
        // Then the staged records and, last, the owner record (it sorts first).
        let others = entries.filter { !Self.isBatchKey($0) }.reversed()
        for step in stride(from: 0, to: others.count, by: Self.entriesPerStep) {
            let keys = others.dropFirst(step).prefix(Self.entriesPerStep)
            try environment.writeFreeingSpace { txn in
                for key in keys { _ = try txn.delete(schema.pending, key: key) }
            }
        }
        return released
    }

    /// How many chunks one step of ``release(_:store:environment:)`` releases: few enough that the
    /// pages it rewrites fit in the space reserve (``Environment/writeFreeingSpace(_:)``).
    private static let chunksPerStep = 32
    /// How many other entries (staged records, the owner) one step deletes.
    private static let entriesPerStep = 256

    /// Releases the writes whose owners are no longer running, each in small transactions
    /// (``release(_:store:environment:)``).
    package func reclaimDead(store: ChunkStore, environment: Environment) throws -> Released {
        let dead = try environment.read { txn in
            var dead: [WriteID] = []
            try txn.forEach(in: schema.pending) { key, value in
                if Self.isOwnerKey(key), value.count >= 12 {
                    var reader = BinaryReader(Array(value), what: "a pending-write owner")
                    let owner = ProcessIdentity(pid: try reader.readUInt32(), startTime: try reader.readUInt64())
                    if !owner.isAlive { dead.append(WriteID(bytes: Array(key.prefix(16)))) }
                }
                return true
            }
            return dead
        }
        var released = Released()
        for write in dead { try release(write, store: store, environment: environment).add(to: &released) }
        return released
    }

    /// Calls `body` with every chunk id noted by any write in progress (once per reference held).
    package func forEachNotedChunk(in txn: Transaction, _ body: (ChunkID) -> Void) throws {
        try txn.forEach(in: schema.pending) { key, value in
            if Self.isBatchKey(key) {
                guard value.count % 32 == 0 else {
                    throw CofferError(.decode, "a pending-write record is damaged; \(run: .verify)")
                }
                for start in stride(from: 0, to: value.count, by: 32) {
                    body(ChunkID(Array(value[start..<(start + 32)])))
                }
            }
            return true
        }
    }

    /// Whether `key` is a write's owner record (write id ‖ 0).
    private static func isOwnerKey(_ key: some Collection<UInt8>) -> Bool {
        key.count == 17 && key.dropFirst(16).first == ownerTag
    }

    /// Whether `key` is a batch of noted chunks (write id ‖ 1 ‖ n), not an owner or a staged record.
    private static func isBatchKey(_ key: some Collection<UInt8>) -> Bool {
        key.count == 21 && key.dropFirst(16).first == batchTag
    }

    /// Every key of one write's entries.
    private func keys(of write: WriteID, in txn: Transaction) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try txn.forEach(in: schema.pending, prefix: write.bytes) { key, _ in
            // Each batch's entry sits on a page of its own (see finish(_:in:)).
            txn.noteScatteredTouch()
            keys.append(Array(key))
            return true
        }
        return keys
    }
}
