package import Foundation

/// Commits a backup in parts as it goes and uploads each (``BackupPart``, ``ContentUploader``): once
/// the chunks stored since the last part add up to ``partSize`` bytes of new content, the committer
/// pauses (within a file, if it is reading one), a hidden snapshot record whose tree holds the files
/// read since the last part (and the part of the current file read so far) is committed with its own
/// references, the write counts as begun after it (so an export credits a peer with its chunks), and
/// the uploader pushes it and drops the local copies the store now holds.
///
/// Used only on the committer thread (``BackupRun``), then by the final transaction.
package final class BackupPartWriter: @unchecked Sendable {
    /// The snapshot the parts belong to, as its final record will say.
    package struct Description {
        package let name: String
        package let sourcePath: String
        package let hostname: String
        package let created: Int64
        package let tags: [String]
        package let paths: [String]
    }

    private let environment: Environment
    private let schema: Schema
    private let keys: KeyRing
    private let uploader: any ContentUploader
    private let device: UUID
    private let write: PendingWrites.WriteID
    private let chunker: FastCDC
    private let description: Description
    /// New content after which a part is committed.
    package let partSize: UInt64
    /// The latest change sequence when the backup began: chunks born since may be the backup's.
    private let beganAt: UInt64

    private var entries: [TreeEntry] = []
    private var statistics = SnapshotStatistics()
    private var addedBytes: UInt64 = 0
    /// The parts committed, in order.
    private(set) var parts: [[UInt8]] = []
    /// Parts the uploader took.
    private(set) var uploaded = 0
    /// What the uploader said.
    private(set) var notices: [String] = []
    /// Why uploading stopped, if it did: the rest of the backup stays local.
    private(set) var failure: CofferError?

    package init(
        vault: Vault,
        keys: KeyRing,
        uploader: any ContentUploader,
        write: PendingWrites.WriteID,
        chunker: FastCDC,
        description: Description,
        partSize: UInt64,
        beganAt: UInt64
    ) {
        environment = vault.environment
        schema = vault.schema
        self.keys = keys
        self.uploader = uploader
        device = vault.deviceID
        self.write = write
        self.chunker = chunker
        self.description = description
        self.partSize = max(1, partSize)
        self.beganAt = beganAt
    }

    /// Counts each chunk the session takes (``ContentSession/CommitContext/onChunk``), and pauses it
    /// for a part once the new ones reach ``partSize``: installed before anything is submitted.
    package func watch(_ context: ContentSession<BackupRun.Marker>.CommitContext) {
        context.onChunk = { [self] (added) in
            guard failure == nil else { return }
            addedBytes += added
            guard addedBytes >= partSize else { return }
            context.pause { [self] (checkpoint) throws(CofferError) in try commitPart(checkpoint, context) }
        }
    }

    /// Adds a file whose content was read, with the bytes its new chunks took.
    package func add(_ entry: TreeEntry, addedBytes added: UInt64) {
        guard failure == nil else { return }
        entries.append(entry)
        statistics.files += 1
        statistics.bytes += Int64(entry.size)
        statistics.bytesAdded += Int64(added)
    }

    /// Commits the files added since the last part as a part, then uploads it. An upload that fails
    /// stops the parts (the backup goes on, keeping the rest here) and is reported with the result.
    private func commitPart(
        _ checkpoint: ContentSession<BackupRun.Marker>.Checkpoint,
        _ context: ContentSession<BackupRun.Marker>.CommitContext
    ) throws(CofferError) {
        // The file the session paused within: an entry of its chunks so far, whose last list chunk,
        // if any, is the part's own.
        var entries = entries
        var ownListChunks: [ChunkID: [UInt8]] = [:]
        if let partial = checkpoint.partial {
            var list = partial.list
            if let last = list.finish() {
                let id = try context.keys.id(of: last.plaintext)
                ownListChunks[id] = try context.seal(last.plaintext, id: id)
                list.stored(last, id: id)
            }
            entries.append(
                TreeEntry(
                    kind: .file,
                    path: Array(Self.partialPath.utf8),
                    mode: 0o100600,
                    uid: 0,
                    gid: 0,
                    modifiedSeconds: 0,
                    modifiedNanoseconds: 0,
                    size: partial.size,
                    device: 0,
                    inode: 0,
                    changedSeconds: 0,
                    content: TreeEntry.Content(chunkCount: partial.chunkCount, chunks: list.list)
                )
            )
        }
        let tree = try PartTree(entries, chunker: chunker, context: context)
        var record = SnapshotRecord(
            id: SecureRandom.bytes(count: 16),
            name: description.name,
            sourcePath: description.sourcePath,
            hostname: description.hostname,
            created: description.created,
            scope: context.keys.scope,
            level: context.keys.level,
            statistics: statistics,
            size: tree.size,
            digest: tree.digest,
            chunkCount: UInt64(tree.pieces.count),
            chunks: tree.list,
            tags: description.tags,
            paths: description.paths
        )
        try record.markAsPart(
            BackupPart(
                device: device,
                write: write.bytes,
                number: UInt32(parts.count + 1),
                written: Int64(Date().timeIntervalSince1970 * 1000)
            ),
            keys: keys
        )
        let sealed = try record.seal(keys: keys, cipher: context.coder.cipher)
        let (schema, keys) = (schema, keys)
        try checkpoint.commit("committing a part of the backup") { txn in
            let chunks = ChunkStore(schema: schema)
            // The part's own tree and list chunks, then every file's chunks, once per occurrence: the
            // references a snapshot holds, which deleting the part releases.
            for (id, sealed) in tree.pieces + tree.listChunks { _ = try chunks.retain(id, sealed: sealed, in: txn) }
            let content = ContentStore(schema: schema)
            for entry in entries {
                guard let list = entry.content?.chunks else { continue }
                if case .indirect(let references) = list {
                    for reference in references {
                        _ = try chunks.retain(reference.id, sealed: ownListChunks[reference.id], in: txn)
                    }
                }
                try list.forEachEntry(
                    loadListChunk: { (reference) throws(CofferError) in
                        try storage("reading a chunk list") {
                            try content.listChunkEntries(reference, keys: context.keys, coder: context.coder, in: txn)
                        }
                    },
                    { (entry, _) throws(CofferError) in
                        try storage("committing a part of the backup") {
                            _ = try chunks.retain(entry.id, sealed: nil, in: txn)
                        }
                        return true
                    }
                )
            }
            try txn.put(schema.snapshots, key: record.id, value: sealed)
            try ChangeLog.record(
                .snapshotPut,
                recordID: record.id,
                scope: record.scope,
                description: LocalJournal.Description(name: "\(record.name) (part \(parts.count + 1))"),
                keys: keys,
                in: txn,
                schema: schema
            )
        }
        parts.append(record.id)
        self.entries.removeAll(keepingCapacity: true)
        statistics = SnapshotStatistics()
        addedBytes = 0
        do {
            notices += try uploader.upload(headroom: partSize)
            uploaded += 1
        } catch {
            failure = error
        }
    }

    /// The path of a part's entry for the file the backup was reading when it paused: a part is
    /// never restored, and its entries are there for their chunks.
    package static let partialPath = "partial"

    /// In the backup's final transaction: deletes its parts (the snapshot holds their chunks by now),
    /// and the parts this device's earlier backups left when they were stopped (``staleParts``).
    package func deleteParts(
        store: SnapshotStore,
        coder: ChunkRecord.Coder,
        in txn: Transaction
    ) throws {
        var ids = parts
        ids += try Self.staleParts(store: store, device: device, coder: coder, in: txn).map(\.id)
        for id in ids {
            guard let record = try store.record(id: id, cipher: coder.cipher, in: txn) else { continue }
            try Self.delete(record, store: store, coder: coder, in: txn)
        }
    }

    /// How long a part of a write that is no longer registered waits before a later backup deletes
    /// it: a copy of the vault made while that backup ran may still be running it elsewhere.
    package static let staleAge: Int64 = 24 * 3600 * 1000

    /// The parts `device` wrote for writes that are not registered here any more (the backup was
    /// stopped, and its references released) and that were written ``staleAge`` ago or more.
    package static func staleParts(
        store: SnapshotStore,
        device: UUID,
        coder: ChunkRecord.Coder,
        in txn: Transaction
    ) throws -> [SnapshotRecord] {
        let pending = PendingWrites(schema: store.schema)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var stale: [SnapshotRecord] = []
        try txn.forEach(in: store.schema.snapshots) { key, value in
            guard let record = try? SnapshotRecord.open(value, id: Array(key), keys: store.keys, cipher: coder.cipher),
                let part = record.part, part.device == device,
                try !pending.isRegistered(PendingWrites.WriteID(bytes: part.write), in: txn),
                part.written <= now - staleAge
            else { return true }
            stale.append(record)
            return true
        }
        return stale
    }

    /// Deletes a part: releases its references and logs the deletion.
    private static func delete(
        _ record: SnapshotRecord,
        store: SnapshotStore,
        coder: ChunkRecord.Coder,
        in txn: Transaction
    ) throws {
        var ids: [ChunkID] = []
        try store.forEachReference(of: record, in: txn, coder: coder) { ids.append($0) }
        let description = LocalJournal.Description(name: "\(record.name) (part \(record.part?.number ?? 0))")
        try store.drop(record, releasing: ids, description: description, in: txn)
    }

    /// In the backup's final transaction: counts the tree's chunks stored during the backup as born
    /// now (``ChunkStore/noteBornNow(_:ifBornSince:in:)``), when a part was committed: the parts
    /// credited peers with every chunk stored before them, and the tree's are in no part.
    package func noteTreeBorn(
        _ tree: ChunkList,
        context: ContentSession<BackupRun.Marker>.CommitContext,
        in txn: Transaction
    ) throws {
        guard !parts.isEmpty else { return }
        let chunks = ChunkStore(schema: schema)
        let content = ContentStore(schema: schema)
        let since = beganAt
        if case .indirect(let references) = tree {
            for reference in references { try chunks.noteBornNow(reference.id, ifBornSince: since, in: txn) }
        }
        try tree.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                try storage("reading the tree's chunk list") {
                    try content.listChunkEntries(reference, keys: context.keys, coder: context.coder, in: txn)
                }
            },
            { (entry, _) throws(CofferError) in
                try storage("committing the backup") { try chunks.noteBornNow(entry.id, ifBornSince: since, in: txn) }
                return true
            }
        )
    }

    /// After the backup committed: when a part was uploaded, pushes once more (the snapshot, the
    /// parts' deletion, what was read after the last part) and trims the cache to its budget.
    package func finishUploading() {
        guard uploaded > 0, failure == nil else { return }
        do {
            notices += try uploader.upload(headroom: 0)
        } catch {
            failure = error
        }
    }

    /// What the backup says about its parts.
    package var uploads: BackupUploads {
        BackupUploads(
            store: uploader.location,
            parts: uploaded,
            notices: notices,
            failure: failure?.message
        )
    }
}

/// A part's tree: its files' entries cut into chunks, sealed, with its list.
private struct PartTree {
    var pieces: [(ChunkID, [UInt8])] = []
    var listChunks: [(ChunkID, [UInt8])] = []
    var list = ChunkList.inline([])
    var size: UInt64 = 0
    var digest: [UInt8] = []

    init(
        _ entries: [TreeEntry],
        chunker: FastCDC,
        context: ContentSession<BackupRun.Marker>.CommitContext
    ) throws(CofferError) {
        var bytes: [UInt8] = []
        for entry in entries { bytes += entry.encoded() }
        size = UInt64(bytes.count)
        do {
            let hasher = try SHA256()
            try hasher.update(bytes)
            digest = try hasher.finalize()
        } catch {
            throw CofferError(.internalError, "hashing a part's tree failed: \(error)", underlying: error)
        }
        var builder = ChunkListBuilder()
        func storeList(_ chunk: ChunkListBuilder.ListChunk) throws(CofferError) {
            let id = try context.keys.id(of: chunk.plaintext)
            listChunks.append((id, try context.seal(chunk.plaintext, id: id)))
            builder.stored(chunk, id: id)
        }
        var start = 0
        while start < bytes.count {
            let length =
                bytes.withUnsafeBytes { raw in
                    chunker.cut(UnsafeRawBufferPointer(rebasing: raw[start...]), isFinal: true)
                } ?? (bytes.count - start)
            let piece = Array(bytes[start..<(start + length)])
            let id = try context.keys.id(of: piece)
            pieces.append((id, try context.seal(piece, id: id)))
            if let full = builder.append(ChunkEntry(id: id, length: UInt32(length))) { try storeList(full) }
            start += length
        }
        if let last = builder.finish() { try storeList(last) }
        list = builder.list
    }
}
