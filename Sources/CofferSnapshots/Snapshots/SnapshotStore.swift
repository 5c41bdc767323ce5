import Foundation

/// Snapshot records and their trees, inside transactions and read transactions the caller owns.
package struct SnapshotStore {
    package let environment: Environment
    package let schema: Schema
    package let keys: KeyRing

    package init(environment: Environment, schema: Schema, keys: KeyRing) {
        self.environment = environment
        self.schema = schema
        self.keys = keys
    }

    package var contentStore: ContentStore { ContentStore(schema: schema) }

    /// Every snapshot, oldest first, but the parts of backups in progress (``BackupPart``) unless
    /// `includingParts`. While the vault is locked a `completeUnlessOpen` snapshot cannot be opened:
    /// it fails the listing, or with `skippingLocked` is left out (finding a snapshot by name, a
    /// mounted view).
    package func all(
        cipher: AESGCM,
        skippingLocked: Bool = true,
        includingParts: Bool = false
    ) throws(CofferError) -> [SnapshotRecord] {
        let records = try storage("listing the snapshots") {
            try environment.read { txn in
                var records: [SnapshotRecord] = []
                try txn.forEach(in: schema.snapshots) { key, value in
                    do {
                        let record = try SnapshotRecord.open(value, id: Array(key), keys: keys, cipher: cipher)
                        if includingParts || record.part == nil { records.append(record) }
                    } catch let error as CofferError where skippingLocked && error.code == .interactionNotAllowed {}
                    return true
                }
                return records
            }
        }
        return records.sorted {
            $0.created != $1.created ? $0.created < $1.created : $0.id.lexicographicallyPrecedes($1.id)
        }
    }

    /// The snapshot `reference` names: a unique prefix of its id (at least 6 hex digits), a name
    /// (the latest snapshot of that name taken on `host`, this machine unless given), or
    /// ``latestReference`` (the newest snapshot taken on `host`, whatever its name). Names belong to
    /// hosts: two machines backing up `/home/ann/docs` into one sync group have snapshots of the same
    /// name, and a name alone never picks another machine's; nor does `latest`.
    package func resolve(_ reference: String, host: String?, cipher: AESGCM) throws(CofferError) -> SnapshotRecord {
        let records = try all(cipher: cipher)
        if reference == Self.latestReference { return try latest(of: records, host: host) }
        let lowered = reference.lowercased()
        if lowered.count >= 6, lowered.allSatisfy(\.isHexDigit) {
            let matches = records.filter { $0.info.id.hasPrefix(lowered) && (host == nil || $0.hostname == host) }
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 {
                throw CofferError(
                    .param,
                    "'\(reference)' matches \(matches.count) snapshots; give more digits of the id"
                )
            }
        }
        // Names default to the directory's absolute path; accept the path as typed, too.
        let absolute = URL(fileURLWithPath: reference).standardizedFileURL.path
        // A write-only client's claims of name and host never pick its snapshot: only its id does.
        let named = records.filter { ($0.name == reference || $0.name == absolute) && !$0.isWriteOnly }
        let wantedHost = host ?? Snapshots.hostname
        if let latest = named.last(where: { $0.hostname == wantedHost }) { return latest }
        let unadopted = records.filter { ($0.name == reference || $0.name == absolute) && $0.isWriteOnly }
        if named.isEmpty, !unadopted.isEmpty {
            let ids = unadopted.map(\.info.shortID).joined(separator: ", ")
            throw CofferError(
                .itemNotFound,
                "the only snapshots named '\(reference)' are from write-only clients (\(ids)), whose name, host and time are only claims; give an id, or adopt one (\(InterfaceName.adopt("ID")))"
            )
        }
        if !named.isEmpty {
            let hosts = Set(named.map(\.hostname)).sorted().map { "'\($0)'" }.joined(separator: ", ")
            throw CofferError(
                .itemNotFound,
                "there is no snapshot '\(reference)' from \(host == nil ? "this host, " : "")'\(wantedHost)'; snapshots of that name come from \(hosts): give \(InterfaceName.hostOption) or an id"
            )
        }
        if lowered.count < 6, !lowered.isEmpty, lowered.allSatisfy(\.isHexDigit) {
            throw CofferError(
                .itemNotFound,
                "there is no snapshot named '\(reference)', and an id prefix needs at least 6 hex digits ('\(reference)' has \(lowered.count)); \(InterfaceName.listSnapshots) lists the ids"
            )
        }
        throw CofferError(
            .itemNotFound,
            "there is no snapshot '\(reference)' (by id prefix of 6 or more hex digits, or by name); \(InterfaceName.listSnapshots) lists them"
        )
    }

    /// restic's name for the newest snapshot. It always means that: a snapshot named `latest` is
    /// reached by its id.
    package static let latestReference = "latest"

    /// The newest of `records` (sorted oldest first) taken on `host` (this machine when `nil`).
    private func latest(of records: [SnapshotRecord], host: String?) throws(CofferError) -> SnapshotRecord {
        let wantedHost = host ?? Snapshots.hostname
        if let newest = records.last(where: { $0.hostname == wantedHost }) { return newest }
        guard !records.isEmpty else {
            throw CofferError(
                .itemNotFound,
                "there is no snapshot yet, so no 'latest'; \(InterfaceName.backup) takes one"
            )
        }
        let hosts = Set(records.map(\.hostname)).sorted().map { "'\($0)'" }.joined(separator: ", ")
        throw CofferError(
            .itemNotFound,
            "there is no snapshot from \(host == nil ? "this host, " : "")'\(wantedHost)', so no 'latest'; the snapshots come from \(hosts): give \(InterfaceName.hostOption) or an id"
        )
    }

    /// The snapshot stored under `id`, opened, or `nil` if there is none.
    package func record(id: [UInt8], cipher: AESGCM, in txn: Transaction) throws -> SnapshotRecord? {
        try txn.withValue(schema.snapshots, key: id) { stored in
            try SnapshotRecord.open(stored, id: id, keys: keys, cipher: cipher)
        }
    }

    /// The latest snapshot named `name` taken on `host`, if any (never a write-only client's).
    package func latest(named name: String, host: String, cipher: AESGCM) throws(CofferError) -> SnapshotRecord? {
        try all(cipher: cipher).last { $0.name == name && $0.hostname == host && !$0.isWriteOnly }
    }

    /// The latest `afterFirstUnlock` snapshot named `name` from `host`: what a backup compares files
    /// with. A `completeUnlessOpen` snapshot never is (its chunks are sealed with its own write's keys).
    package func previous(named name: String, host: String, cipher: AESGCM) throws(CofferError) -> SnapshotRecord? {
        try all(cipher: cipher).last { $0.name == name && $0.hostname == host && !$0.level.isSealedToClassKey }
    }

    /// Streams the tree's entries in order, checking the tree's digest at the end.
    package func forEachEntry(
        of record: SnapshotRecord,
        _ body: (TreeEntry) throws(CofferError) -> Void
    ) throws(CofferError) {
        var parser = TreeEntryParser(version: record.formatVersion)
        let reader = ContentReader(environment: environment, store: contentStore, keys: keys)
        do {
            try withoutActuallyEscaping(body) { (body) throws(CofferError) in
                var sink = ClosureSink { (bytes) throws(CofferError) in
                    for entry in try parser.feed(bytes) { try body(entry) }
                }
                try reader.stream(record, range: 0..<record.size, to: &sink, progress: nil)
            }
            try parser.finish()
        } catch  where error.code == .decode {
            throw record.damaged(error)
        }
    }

    /// Calls `body` with each chunk reference a snapshot holds: its tree's chunks and list chunks,
    /// and every file's (once per occurrence). Reads in its own short transactions, so the caller must
    /// not hold one (the tree is streamed by worker threads).
    package func forEachReference(
        of record: SnapshotRecord,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws(CofferError) {
        let chunkKeys = try ChunkKeys(content: record, keys: keys)
        let coder = try ChunkRecord.Coder()
        let store = contentStore
        let environment = environment
        func references(of list: ChunkList) throws(CofferError) {
            if case .indirect(let lists) = list { for reference in lists { try body(reference.id) } }
            try list.forEachEntry(
                loadListChunk: { (reference) throws(CofferError) in
                    try storage("reading a chunk list") {
                        try environment.read { txn in
                            try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                        }
                    }
                },
                { (entry, _) throws(CofferError) in
                    try body(entry.id)
                    return true
                }
            )
        }
        try references(of: record.chunks)
        try forEachEntry(of: record) { (entry) throws(CofferError) in
            if let content = entry.content { try references(of: content.chunks) }
        }
    }

    /// Calls `body` with each chunk reference a snapshot holds, like
    /// ``forEachReference(of:_:)``, but reading the tree on this thread inside `txn` (which may be a
    /// write transaction holding chunks it has not committed yet) and checking the tree's digest.
    /// With `structureOnly`, only the chunks that hold the snapshot's structure: the tree's chunks
    /// and list chunks, and the files' list chunks (not their content).
    ///
    /// - Throws: ``CofferError`` `.decode` if a chunk of the tree or a list chunk is missing or
    ///   damaged, or the tree does not match its digest.
    package func forEachReference(
        of record: SnapshotRecord,
        in txn: Transaction,
        coder: ChunkRecord.Coder,
        structureOnly: Bool = false,
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws(CofferError) {
        let chunkKeys = try ChunkKeys(content: record, keys: keys)
        let store = contentStore
        func loadList(_ reference: ListChunkReference) throws(CofferError) -> [ChunkEntry] {
            try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
        }
        func references(of list: ChunkList, content: Bool = true) throws(CofferError) {
            if case .indirect(let lists) = list { for reference in lists { try body(reference.id) } }
            guard content else { return }
            try list.forEachEntry(loadListChunk: loadList) { (entry, _) throws(CofferError) in
                try body(entry.id)
                return true
            }
        }
        try references(of: record.chunks)
        var parser = TreeEntryParser(version: record.formatVersion)
        let digest = try storage("reading a snapshot's tree") { try SHA256() }
        try record.chunks.forEachEntry(loadListChunk: loadList) { (entry, _) throws(CofferError) in
            let plaintext = try storage("reading a snapshot's tree") {
                try store.chunks.load(entry.id, keys: chunkKeys, coder: coder, in: txn)
            }
            guard let plaintext else {
                throw CofferError(.decode, "a chunk of snapshot \(record.info.shortID)'s tree is missing")
            }
            try storage("reading a snapshot's tree") { try digest.update(plaintext) }
            for treeEntry in try parser.feed(plaintext) {
                if let content = treeEntry.content { try references(of: content.chunks, content: !structureOnly) }
            }
            return true
        }
        try parser.finish()
        guard try storage("reading a snapshot's tree", { try digest.finalize() }) == record.digest else {
            throw CofferError(.decode, "snapshot \(record.info.shortID)'s tree does not match its digest")
        }
    }

    /// Drops a snapshot: releases every reference it holds (freeing chunks nothing else uses) and
    /// deletes its record, logging the deletion if it was syncable, in one transaction (for which the
    /// space reserve makes room on a full disk).
    package func forget(_ record: SnapshotRecord) throws(CofferError) {
        var ids: [ChunkID] = []
        try forEachReference(of: record) { ids.append($0) }
        let schema = schema
        try deletion("forgetting a snapshot", in: environment) { txn in
            guard try txn.contains(schema.snapshots, key: record.id) else {
                throw CofferError(.itemNotFound, "the snapshot was forgotten meanwhile")
            }
            try drop(record, releasing: ids, description: record.changeDescription, in: txn)
        }
    }

    /// Deletes a snapshot's record in `txn`: releases `references` (every reference it holds), deletes
    /// the record and logs the deletion (``ChangeLog``) under `description`.
    package func drop(
        _ record: SnapshotRecord,
        releasing references: [ChunkID],
        description: LocalJournal.Description,
        in txn: Transaction
    ) throws {
        let chunks = contentStore.chunks
        for id in references { try chunks.release(id, in: txn) }
        try txn.delete(schema.snapshots, key: record.id)
        try ChangeLog.record(
            .snapshotDelete,
            recordID: record.id,
            scope: record.scope,
            description: description,
            keys: keys,
            in: txn,
            schema: schema
        )
    }
}
