/// How sync reaches one tier's syncable records: the one seam between Sync (above) and a tier (below).
/// Each tier implements it in its own folder (`KeychainSyncedRecords`, `BlobSyncedRecords`,
/// `SnapshotSyncedRecords`), so the exporter and importer never switch on a record's kind to call
/// into a tier's internals. Every method runs inside a transaction its caller owns.
package protocol SyncedRecords {
    /// The kind of record this tier keeps.
    var kind: SyncRecordKind { get }
    /// The table that holds the records, keyed by record id.
    var table: Table { get }

    /// Calls `body` with each chunk the record stored under `id` references, once per occurrence;
    /// nothing when there is no such record.
    func forEachReference(
        id: [UInt8],
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws

    /// Calls `body` with each chunk that holds the structure of a record, not its content: list
    /// chunks, and a snapshot's tree. Of `stored`, an incoming record to be kept under `id`, or when
    /// `nil` of the record stored under `id` now (nothing when there is none). Releasing the record
    /// reads them, so they stay in the vault when content is offloaded.
    func forEachStructureChunk(
        id: [UInt8],
        stored: [UInt8]?,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws

    /// Visits the chunks an incoming record (`stored`, to be kept under `id`) references, as far as
    /// the chunks here let it see (a missing list chunk hides the entries it lists); `visit` says
    /// whether each is here.
    ///
    /// - Returns: The chunks met that are not here, in the order met.
    func walkReferences(
        id: [UInt8],
        stored: [UInt8],
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool
    ) throws -> [ChunkID]

    /// A check of the chunk records an incoming record (`stored`, to be kept under `id`) references,
    /// when they are named and sealed with keys agreed per write (`completeUnlessOpen`: a write-only
    /// client's), which only the record gives; `nil` for a record whose chunks are named with the
    /// group's keys (an import checks those as they arrive) or that references none. The check
    /// throws ``CofferError`` `.decode` for a chunk record that does not hold what its id names.
    func perWriteChunkCheck(id: [UInt8], stored: [UInt8]) throws -> ChunkRecordCheck?

    /// Puts an imported record's winning version in place, its chunks' references already taken, or
    /// removes the record when `stored` is `nil`, releasing what the version it replaces held. Does not
    /// write the change log (the importer logs the version it applied).
    ///
    /// - Returns: What else the install changed for the import's summary.
    func install(id: [UInt8], stored: [UInt8]?, in txn: Transaction) throws -> SyncInstallOutcome

    /// What the local journal keeps of a record an import changes: of `stored` (arriving), or when
    /// `nil` (a deletion) of the record stored under `id` now; `nil` when it cannot be opened.
    func describe(id: [UInt8], stored: [UInt8]?, in txn: Transaction) -> LocalJournal.Description?
}

/// Checks a chunk record, as stored, against the chunk's id (``SyncedRecords/perWriteChunkCheck(id:stored:)``).
package typealias ChunkRecordCheck = (ChunkID, UnsafeRawBufferPointer) throws(CofferError) -> Void

/// What installing a record changed besides the record itself.
package struct SyncInstallOutcome {
    /// Names device-bound records were moved to, making room for a syncable one of the same name.
    package var renamedDeviceBound: [String] = []

    package init(renamedDeviceBound: [String] = []) {
        self.renamedDeviceBound = renamedDeviceBound
    }
}
