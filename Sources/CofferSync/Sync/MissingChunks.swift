/// The chunks a syncable record refers to, walked once: to find those this vault lacks (what a
/// want frame asks for), or to take the references an import needs while finding them.
///
/// The walk visits each reference the record holds, once per occurrence, in the order
/// each tier's ``SyncedRecords/walkReferences(id:stored:in:visit:)`` meets them: list chunks
/// and their entries, a snapshot's tree, then every file's chunks. A list chunk that is missing hides
/// the entries it lists, and a missing chunk of a snapshot's tree hides the rest of the tree: those are
/// asked for first, and the rest once they arrive.
package struct MissingChunks {
    package let txn: Transaction
    package let schema: Schema
    package let tiers: SyncTiers

    package init(txn: Transaction, schema: Schema, tiers: SyncTiers) {
        self.txn = txn
        self.schema = schema
        self.tiers = tiers
    }

    /// The chunks record `stored` of `kind` needs that are not stored here, in the order met.
    package func of(_ kind: SyncRecordKind, id: [UInt8], stored: [UInt8]) throws -> [ChunkID] {
        let chunks = ChunkStore(schema: schema)
        return try tiers[kind].walkReferences(id: id, stored: stored, in: txn) { (chunk) throws(CofferError) in
            try storage("checking a record's chunks") { try chunks.contains(chunk, in: txn) }
        }
    }

    /// Takes one reference to each chunk the record needs that is here, once per occurrence, as the
    /// record will hold them, and returns those taken and those missing. With nothing missing the
    /// record's references are all in place; otherwise the taken ones keep what has arrived while the
    /// record is held back (``HeldRecords``).
    package func claim(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8]
    ) throws -> (taken: [ChunkID], missing: [ChunkID]) {
        let chunks = ChunkStore(schema: schema)
        var taken: [ChunkID] = []
        let missing = try tiers[kind].walkReferences(id: id, stored: stored, in: txn) { (chunk) throws(CofferError) in
            let here = try storage("taking a record's chunks") { try chunks.retainIfStored(chunk, in: txn) }
            if here { taken.append(chunk) }
            return here
        }
        return (taken, missing)
    }
}
