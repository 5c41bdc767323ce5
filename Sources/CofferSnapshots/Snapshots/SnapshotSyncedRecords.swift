/// The snapshot tier's side of sync (``SyncedRecords``): a snapshot references its tree's chunks and
/// every file's. The tree is read as its chunks are met, so a gap in it hides the files' chunks until
/// the tree is whole.
package struct SnapshotSyncedRecords: SyncedRecords {
    package let environment: Environment
    package let schema: Schema
    package let keys: KeyRing
    package let coder: ChunkRecord.Coder

    package init(environment: Environment, schema: Schema, keys: KeyRing, coder: ChunkRecord.Coder) {
        self.environment = environment
        self.schema = schema
        self.keys = keys
        self.coder = coder
    }

    package var kind: SyncRecordKind { .snapshot }
    package var table: Table { schema.snapshots }
    private var store: SnapshotStore { SnapshotStore(environment: environment, schema: schema, keys: keys) }

    package func forEachReference(
        id: [UInt8],
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {
        guard let record = try store.record(id: id, cipher: coder.cipher, in: txn) else { return }
        try store.forEachReference(of: record, in: txn, coder: coder, body)
    }

    /// A snapshot's structure is its tree's chunks and list chunks and its files' list chunks: the
    /// whole tree is read to find the latter.
    package func forEachStructureChunk(
        id: [UInt8],
        stored: [UInt8]?,
        in txn: Transaction,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {
        let record =
            try stored.map { stored throws(CofferError) in
                try stored.withBytes { (raw) throws(CofferError) in
                    try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
                }
            } ?? store.record(id: id, cipher: coder.cipher, in: txn)
        guard let record else { return }
        try store.forEachReference(of: record, in: txn, coder: coder, structureOnly: true, body)
    }

    package func walkReferences(
        id: [UInt8],
        stored: [UInt8],
        in txn: Transaction,
        visit: (ChunkID) throws(CofferError) -> Bool
    ) throws -> [ChunkID] {
        let record = try stored.withBytes { (raw) throws(CofferError) in
            try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        let chunkKeys = try ChunkKeys(content: record, keys: keys)
        let content = ContentStore(schema: schema)
        let chunks = content.chunks
        var parser = TreeEntryParser(version: record.formatVersion)
        var contents: [TreeEntry.Content] = []
        var treeWhole = true
        var missing: [ChunkID] = []
        try content.walkReferences(
            of: record.chunks,
            keys: chunkKeys,
            coder: coder,
            in: txn,
            visit: visit,
            missing: &missing
        ) { (entry, isHere) throws(CofferError) in
            // The tree is read as its chunks are met; a gap leaves the rest of it unknown.
            guard treeWhole, isHere else {
                treeWhole = false
                return
            }
            let plaintext = try storage("reading a snapshot's tree") {
                try chunks.load(entry.id, keys: chunkKeys, coder: coder, in: txn)
            }
            guard let plaintext else {
                treeWhole = false
                return
            }
            contents += try parser.feed(plaintext).compactMap(\.content)
        }
        guard missing.isEmpty, treeWhole else { return missing }
        try parser.finish()
        return try content.missingReferences(
            of: contents.map(\.chunks),
            keys: chunkKeys,
            coder: coder,
            in: txn,
            visit: visit
        )
    }

    package func perWriteChunkCheck(id: [UInt8], stored: [UInt8]) throws -> ChunkRecordCheck? {
        // As for a blob: the clear header says whether the record is sealed per write at all.
        let header = try stored.withBytes { (raw) throws(CofferError) in
            try SealedRecord.peekHeader(raw, versions: SnapshotRecord.readableVersions, what: "a snapshot record")
        }
        guard header.level.isSealedToClassKey else { return nil }
        let record = try stored.withBytes { (raw) throws(CofferError) in
            try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
        }
        return try ChunkRecord.perWriteCheck(of: record, keys: keys, coder: coder)
    }

    package func install(id: [UInt8], stored: [UInt8]?, in txn: Transaction) throws -> SyncInstallOutcome {
        let store = store
        let chunks = ContentStore(schema: schema).chunks
        // Gathered first: releasing while reading could free a tree chunk before it is read.
        var oldReferences: [ChunkID] = []
        let existing = try store.record(id: id, cipher: coder.cipher, in: txn)
        if let existing { try store.forEachReference(of: existing, in: txn, coder: coder) { oldReferences.append($0) } }
        if let stored {
            let record = try stored.withBytes { (raw) throws(CofferError) in
                try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            guard record.scope == .syncable else {
                throw CofferError(.decode, "the bundle holds a snapshot that is not syncable; it was refused")
            }
            // Its references were taken first (by the importer's claim): releasing the old ones cannot
            // free chunks both share.
        }
        for chunkID in oldReferences { try chunks.release(chunkID, in: txn) }
        if let stored {
            try txn.put(schema.snapshots, key: id, value: stored)
        } else if existing != nil {
            try txn.delete(schema.snapshots, key: id)
        }
        return SyncInstallOutcome()
    }

    package func describe(id: [UInt8], stored: [UInt8]?, in txn: Transaction) -> LocalJournal.Description? {
        guard let stored else { return (try? store.record(id: id, cipher: coder.cipher, in: txn))??.changeDescription }
        return try? stored.withBytes { (raw) throws(CofferError) in
            try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher).changeDescription
        }
    }
}
