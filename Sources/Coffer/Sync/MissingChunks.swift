/// Which chunks a syncable record refers to that this vault does not hold: what an import must wait
/// for before it can apply the record, and what the vault asks its peers for (a want frame).
///
/// A list chunk that is missing hides the entries it lists, and a missing chunk of a snapshot's tree
/// hides the rest of the tree: those are asked for first, and the rest once they arrive.
struct MissingChunks {
    let txn: Transaction
    let schema: Schema
    let keys: KeyRing
    let coder: ChunkRecord.Coder

    /// The chunks record `stored` of `kind` needs that are not stored here, in the order met.
    func of(_ kind: SyncRecordKind, id: [UInt8], stored: [UInt8]) throws -> [[UInt8]] {
        try scan(kind, id: id, stored: stored).missing
    }

    /// The chunks record `stored` of `kind` needs, as far as what is here shows them: those missing,
    /// and those present (which a held record keeps a reference to, so they stay while it waits).
    func scan(_ kind: SyncRecordKind, id: [UInt8], stored: [UInt8]) throws -> (missing: [[UInt8]], present: [[UInt8]]) {
        var present: [[UInt8]] = []
        let missing = try scan(kind, id: id, stored: stored, present: &present)
        return (missing, present)
    }

    private func scan(
        _ kind: SyncRecordKind,
        id: [UInt8],
        stored: [UInt8],
        present: inout [[UInt8]]
    ) throws -> [[UInt8]] {
        switch kind {
        case .item:
            return []
        case .blob:
            let manifest = try stored.withBytes { (raw) throws(CofferError) in
                try BlobManifest.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            var missing: [[UInt8]] = []
            try collect(
                manifest.chunks,
                scope: manifest.scope,
                level: manifest.level,
                into: &missing,
                present: &present
            )
            return missing
        case .snapshot:
            let record = try stored.withBytes { (raw) throws(CofferError) in
                try SnapshotRecord.open(raw, id: id, keys: keys, cipher: coder.cipher)
            }
            var missing: [[UInt8]] = []
            try collect(record.chunks, scope: record.scope, level: record.level, into: &missing, present: &present)
            guard missing.isEmpty else { return missing }
            // The tree is all here: read it and check every file's chunks.
            let chunkKeys = try ChunkKeys(scope: record.scope, level: record.level, keys: keys)
            let store = BlobStore(schema: schema)
            var parser = TreeEntryParser(version: record.formatVersion)
            var contents: [TreeEntry.Content] = []
            try record.chunks.forEachEntry(
                loadListChunk: { (reference) throws(CofferError) in
                    try storage("reading a snapshot's tree") {
                        try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                    }
                },
                { (entry, _) throws(CofferError) in
                    let plaintext = try storage("reading a snapshot's tree") {
                        try store.chunks.load(entry.id, keys: chunkKeys, coder: coder, in: txn)
                    }
                    guard let plaintext else {
                        missing.append(entry.id)
                        return false
                    }
                    contents += try parser.feed(plaintext).compactMap(\.content)
                    return true
                }
            )
            for content in contents {
                try collect(content.chunks, scope: record.scope, level: record.level, into: &missing, present: &present)
            }
            return missing
        }
    }

    /// Adds the chunks of `list` (list chunks, and the entries of those that are here) not stored.
    private func collect(
        _ list: ChunkList,
        scope: SyncScope,
        level: ProtectionLevel,
        into missing: inout [[UInt8]],
        present: inout [[UInt8]]
    ) throws {
        let chunks = ChunkStore(schema: schema)
        let store = BlobStore(schema: schema)
        let chunkKeys = try ChunkKeys(scope: scope, level: level, keys: keys)
        var absent: [[UInt8]] = []
        var here: [[UInt8]] = []
        try list.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                let stored = try storage("checking a record's chunks") { try chunks.contains(reference.id, in: txn) }
                guard stored else {
                    absent.append(reference.id)
                    return []
                }
                here.append(reference.id)
                return try storage("checking a record's chunks") {
                    try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                }
            },
            { (entry, _) throws(CofferError) in
                let stored = try storage("checking a record's chunks") { try chunks.contains(entry.id, in: txn) }
                if stored { here.append(entry.id) } else { absent.append(entry.id) }
                return true
            }
        )
        missing += absent
        present += here
    }
}
