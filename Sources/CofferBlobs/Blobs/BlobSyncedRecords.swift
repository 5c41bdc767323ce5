/// The blob tier's side of sync (``SyncedRecords``): a manifest references its list chunks and
/// content chunks; an imported syncable blob takes its name, moving a device-bound blob of that name
/// aside to `NAME (device-bound N)`.
package struct BlobSyncedRecords: SyncedRecords {
    package let schema: Schema
    package let keys: KeyRing
    package let coder: ChunkRecord.Coder

    package init(schema: Schema, keys: KeyRing, coder: ChunkRecord.Coder) {
        self.schema = schema
        self.keys = keys
        self.coder = coder
    }

    package var kind: SyncRecordKind { .blob }
    package var table: Table { schema.blobs }
    private var store: BlobStore { BlobStore(schema: schema) }

    package func forEachReference(
        id: [UInt8],
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {
        guard let manifest = try open(id: id, in: txn) else { return }
        let chunkKeys = try ChunkKeys(content: manifest, keys: keys)
        try store.forEachReference(of: manifest, keys: chunkKeys, coder: coder, in: txn, body)
    }

    /// A manifest's structure is its list chunks (an indirect list), named in the manifest itself.
    package func forEachStructureChunk(
        id: [UInt8],
        stored: [UInt8]?,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {
        let manifest =
            try stored.map { stored throws(CofferError) in
                try stored.withBytes { (raw) throws(CofferError) in
                    try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
                }
            } ?? open(id: id, in: txn)
        guard let manifest, case .indirect(let lists) = manifest.chunks else { return }
        for reference in lists { try body(reference.id) }
    }

    package func walkReferences(
        id: [UInt8],
        stored: [UInt8],
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool
    ) throws -> [ChunkID] {
        let manifest = try stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        let chunkKeys = try ChunkKeys(content: manifest, keys: keys)
        return try store.content.missingReferences(
            of: [manifest.chunks],
            keys: chunkKeys,
            coder: coder,
            in: txn,
            visit: visit
        )
    }

    package func perWriteChunkCheck(id: [UInt8], stored: [UInt8]) throws -> ChunkRecordCheck? {
        // The clear header names the level (authenticated when the record is opened): most records
        // are not sealed per write, and are not opened for this.
        let header = try stored.withBytes { (raw) throws(CofferError) in
            try SealedRecord.peekHeader(raw, versions: BlobManifest.readableVersions, what: "a blob manifest")
        }
        guard header.level.isSealedToClassKey else { return nil }
        let manifest = try stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        return try ChunkRecord.perWriteCheck(of: manifest, keys: keys, coder: coder)
    }

    package func install(id: [UInt8], stored: [UInt8]?, in txn: Transaction) throws -> SyncInstallOutcome {
        let store = store
        let existing = try open(id: id, in: txn)
        guard let stored else {
            if let existing {
                try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
            }
            return SyncInstallOutcome()
        }
        let manifest = try stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        let expectedID = manifest.isDrop ? id : try BlobManifest.id(of: manifest.name, scope: .syncable, keys: keys)
        guard manifest.scope == .syncable, expectedID == id else {
            throw CofferError(.decode, "a blob in the bundle does not match its id or is not syncable; it was refused")
        }
        if manifest.level.isSealedToClassKey {
            try Vault.markFormat(in: txn, schema: schema, atLeast: Schema.sealedToClassKeyFormatVersion)
        }
        // A write-only client's blob has a random id and takes no name from anything.
        if manifest.isDrop {
            if let existing {
                try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
            }
            try txn.put(schema.blobs, key: id, value: stored)
            return SyncInstallOutcome()
        }
        // The new version's references were taken first (by the importer's claim): releasing the old
        // one's cannot free chunks both share.
        if let existing {
            try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
        }
        // A name is one blob: a device-bound blob of the same name moves aside to a conflict name,
        // keeping its content, and the synced one takes the name.
        var outcome = SyncInstallOutcome()
        let deviceID = try BlobManifest.id(of: manifest.name, scope: .deviceBound, keys: keys)
        if var deviceBound = try open(id: deviceID, in: txn) {
            let oldDescription = deviceBound.changeDescription
            let newName = try conflictName(for: manifest.name, in: txn)
            deviceBound.name = newName
            let newID = try BlobManifest.id(of: newName, scope: .deviceBound, keys: keys)
            try txn.delete(schema.blobs, key: deviceID)
            try txn.put(
                schema.blobs,
                key: newID,
                value: try deviceBound.seal(id: newID, keys: keys, cipher: coder.cipher)
            )
            outcome.renamedDeviceBound.append(newName)
            // A device-bound change: only the local journal hears of it.
            try ChangeLog.record(
                .blobDelete,
                recordID: deviceID,
                scope: .deviceBound,
                description: oldDescription,
                keys: keys,
                in: txn,
                schema: schema
            )
            try ChangeLog.record(
                .blobPut,
                recordID: newID,
                scope: .deviceBound,
                description: deviceBound.changeDescription,
                keys: keys,
                in: txn,
                schema: schema
            )
        }
        try txn.put(schema.blobs, key: id, value: stored)
        return outcome
    }

    /// A free name for a device-bound blob moving aside: `NAME (device-bound N)`.
    private func conflictName(for name: String, in txn: Transaction) throws -> String {
        for number in 1...1000 {
            let candidate = "\(name) (device-bound \(number))"
            guard (try? BlobManifest.validate(name: candidate)) != nil else { break }
            let taken = try [SyncScope.deviceBound, .syncable].contains { scope in
                try open(id: try BlobManifest.id(of: candidate, scope: scope, keys: keys), in: txn) != nil
            }
            if !taken { return candidate }
        }
        throw CofferError(
            .duplicateItem,
            "a synced blob '\(name)' arrived, and the device-bound blob of that name cannot be moved aside (no free name); rename it (\(InterfaceName.renameBlob)) and import again"
        )
    }

    package func describe(id: [UInt8], stored: [UInt8]?, in txn: Transaction) -> LocalJournal.Description? {
        guard let stored else { return (try? open(id: id, in: txn))??.changeDescription }
        return try? stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher).changeDescription
        }
    }

    private func open(id: [UInt8], in txn: Transaction) throws -> BlobManifest? {
        try store.manifest(id: id, keys: keys, cipher: coder.cipher, in: txn)
    }
}
