import Foundation

/// Applies imported records inside the import's final transaction, by last writer wins: a record
/// replaces this vault's only when its version (hybrid logical clock stamp, then device id) is
/// greater, deletions included, so vaults that exchange the same changes in any order end the same.
/// An applied record keeps its version and goes into this vault's change log, so it travels on to
/// this vault's own peers.
package struct ImportApplier {
    package let txn: Transaction
    package let vault: Vault
    package let keys: KeyRing
    package let keychain: Keychain
    package let session: KeychainSession
    package let coder: ChunkRecord.Coder
    private(set) var summary: ImportSummary

    private var schema: Schema { vault.schema }
    private var blobStore: BlobStore { BlobStore(schema: vault.schema) }
    private var snapshotStore: SnapshotStore {
        SnapshotStore(environment: vault.environment, schema: vault.schema, keys: keys)
    }

    package init(
        txn: Transaction,
        vault: Vault,
        keys: KeyRing,
        keychain: Keychain,
        summary: ImportSummary
    ) throws(CofferError) {
        self.txn = txn
        self.vault = vault
        self.keys = keys
        self.keychain = keychain
        self.summary = summary
        session = try KeychainSession(keychain)
        coder = try ChunkRecord.Coder()
    }

    /// Applies one record if its version wins and everything it needs is here; holds it back (see
    /// ``HeldRecords``) if chunks it needs are missing, and refuses it if its clock stamp lies beyond
    /// the configured skew ahead of this machine's clock.
    package mutating func apply(
        _ kind: SyncRecordKind,
        id: [UInt8],
        entry: VersionEntry,
        stored: [UInt8],
        body: [UInt8]
    )
        throws
    {
        let bound = UInt64(max(0, vault.configuration.maximumClockSkew.components.seconds)) * 1000 << 16
        guard entry.version.stamp <= HybridClock.wallStamp() + bound else {
            summary.refusedFutureRecords += 1
            if let device = try? UUID(storedBytes: entry.version.device, what: "device id") {
                let date = HybridClock.date(of: entry.version.stamp)
                summary.devicesAhead[device] = max(summary.devicesAhead[device] ?? date, date)
            }
            return
        }
        guard try wins(kind, id: id, entry: entry) else { return }
        if try !placeOrHold(HeldRecords.Held(kind: kind, id: id, entry: entry, stored: stored, body: body)) {
            summary.held += 1
        }
    }

    /// Applies the records held back by earlier imports whose chunks are here now, and drops those a
    /// newer version has overtaken. Runs after the bundle's own records, in the same transaction.
    package mutating func applyHeld() throws {
        let held = HeldRecords(schema: schema)
        for record in try held.all(in: txn) {
            if let local = try VersionEntry.load(record.kind, id: record.id, in: txn, schema: schema),
                local.version >= record.entry.version
            {
                try held.release(record.kind, id: record.id, in: txn)
                continue
            }
            if try placeOrHold(record) { summary.appliedFromHeld += 1 }
        }
        summary.held = try held.all(in: txn).count
    }

    /// Puts a winning record in place if every chunk it needs is here, taking its references in the
    /// same walk that finds what is missing; otherwise holds it back, keeping the references it could
    /// take (what has arrived stays, and a snapshot's tree, once here, shows which file chunks are
    /// still needed). A version already waiting that is newer keeps waiting instead.
    ///
    /// - Returns: Whether the record was placed.
    private mutating func placeOrHold(_ record: HeldRecords.Held) throws -> Bool {
        let held = HeldRecords(schema: schema)
        let waiting = try held.held(record.kind, id: record.id, in: txn)
        if let waiting, waiting.entry.version > record.entry.version { return false }
        var taken: [[UInt8]] = []
        var missing: [[UInt8]] = []
        if !record.entry.isDeleted {
            (taken, missing) = try MissingChunks(txn: txn, schema: schema, keys: keys, coder: coder)
                .claim(record.kind, id: record.id, stored: record.stored)
        }
        // Only after the claim: releasing first could free a chunk the claim then finds missing.
        if waiting != nil { try held.release(record.kind, id: record.id, in: txn) }
        guard missing.isEmpty else {
            try held.hold(record, keeping: taken, in: txn)
            return false
        }
        try place(record.kind, id: record.id, entry: record.entry, stored: record.stored)
        return true
    }

    /// Whether `entry` beats this vault's version of the record (counting conflicts and skips).
    private mutating func wins(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry) throws -> Bool {
        guard let local = try VersionEntry.load(kind, id: id, in: txn, schema: schema) else { return true }
        // Two devices changed the record: last writer wins, either way round.
        if local.version.device != entry.version.device { summary.conflicts += 1 }
        guard entry.version > local.version else {
            summary.skipped += 1
            return false
        }
        return true
    }

    /// Puts a winning record in place (its chunk references already taken) and logs it with its
    /// version.
    private mutating func place(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry, stored: [UInt8]) throws {
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
        let existing = try openBlob(id: id)
        guard let stored else {
            if let existing {
                try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
            }
            return
        }
        let manifest = try stored.withBytes { (raw) throws(CofferError) in
            try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        guard manifest.scope == .syncable, try BlobManifest.id(of: manifest.name, scope: .syncable, keys: keys) == id
        else {
            throw CofferError(.decode, "a blob in the bundle does not match its id or is not syncable; it was refused")
        }
        // The new version's references were taken first (``placeOrHold(_:)``): releasing the old
        // one's cannot free chunks both share.
        if let existing {
            try store.remove(id: id, manifest: existing, keys: keys, coder: coder, in: txn, logging: false)
        }
        // A name is one blob: a device-bound blob of the same name moves aside to a conflict name,
        // keeping its content, and the synced one takes the name.
        let deviceID = try BlobManifest.id(of: manifest.name, scope: .deviceBound, keys: keys)
        if var deviceBound = try openBlob(id: deviceID) {
            let newName = try conflictName(for: manifest.name)
            deviceBound.name = newName
            let newID = try BlobManifest.id(of: newName, scope: .deviceBound, keys: keys)
            try txn.delete(schema.blobs, key: deviceID)
            try txn.put(
                schema.blobs,
                key: newID,
                value: try deviceBound.seal(id: newID, keys: keys, cipher: coder.cipher)
            )
            summary.keptDeviceBoundBlobs += 1
            summary.renamedDeviceBoundBlobs.append(newName)
        }
        try txn.put(schema.blobs, key: id, value: stored)
    }

    private mutating func applySnapshot(id: [UInt8], stored: [UInt8]?) throws {
        let store = snapshotStore
        let chunks = blobStore.chunks
        // Gathered first: releasing while reading could free a tree chunk before it is read.
        var oldReferences: [[UInt8]] = []
        let existing = try openSnapshot(id: id)
        if let existing { try store.forEachReference(of: existing, in: txn, coder: coder) { oldReferences.append($0) } }
        if let stored {
            let record = try stored.withBytes { (raw) throws(CofferError) in
                try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            guard record.scope == .syncable else {
                throw CofferError(.decode, "the bundle holds a snapshot that is not syncable; it was refused")
            }
            // Its references were taken first (``placeOrHold(_:)``): releasing the old ones cannot
            // free chunks both share.
        }
        for chunkID in oldReferences { try chunks.release(chunkID, in: txn) }
        if let stored {
            try txn.put(schema.snapshots, key: id, value: stored)
        } else if existing != nil {
            try txn.delete(schema.snapshots, key: id)
        }
    }

    // MARK: Helpers

    /// A free name for a device-bound blob moving aside: `NAME (device-bound N)`.
    private func conflictName(for name: String) throws -> String {
        for number in 1...1000 {
            let candidate = "\(name) (device-bound \(number))"
            guard (try? BlobManifest.validate(name: candidate)) != nil else { break }
            let taken = try [SyncScope.deviceBound, .syncable].contains { scope in
                try openBlob(id: try BlobManifest.id(of: candidate, scope: scope, keys: keys)) != nil
            }
            if !taken { return candidate }
        }
        throw CofferError(
            .duplicateItem,
            "a synced blob '\(name)' arrived, and the device-bound blob of that name cannot be moved aside (no free name); rename it with coffer mv and import again"
        )
    }

    private func openBlob(id: [UInt8]) throws -> BlobManifest? {
        try blobStore.manifest(id: id, keys: keys, cipher: coder.cipher, in: txn)
    }

    private func openSnapshot(id: [UInt8]) throws -> SnapshotRecord? {
        try snapshotStore.record(id: id, cipher: coder.cipher, in: txn)
    }
}
