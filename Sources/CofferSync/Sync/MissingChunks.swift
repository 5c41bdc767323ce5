/// The chunks a syncable record refers to, walked once: to find those this vault lacks (what a
/// want frame asks for), or to take the references an import needs while finding them.
///
/// The walk visits each reference the record holds, once per occurrence, in the order
/// ``ContentStore/forEachReference(of:keys:coder:in:_:)`` and ``SnapshotStore`` count them: list chunks
/// and their entries, a snapshot's tree, then every file's chunks. A list chunk that is missing hides
/// the entries it lists, and a missing chunk of a snapshot's tree hides the rest of the tree: those are
/// asked for first, and the rest once they arrive.
package struct MissingChunks {
    package let txn: Transaction
    package let schema: Schema
    package let keys: KeyRing
    package let coder: ChunkRecord.Coder

    package init(txn: Transaction, schema: Schema, keys: KeyRing, coder: ChunkRecord.Coder) {
        self.txn = txn
        self.schema = schema
        self.keys = keys
        self.coder = coder
    }

    /// The chunks record `stored` of `kind` needs that are not stored here, in the order met.
    package func of(_ kind: SyncRecordKind, id: [UInt8], stored: [UInt8]) throws -> [[UInt8]] {
        let chunks = ChunkStore(schema: schema)
        return try walk(kind, id: id, stored: stored) { (chunk) throws(CofferError) in
            try storage("checking a record's chunks") { try chunks.contains(chunk, in: txn) }
        }
    }

    /// Takes one reference to each chunk the record needs that is here, once per occurrence, as the
    /// record will hold them, and returns those taken and those missing. With nothing missing the
    /// record's references are all in place; otherwise the taken ones keep what has arrived while the
    /// record is held back (``HeldRecords``).
    package func claim(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8]
    ) throws -> (taken: [[UInt8]], missing: [[UInt8]]) {
        let chunks = ChunkStore(schema: schema)
        var taken: [[UInt8]] = []
        let missing = try walk(kind, id: id, stored: stored) { (chunk) throws(CofferError) in
            let here = try storage("taking a record's chunks") { try chunks.retainIfStored(chunk, in: txn) }
            if here { taken.append(chunk) }
            return here
        }
        return (taken, missing)
    }

    /// Visits every reference the record holds that the chunks here let it see; `visit` says whether
    /// the chunk is here. Returns those that are not.
    private func walk(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8],
        visit: ([UInt8]) throws(CofferError) -> Bool
    ) throws -> [[UInt8]] {
        var missing: [[UInt8]] = []
        switch kind {
        case .item:
            break
        case .blob:
            let manifest = try stored.withBytes { (raw) throws(CofferError) in
                try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            let chunkKeys = try ChunkKeys(scope: manifest.scope, level: manifest.level, keys: keys)
            try walk(manifest.chunks, keys: chunkKeys, visit: visit, missing: &missing) { _, _ in }
        case .snapshot:
            let record = try stored.withBytes { (raw) throws(CofferError) in
                try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            let chunkKeys = try ChunkKeys(scope: record.scope, level: record.level, keys: keys)
            let chunks = ContentStore(schema: schema).chunks
            var parser = TreeEntryParser(version: record.formatVersion)
            var contents: [TreeEntry.Content] = []
            var treeWhole = true
            try walk(record.chunks, keys: chunkKeys, visit: visit, missing: &missing) {
                (entry, isHere) throws(CofferError) in
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
            for content in contents {
                try walk(content.chunks, keys: chunkKeys, visit: visit, missing: &missing) { _, _ in }
            }
        }
        return missing
    }

    /// Visits the references of one chunk list (its list chunks, and the entries of those that are
    /// here); `each` sees every entry met, in order, and whether it is here. A missing list chunk
    /// hides its entries, so `each` hears of a gap as the first of them would be missed.
    private func walk(
        _ list: ChunkList,
        keys chunkKeys: ChunkKeys,
        visit: ([UInt8]) throws(CofferError) -> Bool,
        missing: inout [[UInt8]],
        each: (ChunkEntry, _ isHere: Bool) throws(CofferError) -> Void
    ) throws {
        let store = ContentStore(schema: schema)
        var absent: [[UInt8]] = []
        try list.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                guard try visit(reference.id) else {
                    absent.append(reference.id)
                    // Its entries are unknown: a reader of the list's content must stop here.
                    try each(ChunkEntry(id: reference.id, length: 0), false)
                    return []
                }
                return try storage("reading a chunk list") {
                    try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                }
            },
            { (entry, _) throws(CofferError) in
                let here = try visit(entry.id)
                if !here { absent.append(entry.id) }
                try each(entry, here)
                return true
            }
        )
        missing += absent
    }
}
