/// The content engine's tables working together: chunks in the ``ChunkStore`` (with their
/// reference counts) and writes in progress in ``PendingWrites``. Blobs and snapshots both keep their
/// contents here. Every method runs inside a transaction its caller owns.
package struct ContentStore {
    package let schema: Schema

    package init(schema: Schema) { self.schema = schema }
    package var chunks: ChunkStore { ChunkStore(schema: schema) }
    package var pending: PendingWrites { PendingWrites(schema: schema) }

    /// The entries of a list chunk, loaded in `txn`.
    package func listChunkEntries(
        _ reference: ListChunkReference,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction
    ) throws(CofferError) -> [ChunkEntry] {
        let plaintext = try storage("reading a chunk list") {
            try chunks.load(reference.id, keys: keys, coder: coder, in: txn)
        }
        guard let plaintext else {
            throw CofferError(.decode, "a list chunk of the blob is missing; \(run: .verify)")
        }
        return try ChunkList.entries(ofListChunk: plaintext, reference: reference)
    }

    /// Every chunk id a chunk list holds a reference to: its content chunks (once per occurrence) and
    /// its list chunks.
    package func forEachReference(
        of list: ChunkList,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws(CofferError) {
        if case .indirect(let references) = list {
            for reference in references { try body(reference.id) }
        }
        try list.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                try listChunkEntries(reference, keys: keys, coder: coder, in: txn)
            },
            { (entry, _) throws(CofferError) in
                try body(entry.id)
                return true
            }
        )
    }

    /// Visits the references of one chunk list, as far as the chunks here let it see: its list
    /// chunks, and the entries of those that are here; `visit` says whether a chunk is here, and
    /// `each` sees every entry met, in order, and whether it is here. A missing list chunk hides its
    /// entries, so `each` hears of a gap as the first of them would be missed. Appends the chunks that
    /// are not here to `missing`.
    package func walkReferences(
        of list: ChunkList,
        keys chunkKeys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool,
        missing: inout [ChunkID],
        each: (ChunkEntry, _ isHere: Bool) throws(CofferError) -> Void = { _, _ in }
    ) throws {
        var absent: [ChunkID] = []
        try list.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                guard try visit(reference.id) else {
                    absent.append(reference.id)
                    // Its entries are unknown: a reader of the list's content must stop here.
                    try each(ChunkEntry(id: reference.id, length: 0), false)
                    return []
                }
                return try storage("reading a chunk list") {
                    try listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                }
            },
            { (entry, _) throws(CofferError) in
                let here = try visit(entry.id)
                if !here { absent.append(entry.id) }
                try each(entry, here)
                return true
            }
        )
        missing += absent
    }

    /// The chunks `lists` reference that are not here, as ``walkReferences(of:keys:coder:in:visit:missing:each:)``
    /// finds them, list after list.
    package func missingReferences(
        of lists: [ChunkList],
        keys chunkKeys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool
    ) throws -> [ChunkID] {
        var missing: [ChunkID] = []
        for list in lists {
            try walkReferences(of: list, keys: chunkKeys, coder: coder, in: txn, visit: visit, missing: &missing)
        }
        return missing
    }
}
