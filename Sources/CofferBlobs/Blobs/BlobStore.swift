/// The blob tier's tables working together: manifests in `blobs`, their content in the
/// ``ContentStore``, and changes to syncable blobs in the change log. Every method runs inside a
/// transaction its caller owns.
package struct BlobStore {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }
    package var content: ContentStore { ContentStore(schema: schema) }
    package var chunks: ChunkStore { content.chunks }
    package var pending: PendingWrites { content.pending }

    /// The blob named `name`, in either scope, with its id; with `includingDrops`, a write-only
    /// client's blob when no blob has that name (``drop(named:keys:cipher:in:)``).
    package func lookup(
        _ name: String,
        keys: KeyRing,
        cipher: AESGCM,
        in txn: Transaction,
        includingDrops: Bool = false
    ) throws(CofferError) -> (id: [UInt8], manifest: BlobManifest)? {
        if includingDrops {
            if let found = try lookup(name, keys: keys, cipher: cipher, in: txn) { return found }
            return try drop(named: name, keys: keys, cipher: cipher, in: txn)
        }
        for scope in SyncScope.allCases {
            let id = try BlobManifest.id(of: name, scope: scope, keys: keys)
            let found = try storage("reading a blob manifest") {
                try txn.withValue(schema.blobs, key: id) { stored in
                    try BlobManifest.open(stored, id: id, keys: keys, cipher: cipher)
                }
            }
            if let found { return (id, found) }
        }
        return nil
    }

    /// The write-only client's blob listed as `name` (`NAME@TIME-TAG`), or else the newest one named
    /// `name`; `nil` if there is none. Such blobs have random ids, so this reads every manifest's
    /// clear header and opens only theirs.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when none matched and some could not be
    ///   opened because the vault is locked.
    package func drop(
        named name: String,
        keys: KeyRing,
        cipher: AESGCM,
        in txn: Transaction
    ) throws(CofferError) -> (id: [UInt8], manifest: BlobManifest)? {
        var exact: (id: [UInt8], manifest: BlobManifest)?
        var newest: (id: [UInt8], manifest: BlobManifest)?
        var locked = 0
        try storage("looking for a write-only blob") {
            try txn.forEach(in: schema.blobs) { key, value in
                guard BlobManifest.isDrop(value) else { return true }
                do {
                    let manifest = try BlobManifest.open(value, id: Array(key), keys: keys, cipher: cipher)
                    if manifest.displayName == name {
                        exact = (Array(key), manifest)
                        return false
                    }
                    if manifest.name == name, manifest.modified >= newest?.manifest.modified ?? .min {
                        newest = (Array(key), manifest)
                    }
                } catch let error as CofferError where error.code == .interactionNotAllowed {
                    locked += 1
                }
                return true
            }
        }
        if let found = exact ?? newest { return found }
        guard locked == 0 else {
            throw CofferError(
                .interactionNotAllowed,
                "there is no blob named '\(name)' that can be read now: \(locked) blob\(locked == 1 ? "" : "s") written by write-only clients cannot be opened while the vault is locked; unlock it with its passphrase"
            )
        }
        return nil
    }

    /// The manifest stored under `id`, opened, or `nil` if there is none.
    package func manifest(id: [UInt8], keys: KeyRing, cipher: AESGCM, in txn: Transaction) throws -> BlobManifest? {
        try txn.withValue(schema.blobs, key: id) { stored in
            try BlobManifest.open(stored, id: id, keys: keys, cipher: cipher)
        }
    }

    /// The blob named `name`, or `.itemNotFound` naming it.
    package func require(
        _ name: String,
        keys: KeyRing,
        cipher: AESGCM,
        in txn: Transaction
    ) throws(CofferError) -> (id: [UInt8], manifest: BlobManifest) {
        guard let found = try lookup(name, keys: keys, cipher: cipher, in: txn, includingDrops: true) else {
            throw CofferError(
                .itemNotFound,
                "there is no blob named '\(name)'; \(InterfaceName.listBlobs) lists the blobs"
            )
        }
        return found
    }

    /// Every chunk id a manifest holds a reference to: its content chunks (once per occurrence) and
    /// its list chunks.
    package func forEachReference(
        of manifest: BlobManifest,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws(CofferError) {
        try content.forEachReference(of: manifest.chunks, keys: keys, coder: coder, in: txn, body)
    }

    /// Removes the blob stored under `id`: drops its manifest, releases its chunks (freeing those it
    /// was the last to use) and, if it was syncable and `logging` is set, logs the deletion.
    package func remove(
        id: [UInt8],
        manifest: BlobManifest,
        keys: KeyRing,
        coder: ChunkRecord.Coder,
        in txn: Transaction,
        logging: Bool = true
    ) throws(CofferError) {
        let chunkKeys = try ChunkKeys(content: manifest, keys: keys)
        try storage("deleting a blob") {
            // One list chunk at a time, released after its entries: memory stays bounded for any size.
            switch manifest.chunks {
            case .inline(let entries):
                for entry in entries { try chunks.release(entry.id, in: txn) }
            case .indirect(let references):
                for reference in references {
                    let entries = try content.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                    for entry in entries { try chunks.release(entry.id, in: txn) }
                    try chunks.release(reference.id, in: txn)
                }
            }
            try txn.delete(schema.blobs, key: id)
            if logging {
                try ChangeLog.record(
                    .blobDelete,
                    recordID: id,
                    scope: manifest.scope,
                    description: manifest.changeDescription,
                    keys: keys,
                    in: txn,
                    schema: schema
                )
            }
        }
    }
}
