/// The keychain's side of sync (``SyncedRecords``): items reference no chunks, and an imported item
/// is checked against its id (the blind index of its primary key) before it is stored.
package struct KeychainSyncedRecords: SyncedRecords {
    package let schema: Schema
    /// The keychain and an open session, to install items; `nil` for a caller that only reads
    /// references (an export).
    package let installer: (keychain: Keychain, session: KeychainSession)?

    package init(schema: Schema, installer: (keychain: Keychain, session: KeychainSession)?) {
        self.schema = schema
        self.installer = installer
    }

    package var kind: SyncRecordKind { .item }
    package var table: Table { schema.items }

    package func forEachReference(
        id: [UInt8],
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {}

    package func forEachStructureChunk(
        id: [UInt8],
        stored: [UInt8]?,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {}

    package func walkReferences(
        id: [UInt8],
        stored: [UInt8],
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool
    ) throws -> [ChunkID] { [] }

    package func perWriteChunkCheck(id: [UInt8], stored: [UInt8]) throws -> ChunkRecordCheck? { nil }

    package func install(id: [UInt8], stored: [UInt8]?, in txn: Transaction) throws -> SyncInstallOutcome {
        guard let (keychain, session) = installer else {
            throw CofferError(.internalError, "installing an item needs a keychain session")
        }
        if let existing = try keychain.loadRecord(id: id, session: session, in: txn) {
            try keychain.removeRecord(existing, session: session, in: txn, logging: false)
        }
        guard let stored else { return SyncInstallOutcome() }
        let item = try stored.withBytes { (raw) throws(KeychainError) in
            let header = try ItemRecord.Header(stored: raw)
            guard header.scope == .syncable else {
                throw KeychainError(.decode, "the bundle holds an item that is not syncable; it was refused")
            }
            let key = try session.itemKey(header)
            return try ItemRecord.open(raw, id: id, header: header, key: key, cipher: session.cipher)
        }
        guard try session.index(.syncable).id(of: item) == id else {
            throw CofferError(
                .decode,
                "an item in the bundle does not match its id; the bundle was not made by this sync group"
            )
        }
        try keychain.store(
            Keychain.PreparedItem(item: item, id: id, record: stored),
            session: session,
            in: txn,
            logging: false
        )
        return SyncInstallOutcome()
    }

    package func describe(id: [UInt8], stored: [UInt8]?, in txn: Transaction) -> LocalJournal.Description? {
        guard let (keychain, session) = installer else { return nil }
        guard let stored else {
            return (try? keychain.loadRecord(id: id, session: session, in: txn))??.item
                .journalDescription
        }
        let item = try? stored.withBytes { (raw) throws(KeychainError) in
            let header = try ItemRecord.Header(stored: raw)
            return try ItemRecord.open(
                raw,
                id: id,
                header: header,
                key: try session.itemKey(header),
                cipher: session.cipher
            )
        }
        return item.map(ItemChangeDescription.describe)
    }
}

extension KeychainItem {
    /// What the local journal keeps of this item.
    fileprivate var journalDescription: LocalJournal.Description { ItemChangeDescription.describe(self) }
}
