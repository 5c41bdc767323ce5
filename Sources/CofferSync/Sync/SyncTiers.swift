/// The tiers sync moves records of, each reached through its ``SyncedRecords``.
package struct SyncTiers {
    private let tiers: [any SyncedRecords]

    /// The three tiers of the vault whose tables are `schema`. `keychain` and its session are needed to
    /// install items (an import), not to read references (an export).
    package init(
        environment: Environment,
        schema: Schema,
        keys: KeyRing,
        coder: ChunkRecord.Coder,
        keychain: (keychain: Keychain, session: KeychainSession)? = nil
    ) {
        tiers = [
            KeychainSyncedRecords(schema: schema, installer: keychain),
            BlobSyncedRecords(schema: schema, keys: keys, coder: coder),
            SnapshotSyncedRecords(environment: environment, schema: schema, keys: keys, coder: coder),
        ]
    }

    /// The tier that keeps records of `kind`.
    package subscript(_ kind: SyncRecordKind) -> any SyncedRecords {
        tiers.first { $0.kind == kind }!
    }
}
