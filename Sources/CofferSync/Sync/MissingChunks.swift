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
    /// Chunks sealed with keys agreed per write (a write-only client's) are checked as they are
    /// taken: a record of such a write checks each chunk it takes with its write's keys (fetched
    /// from the store if it is offloaded); a record of any other
    /// kind may not take one. A member can make up a record that names another write's chunks, and
    /// one that arrived with them would refuse the honest bundles that carry them later (red team
    /// round 43, F1 and F2). On a refusal the references taken are given back.
    ///
    /// - Throws: ``ForgedChunkClaim`` for a chunk the record may not take.
    package func claim(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8],
        unchecked: UncheckedChunks
    ) throws -> (taken: [ChunkID], missing: [ChunkID]) {
        let chunks = ChunkStore(schema: schema)
        let check = try tiers[kind].perWriteChunkCheck(id: id, stored: stored)
        let content = StoreContent(schema: schema)
        var taken: [ChunkID] = []
        let walk = Result {
            try tiers[kind].walkReferences(id: id, stored: stored, in: txn) { (chunk) throws(CofferError) in
                let here = try storage("taking a record's chunks") { try chunks.retainIfStored(chunk, in: txn) }
                guard here else { return false }
                taken.append(chunk)
                try Self.mayTake(chunk, check: check, unchecked: unchecked, chunks: chunks, content: content, txn: txn)
                return true
            }
        }
        switch walk {
        case .success(let missing):
            return (taken, missing)
        case .failure(let error):
            for chunk in taken { try chunks.release(chunk, in: txn) }
            throw error
        }
    }

    /// Checks that a record may take `chunk` (see ``claim(_:id:stored:unchecked:)``).
    private static func mayTake(
        _ chunk: ChunkID,
        check: ChunkRecordCheck?,
        unchecked: UncheckedChunks,
        chunks: ChunkStore,
        content: StoreContent?,
        txn: Transaction
    ) throws(CofferError) {
        let prefix = chunk.bytes.prefix(6).hexEncoded
        let arrived = unchecked.contains(chunk)
        guard let check else {
            let sealedPerWrite = try storage("checking a record's chunks") {
                try arrived
                    || chunks.schema.records.withRecord(chunk, in: txn) { StoreContent.isSealedPerWrite($0) }
                        ?? content?.isSealedPerWrite(chunk, in: txn) ?? false
            }
            guard sealedPerWrite else { return }
            throw ForgedChunkClaim(
                arrived: arrived,
                refusal: unchecked.refusal(
                    "carries a record that refers to a chunk (id \(prefix)…) sealed with a write-only client's keys, which only a record of that write has",
                    underlying: nil
                )
            ).asCofferError
        }
        // Checked again for each record that takes it: another record of another write (made up)
        // may name the chunks a genuine one took before it.
        try checkSealedPerWrite(chunk, check: check, unchecked: unchecked, chunks: chunks, txn: txn)
    }

    /// Checks the chunks of `unchecked` (arrived with this bundle) that the incoming record of a
    /// write-only client's write names, with its write's keys, without taking them: what a record of
    /// this bundle does before a made-up newer version held back is tried against them (red team
    /// round 44, G1).
    ///
    /// - Throws: ``ForgedChunkClaim`` for a chunk that does not check.
    package func checkArrived(_ kind: SyncRecordKind, id: [UInt8], stored: [UInt8], unchecked: UncheckedChunks) throws {
        guard !unchecked.isEmpty, let check = try tiers[kind].perWriteChunkCheck(id: id, stored: stored) else { return }
        let chunks = ChunkStore(schema: schema)
        _ = try tiers[kind].walkReferences(id: id, stored: stored, in: txn) { (chunk) throws(CofferError) in
            let here = try storage("checking a record's chunks") { try chunks.contains(chunk, in: txn) }
            if here, unchecked.contains(chunk) {
                try Self.checkSealedPerWrite(chunk, check: check, unchecked: unchecked, chunks: chunks, txn: txn)
            }
            return here
        }
    }

    /// Checks `chunk`, sealed per write, with a record's `check`: it leaves `unchecked` when it passes.
    private static func checkSealedPerWrite(
        _ chunk: ChunkID,
        check: ChunkRecordCheck,
        unchecked: UncheckedChunks,
        chunks: ChunkStore,
        txn: Transaction
    ) throws(CofferError) {
        let prefix = chunk.bytes.prefix(6).hexEncoded
        let arrived = unchecked.contains(chunk)
        let record = try storage("checking a chunk against its id") {
            try chunks.withRecord(chunk, in: txn) { Array($0) }
        }
        do throws(CofferError) {
            try record?.withBytes { (stored) throws(CofferError) in try check(chunk, stored) }
        } catch  where error.code == .decode {
            throw ForgedChunkClaim(
                arrived: arrived,
                refusal: unchecked.refusal(
                    arrived
                        ? "carries a chunk record (id \(prefix)…), sealed with a write-only client's keys, that does not hold what its id names (\(error.message))"
                        : "carries a record that refers to a chunk (id \(prefix)…) of a write-only client's write that its keys do not open (\(error.message))",
                    underlying: error
                )
            ).asCofferError
        }
        unchecked.noteChecked(chunk)
    }
}

/// A chunk a record may not take (``MissingChunks/claim(_:id:stored:unchecked:)``): sealed with the
/// keys of a write-only client's write the record is not of. When the chunk arrived in the bundle
/// being imported, the bundle carries a forged chunk record; otherwise the record itself was made up
/// (by a modified client), which for a record held back since an earlier import the importer drops
/// rather than refuse the bundle that completed it (``ImportApplier``).
package struct ForgedChunkClaim: Error {
    /// Whether the chunk arrived in the bundle being imported (not checked before).
    package let arrived: Bool
    /// The refusal of the bundle being imported.
    package let refusal: CofferError

    /// This claim as the refusal it carries, keeping it as its underlying error so that an importer
    /// can tell it apart (``init(_:)``).
    var asCofferError: CofferError { CofferError(refusal.code, refusal.message, underlying: self) }

    /// The claim a refusal carries, if it is one.
    package init?(_ error: any Error) {
        guard let claim = (error as? CofferError)?.underlyingError as? ForgedChunkClaim else { return nil }
        self = claim
    }

    init(arrived: Bool, refusal: CofferError) {
        self.arrived = arrived
        self.refusal = refusal
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
    /// Notes that `chunk` was checked with a record's keys: it is no longer unchecked.
    package func noteChecked(_ chunk: ChunkID) { chunks.remove(chunk) }

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
