/// Every chunk record of a vault, however it is kept (docs/FORMAT.md, "Chunk packs"): a record of
/// ``ChunkPack/recordLimit`` or more on its own in the `chunks` table, a smaller one in a pack.
///
/// LMDB keeps a value of more than about 2 KB on whole 4 KiB pages of its own, and a smaller one in a
/// leaf that random keys leave partly empty: stored one by one, small records cost a third more than
/// their size. A write transaction gathers its small records into the pack it is filling
/// (``OpenChunkPack``), stored as one value when full or at the commit. Dropping a packed record
/// lowers its pack's live count; a pack is deleted when none is left, and rewritten (its live records
/// moved to the open pack) once less than half of it is live, so space comes back as records are
/// freed, with no prune pass. (Not on a full disk, where a rewrite's new pages are not to be had:
/// ``Transaction/sparesSpace``; the next drop from the pack, or `compact`, rewrites it.)
package struct ChunkRecords {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    // MARK: Reading

    /// Calls `body` with chunk `id`'s record (straight from the map), or returns `nil` when the vault
    /// holds none.
    ///
    /// - Throws: ``CofferError`` `.decode` for a packed record whose pack is missing or damaged.
    package func withRecord<R>(
        _ id: ChunkID,
        in txn: Transaction,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        if let result = try txn.withValue(schema.chunks, key: id, body) { return result }
        guard let packs = schema.packs,
            let locator = try txn.withValue(packs.locators, key: id, { try ChunkLocator(decoding: $0) })
        else {
            return nil
        }
        return try withPacked(id, at: locator, in: txn, packs: packs, body)
    }

    /// A copy of chunk `id`'s record, or `nil`.
    package func record(_ id: ChunkID, in txn: Transaction) throws -> [UInt8]? {
        try withRecord(id, in: txn) { Array($0) }
    }

    /// Whether the vault holds a record of chunk `id`.
    package func contains(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        if try txn.contains(schema.chunks, key: id) { return true }
        guard let packs = schema.packs else { return false }
        return try txn.contains(packs.locators, key: id)
    }

    /// The number of records.
    package func count(in txn: Transaction) throws -> Int {
        try txn.count(schema.chunks) + (try schema.packs.map { try txn.count($0.locators) } ?? 0)
    }

    /// Visits every record: those stored on their own in id order, then the packed ones in id order,
    /// until `body` returns `false`. Records point into the map, valid only during each call.
    ///
    /// - Parameter unreadable: Called with the id of a packed record that cannot be read (its
    ///   locator or pack damaged), and the visit goes on; without it, that is thrown (`.decode`).
    package func forEach(
        in txn: Transaction,
        unreadable: ((_ id: UnsafeRawBufferPointer) throws -> Void)? = nil,
        _ body: (_ id: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var going = true
        try txn.forEach(in: schema.chunks) { key, value in
            going = try body(key, value)
            return going
        }
        if going { try forEachPacked(in: txn, from: [], unreadable: unreadable, body) }
    }

    /// Visits the packed records in id order from the first id not less than `start` (``forEach(in:unreadable:_:)``).
    package func forEachPacked(
        in txn: Transaction,
        from start: [UInt8],
        unreadable: ((_ id: UnsafeRawBufferPointer) throws -> Void)? = nil,
        _ body: (_ id: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard let packs = schema.packs else { return }
        try txn.forEach(in: packs.locators, from: start) { key, value in
            let read = Result {
                try withPacked(try ChunkID(stored: key), at: try ChunkLocator(decoding: value), in: txn, packs: packs) {
                    try body(key, $0)
                }
            }
            switch read {
            case .success(let going): return going
            case .failure(let error):
                guard let unreadable, (error as? CofferError)?.code == .decode else { throw error }
                try unreadable(key)
                return true
            }
        }
    }

    /// Visits the id of every record, on its own or packed, without reading any.
    package func forEachID(in txn: Transaction, _ body: (_ id: UnsafeRawBufferPointer) throws -> Void) throws {
        try txn.forEach(in: schema.chunks) { key, _ in
            try body(key)
            return true
        }
        guard let packs = schema.packs else { return }
        try txn.forEach(in: packs.locators) { key, _ in
            try body(key)
            return true
        }
    }

    /// What is wrong with the packs, for `verify`: a pack whose directory does not parse or whose
    /// usage entry disagrees with the records whose locators point into it, a locator pointing outside
    /// its pack's records or at a pack that is not there.
    package func packProblems(in txn: Transaction) throws -> [String] {
        guard let packs = schema.packs else { return [] }
        var problems: [String] = []
        var live: [UInt64: UInt64] = [:]
        var sizes: [UInt64: Int] = [:]
        try txn.forEach(in: packs.packs) { key, value in
            let number = ChunkLocator.pack(ofKey: key) ?? 0
            switch Result(catching: { () throws(CofferError) in try ChunkPack.entries(of: value) }) {
            case .success(let entries): sizes[number] = entries.reduce(0) { $0 + $1.length }
            case .failure(let error): problems.append("chunk pack \(number): \(error.message)")
            }
            return true
        }
        var stray = 0
        try txn.forEach(in: packs.locators) { _, value in
            guard let locator = try? ChunkLocator(decoding: value),
                let size = sizes[locator.pack], Int(locator.offset) + Int(locator.length) <= size
            else {
                stray += 1
                return true
            }
            live[locator.pack, default: 0] += UInt64(locator.length)
            return true
        }
        if stray > 0 {
            problems.append("\(stray) packed chunks point outside their packs, or at packs that are missing")
        }
        try txn.forEach(in: packs.usage) { key, value in
            let number = ChunkLocator.pack(ofKey: key) ?? 0
            guard let usage = try? PackUsage(decoding: value), sizes[number].map({ UInt64($0) }) == usage.total,
                usage.live == live[number] ?? 0
            else {
                problems.append("chunk pack \(number)'s usage entry disagrees with the records it holds")
                return true
            }
            return true
        }
        return problems
    }

    private func withPacked<R>(
        _ id: ChunkID,
        at locator: ChunkLocator,
        in txn: Transaction,
        packs: ChunkPackTables,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        if let open = txn.existingState(OpenChunkPack.self), open.number == locator.pack {
            guard let result = try open.withRecord(id, body) else { throw Self.missingPack }
            return result
        }
        let found = try txn.withValue(packs.packs, key: ChunkLocator.key(locator.pack)) { pack in
            try body(try ChunkPack.record(in: pack, offset: Int(locator.offset), length: Int(locator.length)))
        }
        guard let found else { throw Self.missingPack }
        return found
    }

    // MARK: Writing

    /// Stores `record` as chunk `id`'s, in place of any record it had.
    package func put(_ id: ChunkID, _ record: [UInt8], in txn: Transaction) throws {
        guard let packs = schema.packs, record.count < ChunkPack.recordLimit else {
            try dropPacked(id, in: txn)
            try txn.put(schema.chunks, key: id, value: record)
            return
        }
        if try !txn.delete(schema.chunks, key: id) { try dropPacked(id, in: txn) }
        try append(id, record: record, in: txn, packs: packs)
    }

    /// Removes chunk `id`'s record; returns whether there was one.
    @discardableResult
    package func delete(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        if try txn.delete(schema.chunks, key: id) { return true }
        return try dropPacked(id, in: txn)
    }

    /// Rewrites packs with freed records in them, and gathers packs under half the target size into
    /// new ones, until about `budget` bytes have moved: what a compaction of the data file does
    /// first, in transactions of bounded size, so that it gives back all the space freed records
    /// held.
    ///
    /// - Returns: How many packs were rewritten, and whether any is left to rewrite.
    package func repack(in txn: Transaction, budget: Int = 64 << 20) throws -> (rewritten: Int, done: Bool) {
        guard let packs = schema.packs else { return (0, true) }
        var candidates: [(number: UInt64, live: Int, full: Bool)] = []
        try txn.forEach(in: packs.usage) { key, value in
            let usage = try PackUsage(decoding: value)
            if usage.live < usage.total || usage.total < UInt64(ChunkPack.targetSize / 2) {
                guard let number = ChunkLocator.pack(ofKey: key) else { return true }
                candidates.append((number, Int(usage.live), usage.live == usage.total))
            }
            return true
        }
        // A pack whose directory is damaged cannot be rewritten (`verify` names it).
        candidates = try candidates.filter { candidate in
            try txn.withValue(packs.packs, key: ChunkLocator.key(candidate.number)) { pack in
                (try? ChunkPack.entries(of: pack)) != nil
            } ?? false
        }
        // A lone small pack is left alone: rewriting it would only renumber it.
        if candidates.count == 1, candidates[0].full { return (0, true) }
        var moved = 0
        var rewritten = 0
        for candidate in candidates {
            // Two at least, so that two small packs larger together than the budget still merge.
            if rewritten >= 2, moved + candidate.live > budget { return (rewritten, false) }
            try rewrite(candidate.number, in: txn, packs: packs)
            moved += candidate.live
            rewritten += 1
        }
        return (rewritten, rewritten == 0)
    }

    private func append(
        _ id: ChunkID,
        record: [UInt8],
        in txn: Transaction,
        packs: ChunkPackTables
    ) throws {
        let open = try openPack(in: txn, packs: packs)
        if open.size > 0, open.size + record.count > ChunkPack.targetSize { try store(open, in: txn, packs: packs) }
        let locator = open.add(id, record: record)
        try txn.put(packs.locators, key: id, value: locator.encoded)
    }

    /// The transaction's open pack, numbered after the last pack stored; made on first use.
    private func openPack(in txn: Transaction, packs: ChunkPackTables) throws -> OpenChunkPack {
        try txn.state {
            let last = try txn.lastKey(in: packs.packs).flatMap { key in
                key.withUnsafeBytes { ChunkLocator.pack(ofKey: $0) }
            }
            let open = OpenChunkPack(number: (last ?? 0) + 1)
            txn.beforeCommit { txn in try store(open, in: txn, packs: packs) }
            return open
        }
    }

    /// Stores the open pack, if it holds anything, and starts the next.
    private func store(_ open: OpenChunkPack, in txn: Transaction, packs: ChunkPackTables) throws {
        guard !open.isEmpty else { return }
        let closed = open.close()
        let key = ChunkLocator.key(closed.number)
        try txn.put(packs.packs, key: key, reserving: closed.storedSize) { closed.write(into: $0) }
        try txn.put(packs.usage, key: key, value: PackUsage(live: closed.size, total: closed.size).encoded)
        for (id, locator) in closed.moved { try txn.put(packs.locators, key: id, value: locator.encoded) }
        try Vault.markFormat(in: txn, schema: schema, atLeast: Schema.packedFormatVersion)
    }

    @discardableResult
    private func dropPacked(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        guard let packs = schema.packs,
            let locator = try txn.withValue(packs.locators, key: id, { try ChunkLocator(decoding: $0) })
        else {
            return false
        }
        try txn.delete(packs.locators, key: id)
        if let open = txn.existingState(OpenChunkPack.self), open.number == locator.pack {
            open.drop(id)
            return true
        }
        let key = ChunkLocator.key(locator.pack)
        guard var usage = try txn.withValue(packs.usage, key: key, { try PackUsage(decoding: $0) }),
            usage.live >= UInt64(locator.length)
        else {
            throw Self.missingPack
        }
        usage.live -= UInt64(locator.length)
        if usage.live == 0 {
            try txn.delete(packs.packs, key: key)
            try txn.delete(packs.usage, key: key)
        } else if usage.live * 2 < usage.total, !txn.sparesSpace, try rewrite(locator.pack, in: txn, packs: packs) {
            return true
        } else {
            try txn.put(packs.usage, key: key, value: usage.encoded)
        }
        return true
    }

    /// Moves pack `number`'s live records (those whose locators still point into it) to the open
    /// pack, and deletes it; returns whether it did. A pack whose directory is damaged is left as it
    /// is (`verify` names it), so that freeing other records never fails on it.
    @discardableResult
    private func rewrite(_ number: UInt64, in txn: Transaction, packs: ChunkPackTables) throws -> Bool {
        let key = ChunkLocator.key(number)
        let read = try txn.withValue(packs.packs, key: key) { pack in
            Result { () throws -> [(ChunkID, [UInt8])] in
                try ChunkPack.entries(of: pack).compactMap { entry in
                    let stored = try txn.withValue(packs.locators, key: entry.id) { try ChunkLocator(decoding: $0) }
                    guard stored == ChunkLocator(pack: number, offset: entry.offset, length: entry.length) else {
                        return nil
                    }
                    return (entry.id, Array(pack[entry.offset..<entry.offset + entry.length]))
                }
            }
        }
        guard let read, case .success(let live) = read else { return false }
        try txn.delete(packs.packs, key: key)
        try txn.delete(packs.usage, key: key)
        for (id, record) in live { try append(id, record: record, in: txn, packs: packs) }
        return true
    }

    private static let missingPack = CofferError(
        .decode,
        "a packed chunk's pack is missing or does not hold it; the vault is damaged; \(run: .verify)"
    )
}

/// A pack's live and total record bytes (the value of the `chunkPackUsage` table, 16 bytes).
private struct PackUsage {
    var live: UInt64
    var total: UInt64

    init(live: Int, total: Int) {
        self.live = UInt64(live)
        self.total = UInt64(total)
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a chunk pack's usage entry")
        live = try reader.readUInt64()
        total = try reader.readUInt64()
        try reader.finish()
        guard live <= total else {
            throw CofferError(
                .decode,
                "a chunk pack's usage entry counts more live bytes than it holds; the vault is damaged"
            )
        }
    }

    var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(live)
        writer.write(total)
        return writer.bytes
    }
}

/// The tables of packed chunk records (docs/FORMAT.md, "Chunk packs").
package struct ChunkPackTables: Sendable {
    /// The table names, in creation order.
    package static let names = ["packedChunks", "chunkPacks", "chunkPackUsage"]

    /// Chunk id → ``ChunkLocator``.
    package let locators: Table
    /// Pack number (big-endian) → ``ChunkPack``.
    package let packs: Table
    /// Pack number → live and total record bytes.
    package let usage: Table

    package init(_ tables: [Table]) {
        (locators, packs, usage) = (tables[0], tables[1], tables[2])
    }
}
