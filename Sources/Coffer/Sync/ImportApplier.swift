/// Applies imported records inside the import's final transaction, by last writer wins: a record
/// replaces this vault's only when its version (hybrid logical clock stamp, then device id) is
/// greater, deletions included, so vaults that exchange the same changes in any order end the same.
/// An applied record keeps its version and goes into this vault's change log, so it travels on to
/// this vault's own peers.
struct ImportApplier {
    let txn: Transaction
    let vault: Vault
    let keys: KeyRing
    let keychain: Keychain
    let session: KeychainSession
    let coder: ChunkRecord.Coder
    private(set) var summary: ImportSummary

    private var schema: Schema { vault.schema }
    private var blobStore: BlobStore { BlobStore(schema: vault.schema) }
    private var snapshotStore: SnapshotStore {
        SnapshotStore(environment: vault.environment, schema: vault.schema, keys: keys)
    }

    init(txn: Transaction, vault: Vault, keys: KeyRing, keychain: Keychain, summary: ImportSummary) throws(CofferError)
    {
        self.txn = txn
        self.vault = vault
        self.keys = keys
        self.keychain = keychain
        self.summary = summary
        session = try KeychainSession(keychain)
        coder = try ChunkRecord.Coder()
    }

    /// Applies one record if its version wins.
    mutating func apply(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry, stored: [UInt8]) throws {
        if let local = try VersionEntry.load(kind, id: id, in: txn, schema: schema) {
            // Two devices changed the record: last writer wins, either way round.
            if local.version.device != entry.version.device { summary.conflicts += 1 }
            guard entry.version > local.version else {
                summary.skipped += 1
                return
            }
        }
        switch kind {
        case .item: try applyItem(id: id, stored: entry.isDeleted ? nil : stored)
        case .blob: try applyBlob(id: id, stored: entry.isDeleted ? nil : stored)
        case .snapshot: try applySnapshot(id: id, stored: entry.isDeleted ? nil : stored)
        }
        try ChangeLog.append(
            ChangeLog.Kind(kind, deleted: entry.isDeleted),
            recordID: id,
            version: entry.version,
            in: txn,
            schema: schema
        )
        summary.applied.count(kind, deleted: entry.isDeleted)
    }

    // MARK: Kinds

    private func applyItem(id: [UInt8], stored: [UInt8]?) throws {
        if let existing = try keychain.loadRecord(id: id, session: session, in: txn) {
            try keychain.removeRecord(existing, session: session, in: txn, logging: false)
        }
        guard let stored else { return }
        let item = try stored.withBytes { (raw) throws(KeychainError) in
            let header = try ItemRecord.Header(stored: raw)
            guard header.scope == .syncable else {
                throw KeychainError(.decode, "the bundle holds an item that is not syncable; it was refused")
            }
            let key = try session.itemKey(header.scope, header.accessibility)
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
    }

    private mutating func applyBlob(id: [UInt8], stored: [UInt8]?) throws {
        let store = blobStore
        if let existing = try openBlob(id: id) {
            try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
        }
        guard let stored else { return }
        let manifest = try stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        guard manifest.scope == .syncable, try BlobManifest.id(of: manifest.name, scope: .syncable, keys: keys) == id
        else {
            throw CofferError(.decode, "a blob in the bundle does not match its id or is not syncable; it was refused")
        }
        // A name is one blob: a device-bound blob of the same name gives way to the synced one.
        let deviceID = try BlobManifest.id(of: manifest.name, scope: .deviceBound, keys: keys)
        if let deviceBound = try openBlob(id: deviceID) {
            try store.remove(id: deviceID, manifest: deviceBound, keys: keys, coder: coder, in: txn)
            summary.replacedDeviceBoundBlobs += 1
        }
        let chunkKeys = try ChunkKeys(scope: manifest.scope, level: manifest.level, keys: keys)
        try store.forEachReference(of: manifest, keys: chunkKeys, coder: coder, in: txn) {
            (chunkID) throws(CofferError) in
            try retain(chunkID, for: "blob '\(manifest.name)'")
        }
        try txn.put(schema.blobs, key: id, value: stored)
    }

    private mutating func applySnapshot(id: [UInt8], stored: [UInt8]?) throws {
        let store = snapshotStore
        let chunks = blobStore.chunks
        if let existing = try openSnapshot(id: id) {
            // Gathered first: releasing while reading could free a tree chunk before it is read.
            var references: [[UInt8]] = []
            try store.forEachReference(of: existing, in: txn, coder: coder) { references.append($0) }
            for chunkID in references { try chunks.release(chunkID, in: txn) }
            try txn.delete(schema.snapshots, key: id)
        }
        guard let stored else { return }
        let record = try stored.withBytes { (raw) throws(CofferError) in
            try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        guard record.scope == .syncable else {
            throw CofferError(.decode, "the bundle holds a snapshot that is not syncable; it was refused")
        }
        try store.forEachReference(of: record, in: txn, coder: coder) { (chunkID) throws(CofferError) in
            try retain(chunkID, for: "snapshot \(record.info.shortID) ('\(record.name)')")
        }
        try txn.put(schema.snapshots, key: id, value: stored)
    }

    // MARK: Helpers

    /// Takes a reference to a chunk a record needs, which must be in the bundle or already here.
    private func retain(_ chunkID: [UInt8], for what: String) throws(CofferError) {
        let chunks = blobStore.chunks
        try storage("applying the bundle") {
            guard try chunks.retainIfStored(chunkID, in: txn) else {
                throw CofferError(
                    .decode,
                    "the bundle is incomplete: \(what) needs data that is neither in the bundle nor in this vault "
                        + "(it was sent in an earlier bundle this vault has not imported, or deleted here since); "
                        + "import the earlier bundles first, or make a full export (without --peer) and import that"
                )
            }
        }
    }

    private func openBlob(id: [UInt8]) throws -> BlobManifest? {
        try blobStore.manifest(id: id, keys: keys, cipher: coder.cipher, in: txn)
    }

    private func openSnapshot(id: [UInt8]) throws -> SnapshotRecord? {
        try snapshotStore.record(id: id, cipher: coder.cipher, in: txn)
    }
}
