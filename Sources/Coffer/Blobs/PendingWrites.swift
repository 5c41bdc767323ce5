import Foundation

/// The `pending` table: for each write in progress (a blob being stored, a bundle being imported), its
/// owner and the chunks it has taken references to (docs/FORMAT.md, "Pending writes").
///
/// A writer counts a reference to each chunk it stores or finds already stored, and notes the chunk
/// here, in the same transaction. Until its manifest commits, nothing else refers to those chunks,
/// but their counts keep them alive, so a concurrent `gc` (in any process) never frees a chunk a
/// live write is about to use. When the manifest commits the entry goes (its references now belong to
/// the manifest); a write that fails releases them; a writer that died leaves an entry that
/// ``reclaimDead(store:in:)`` recognises by its owner and releases.
struct PendingWrites {
    let schema: Schema

    /// Identifies one write.
    struct WriteID: Hashable, Sendable {
        let bytes: [UInt8]

        static func random() -> WriteID { WriteID(bytes: SecureRandom.bytes(count: 16)) }
    }

    private static let ownerTag: UInt8 = 0
    private static let batchTag: UInt8 = 1
    private static let stagedRecordTag: UInt8 = 2

    /// Registers a new write owned by `owner`.
    func begin(_ write: WriteID, owner: ProcessIdentity = .current, in txn: Transaction) throws {
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
    func oldestBeginSequence(in txn: Transaction) throws -> UInt64? {
        var oldest: UInt64?
        try txn.forEach(in: schema.pending) { key, value in
            if Self.isOwnerKey(key) {
                guard value.count == 28 else {
                    throw CofferError(.decode, "a pending-write owner record is damaged; run coffer gc")
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

    /// Notes chunks the write has taken references to, as batch number `batch` (one per transaction).
    func note(_ chunkIDs: [[UInt8]], batch: UInt32, of write: WriteID, in txn: Transaction) throws {
        guard !chunkIDs.isEmpty else { return }
        let key = write.bytes + [Self.batchTag] + withUnsafeBytes(of: batch.bigEndian) { Array($0) }
        try txn.put(schema.pending, key: key, value: chunkIDs.flatMap { $0 })
    }

    /// Keeps a record an import has read but may not apply before its whole bundle verifies, as
    /// record number `index` of the write.
    func stage(_ record: [UInt8], index: UInt32, of write: WriteID, in txn: Transaction) throws {
        let key = write.bytes + [Self.stagedRecordTag] + withUnsafeBytes(of: index.bigEndian) { Array($0) }
        try txn.put(schema.pending, key: key, value: record)
    }

    /// Calls `body` with each record staged by `write`, in order.
    func forEachStagedRecord(of write: WriteID, in txn: Transaction, _ body: ([UInt8]) throws -> Void) throws {
        try txn.forEach(in: schema.pending, prefix: write.bytes + [Self.stagedRecordTag]) { _, value in
            try body(Array(value))
            return true
        }
    }

    /// Ends a write whose references now belong to a committed manifest.
    func finish(_ write: WriteID, in txn: Transaction) throws {
        for key in try keys(of: write, in: txn) { try txn.delete(schema.pending, key: key) }
    }

    /// Ends a write that will not commit: releases every chunk it noted.
    ///
    /// - Returns: How many references were released.
    @discardableResult
    func abandon(_ write: WriteID, store: ChunkStore, in txn: Transaction) throws -> Int {
        var released = 0
        for key in try keys(of: write, in: txn) {
            if Self.isBatchKey(key) {
                let ids = try txn.get(schema.pending, key: key) ?? []
                guard ids.count % 32 == 0 else {
                    throw CofferError(.decode, "a pending-write record is damaged; run coffer verify")
                }
                for start in stride(from: 0, to: ids.count, by: 32) {
                    try store.release(Array(ids[start..<(start + 32)]), in: txn)
                    released += 1
                }
            }
            try txn.delete(schema.pending, key: key)
        }
        return released
    }

    /// Releases the writes whose owners are no longer running.
    ///
    /// - Returns: How many writes were reclaimed and how many chunk references they released.
    func reclaimDead(store: ChunkStore, in txn: Transaction) throws -> (writes: Int, references: Int) {
        var dead: [WriteID] = []
        try txn.forEach(in: schema.pending) { key, value in
            if Self.isOwnerKey(key), value.count >= 12 {
                var reader = BinaryReader(Array(value), what: "a pending-write owner")
                let owner = ProcessIdentity(pid: try reader.readUInt32(), startTime: try reader.readUInt64())
                if !owner.isAlive { dead.append(WriteID(bytes: Array(key.prefix(16)))) }
            }
            return true
        }
        var references = 0
        for write in dead { references += try abandon(write, store: store, in: txn) }
        return (dead.count, references)
    }

    /// Calls `body` with every chunk id noted by any write in progress (once per reference held).
    func forEachNotedChunk(in txn: Transaction, _ body: ([UInt8]) -> Void) throws {
        try txn.forEach(in: schema.pending) { key, value in
            if Self.isBatchKey(key) {
                guard value.count % 32 == 0 else {
                    throw CofferError(.decode, "a pending-write record is damaged; run coffer verify")
                }
                for start in stride(from: 0, to: value.count, by: 32) { body(Array(value[start..<(start + 32)])) }
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
            keys.append(Array(key))
            return true
        }
        return keys
    }
}
