/// The tiers sync moves records of, each reached through its ``SyncedRecords``.
package struct SyncTiers {
    private let items: KeychainSyncedRecords
    private let blobs: BlobSyncedRecords
    private let snapshots: SnapshotSyncedRecords

    /// The three tiers of the vault whose tables are `schema`. `keychain` and its session are needed to
    /// install items (an import), not to read references (an export).
    package init(
        environment: Environment,
        schema: Schema,
        keys: KeyRing,
        coder: ChunkRecord.Coder,
        keychain: (keychain: Keychain, session: KeychainSession)? = nil
    ) {
        items = KeychainSyncedRecords(schema: schema, installer: keychain)
        blobs = BlobSyncedRecords(schema: schema, keys: keys, coder: coder)
        snapshots = SnapshotSyncedRecords(environment: environment, schema: schema, keys: keys, coder: coder)
    }

    /// The tier that keeps records of `kind`.
    package subscript(_ kind: SyncRecordKind) -> any SyncedRecords {
        switch kind {
        case .item: return items
        case .blob: return blobs
        case .snapshot: return snapshots
        }
    }
}
