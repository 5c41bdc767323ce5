import Foundation

/// A path a backup or restore could not handle, and why; the operation went on without it.
public struct SnapshotProblem: Sendable, Hashable, CustomStringConvertible {
    /// The path, relative to the backed-up (or restored) directory.
    public let path: String
    /// What went wrong.
    public let message: String

    /// The path and what went wrong, as one line.
    public var description: String { "\(path): \(message)" }
}

/// What ``Snapshots/backup(directory:name:scope:compressionLevel:excluding:excludingIgnoringCase:progress:)-8mgty`` did.
public struct BackupResult: Sendable {
    /// The new snapshot.
    public let snapshot: SnapshotInfo
    /// Paths that vanished or could not be read during the walk, skipped, or stored in part. A
    /// backup with problems is incomplete: the CLI exits 3 for it, as restic does.
    public let problems: [SnapshotProblem]
    /// Paths left out on purpose: the vault's own directory, when it lies inside the tree (backing it
    /// up would read the file the backup is writing).
    public let excluded: [String]
    /// How many paths the exclude patterns left out (a directory counts once, with all under it).
    public var excludedByPattern = 0
    /// How the backup uploaded its content as it went, on a vault that offloads it to an object
    /// store with the store attached; `nil` elsewhere.
    public var uploads: BackupUploads?
}

/// How a backup on a vault that offloads its content uploaded it as it went: in parts, each pushed
/// once the files read since the last added ``BackupOptions/partSize`` of new content, the local
/// copies then dropped down to the cache budget (docs/FORMAT.md, "Backup parts").
public struct BackupUploads: Sendable, Equatable {
    /// The store, as `s3://BUCKET/PREFIX`.
    public let store: String
    /// The parts pushed (the backup pushes once more at its end when there was any).
    public let parts: Int
    /// What the pushes said.
    public let notices: [String]
    /// Why uploading stopped, if it did: the rest of the backup's content stays here until the next
    /// push or offload.
    public let failure: String?

    package init(store: String, parts: Int, notices: [String], failure: String?) {
        self.store = store
        self.parts = parts
        self.notices = notices
        self.failure = failure
    }
}

/// Progress of a backup: files and bytes handled so far.
public struct BackupProgress: Sendable {
    /// Paths handled so far: read, or found unchanged, or recorded by type.
    public let files: Int
    /// Bytes of file content read (unchanged files are not read and not counted).
    public let bytesRead: Int64
}

/// One backup: walks the tree on the calling thread, sends each changed file's content through one
/// ``ContentSession``, and builds the tree stream on the committer thread, in walk order.
package final class BackupRun: @unchecked Sendable {
    package enum Marker {
        /// A file whose content was read (new or changed); `failure` says why reading it failed.
        case file(TreeEntry, isNew: Bool, failure: String?)
        /// A file unchanged since the previous snapshot: its content is that snapshot's.
        case unchanged(TreeEntry)
        /// A directory, symbolic link or other file.
        case plain(TreeEntry)
    }

    private let environment: Environment
    private let store: ContentStore
    private let scope: SyncScope
    // Tree state, touched only on the committer thread (then, after it ends, by the caller).
    private var treeBuffer: [UInt8] = []
    private var treeSize: UInt64 = 0
    private var treeChunkCount: UInt64 = 0
    private var treeList = ChunkListBuilder()
    private let treeHasher: SHA256
    private var chunker: FastCDC?
    private(set) var statistics = SnapshotStatistics()
    /// Chunk lists of files whose read failed: their references are released at the end.
    private(set) var abandonedContents: [ChunkList] = []
    private let problemsLock = NSLock()
    /// Each problem with its path's bytes, to put them in walk order (readers report as they go).
    private var problemList: [(path: [UInt8], problem: SnapshotProblem)] = []
    private var excludedList: [String] = []

    package init(environment: Environment, store: ContentStore, scope: SyncScope) throws(CofferError) {
        self.environment = environment
        self.store = store
        self.scope = scope
        do {
            treeHasher = try SHA256()
        } catch {
            throw CofferError(.internalError, "creating a digest context failed: \(error)", underlying: error)
        }
    }

    /// The problems, in walk order (a path's own problems in the order they were met).
    package var problems: [SnapshotProblem] {
        problemsLock.lock()
        let list = problemList
        problemsLock.unlock()
        return
            list
            .enumerated()
            .sorted { a, b in
                if a.element.path == b.element.path { return a.offset < b.offset }
                return TreeStream.walkOrder(a.element.path, precedes: b.element.path)
            }
            .map(\.element.problem)
    }

    package var excluded: [String] {
        problemsLock.lock()
        defer { problemsLock.unlock() }
        return excludedList
    }

    package func exclude(_ path: String) {
        problemsLock.lock()
        excludedList.append(path)
        problemsLock.unlock()
    }

    /// Notes a path the backup could not handle in full (`path` relative to the backed-up directory).
    package func report(_ path: [UInt8], _ message: String) {
        problemsLock.lock()
        problemList.append((path, SnapshotProblem(path: EntryPath.display(path), message: message)))
        problemsLock.unlock()
    }

    package func useChunker(_ chunker: FastCDC) { self.chunker = chunker }

    /// Commits the backup in parts as it goes, through `writer` (``BackupPartWriter``).
    package func commitInParts(_ writer: BackupPartWriter) { parts = writer }

    /// The part writer, when the backup commits in parts.
    private(set) var parts: BackupPartWriter?

    // MARK: Committer side

    /// The session's handler: adds each entry to the tree in order.
    package func handle(
        _ marker: Marker,
        _ summary: ContentSummary?,
        _ context: ContentSession<Marker>.CommitContext
    )
        throws(CofferError)
    {
        switch marker {
        case .file(var entry, let isNew, let failure):
            guard let summary else { return }
            if let message = failure {
                report(entry.path, "could not be read (\(message)); skipped")
                abandonedContents.append(summary.chunks)
                return
            }
            // Entries hold no SHA-256 (from version 2 on): the session does not hash a backup's files.
            // A file that shrank while it was read is recorded at the size read.
            entry.size = summary.size
            entry.content = TreeEntry.Content(
                chunkCount: summary.chunkCount,
                chunks: summary.chunks
            )
            statistics.files += 1
            statistics.bytes += Int64(summary.size)
            statistics.bytesAdded += Int64(summary.addedBytes)
            if isNew { statistics.newFiles += 1 } else { statistics.changedFiles += 1 }
            try append(entry, context)
            parts?.add(entry, addedBytes: summary.addedBytes)
        case .unchanged(let entry):
            guard let content = entry.content else { return }
            try retainStored(content.chunks, context)
            statistics.files += 1
            statistics.unchangedFiles += 1
            statistics.bytes += Int64(entry.size)
            try append(entry, context)
        case .plain(let entry):
            switch entry.kind {
            case .directory: if !entry.isRoot { statistics.directories += 1 }
            case .symlink: statistics.symlinks += 1
            default: statistics.otherFiles += 1
            }
            try append(entry, context)
        }
    }

    /// Takes one more reference to every chunk of a list that a previous snapshot holds.
    private func retainStored(_ list: ChunkList, _ context: ContentSession<Marker>.CommitContext) throws(CofferError) {
        let keys = context.keys
        let coder = context.coder
        let store = store
        let environment = environment
        if case .indirect(let references) = list {
            for reference in references { context.retainStored(reference.id) }
        }
        try list.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                try storage("reading a chunk list") {
                    try environment.read { txn in
                        try store.listChunkEntries(reference, keys: keys, coder: coder, in: txn)
                    }
                }
            },
            { (entry, _) throws(CofferError) in
                context.retainStored(entry.id)
                return true
            }
        )
    }

    private func append(_ entry: TreeEntry, _ context: ContentSession<Marker>.CommitContext) throws(CofferError) {
        let bytes = entry.encoded()
        do {
            try treeHasher.update(bytes)
        } catch {
            throw CofferError(.internalError, "hashing the tree failed: \(error)", underlying: error)
        }
        treeSize += UInt64(bytes.count)
        treeBuffer += bytes
        if treeBuffer.count >= 1 << 20 { try cutTree(isFinal: false, context) }
    }

    /// Stores the tree chunks FastCDC cuts from the buffered tree bytes.
    private func cutTree(isFinal: Bool, _ context: ContentSession<Marker>.CommitContext) throws(CofferError) {
        guard let chunker else { throw CofferError(.internalError, "the backup has no chunker") }
        var start = 0
        while true {
            let length = treeBuffer.withUnsafeBytes { raw in
                chunker.cut(UnsafeRawBufferPointer(rebasing: raw[start...]), isFinal: isFinal)
            }
            guard let length else { break }
            let piece = Array(treeBuffer[start..<(start + length)])
            let id = try context.store(piece)
            treeChunkCount += 1
            if let full = treeList.append(ChunkEntry(id: id, length: UInt32(length))) {
                treeList.stored(full, id: try context.store(full.plaintext))
            }
            start += length
        }
        treeBuffer.removeFirst(start)
    }

    // MARK: Caller side, after the committer ended

    /// Stores the rest of the tree and fixes its size, digest and chunk list (called from the
    /// session's `prepare`, once, after the committer ended).
    package func finishTree(_ context: ContentSession<Marker>.CommitContext) throws(CofferError) {
        try cutTree(isFinal: true, context)
        if let last = treeList.finish() { treeList.stored(last, id: try context.store(last.plaintext)) }
        do {
            tree = (treeSize, try treeHasher.finalize(), treeChunkCount, treeList.list)
        } catch {
            throw CofferError(.internalError, "hashing the tree failed: \(error)", underlying: error)
        }
    }

    /// The finished tree's size, digest, chunk count and list (after ``finishTree(_:)``).
    private(set) var tree: (size: UInt64, digest: [UInt8], chunkCount: UInt64, chunks: ChunkList)?
}
