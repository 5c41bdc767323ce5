package import Foundation

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
    ///
    /// Each chunk of `unchecked` (sealed with keys agreed per write, arrived in the import's bundle
    /// and not checked yet) that the record takes is checked against its id with the keys of the
    /// record's write, and leaves `unchecked`; a record of a write of another kind may not take one.
    ///
    /// - Throws: ``CofferError`` `.decode` for a chunk record that does not hold what its id names.
    package func claim(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8],
        unchecked: UncheckedChunks
    ) throws -> (taken: [ChunkID], missing: [ChunkID]) {
        let chunks = ChunkStore(schema: schema)
        let check = unchecked.isEmpty ? nil : try tiers[kind].perWriteChunkCheck(id: id, stored: stored)
        var taken: [ChunkID] = []
        let missing = try tiers[kind].walkReferences(id: id, stored: stored, in: txn) { (chunk) throws(CofferError) in
            let here = try storage("taking a record's chunks") { try chunks.retainIfStored(chunk, in: txn) }
            if here { taken.append(chunk) }
            if here, unchecked.contains(chunk) {
                let prefix = chunk.bytes.prefix(6).hexEncoded
                guard let check else {
                    throw unchecked.refusal(
                        "refers to a chunk (id \(prefix)…) sealed with a write-only client's keys from a record of another write, which cannot have them",
                        underlying: nil
                    )
                }
                let record = try storage("checking a chunk against its id") {
                    try chunks.withRecord(chunk, in: txn) { Array($0) }
                }
                do throws(CofferError) {
                    try record?.withBytes { (stored) throws(CofferError) in try check(chunk, stored) }
                } catch  where error.code == .decode {
                    throw unchecked.refusal(
                        "carries a chunk record (id \(prefix)…), sealed with a write-only client's keys, that does not hold what its id names (\(error.message))",
                        underlying: error
                    )
                }
                unchecked.remove(chunk)
            }
            return here
        }
        return (taken, missing)
    }
}

/// The chunks an import stored that are sealed with keys agreed per write (a write-only client's):
/// only the record of their write can check them, so each is checked when a record takes it
/// (``MissingChunks/claim(_:id:stored:unchecked:)``). Those no record takes go with the import's
/// staging references.
package final class UncheckedChunks {
    /// The device whose bundle brought them.
    package let source: UUID
    private var chunks: Set<ChunkID> = []

    package init(source: UUID) { self.source = source }

    package var isEmpty: Bool { chunks.isEmpty }
    package func contains(_ chunk: ChunkID) -> Bool { chunks.contains(chunk) }
    package func insert(_ chunk: ChunkID) { chunks.insert(chunk) }
    package func remove(_ chunk: ChunkID) { chunks.remove(chunk) }

    /// Whether `site` is that of a chunk here still to be checked: not to be noted before it is.
    package func awaitsCheck(_ site: BundleChunkSite) -> Bool {
        site.perWriteDigest != nil && chunks.contains(site.id)
    }

    /// The refusal of the bundle, which `what` says is wrong with.
    func refusal(_ what: String, underlying: CofferError?) -> CofferError {
        let device = source.uuidString.lowercased()
        return CofferError(
            .decode,
            "the bundle from device \(device) \(what): a modified client made it, or it is damaged. Its records were refused. If you do not know that device, or it was stolen, revoke it (\(InterfaceName.revoke(device)))",
            underlying: underlying
        )
    }
}
