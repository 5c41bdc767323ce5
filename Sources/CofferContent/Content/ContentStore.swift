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
            throw CofferError(.decode, "a list chunk of the blob is missing; run coffer verify")
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
        _ body: ([UInt8]) throws(CofferError) -> Void
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
}
