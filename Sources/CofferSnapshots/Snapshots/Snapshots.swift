public import Foundation

extension Vault {
    /// Directory snapshots: back up and restore whole trees, deduplicated across snapshots.
    public var snapshots: Snapshots { Snapshots(vault: self) }
}

/// Backups of directory trees, as restic and borg make them, stored in the vault's blob tier: file
/// contents are chunks (shared with every other snapshot and blob holding the same bytes), and each
/// snapshot's tree of names, types, modes, owners, times, link targets and chunk lists is sealed.
///
/// ```swift
/// let result = try vault.snapshots.backup(directory: URL(fileURLWithPath: "/home/ann/docs"))
/// for snapshot in try vault.snapshots.list() { print(snapshot.shortID, snapshot.name) }
/// try vault.snapshots.restore(result.snapshot.id, to: URL(fileURLWithPath: "/tmp/docs-restored"))
/// ```
public struct Snapshots: Sendable {
    package let vault: Vault

    /// Backs up `directory` as a new snapshot.
    ///
    /// Regular files' contents go through the blob write path (every core, deduplicated, compressed,
    /// encrypted); files whose size, modification time, status change time and inode match this
    /// host's previous snapshot of the same name are not read at all. Each file is read up to the size
    /// it had when opened, so a file growing meanwhile is recorded as it was. Names are stored as the
    /// bytes they are (UTF-8 or not), with modes, owners, times, link counts (hard links restore as
    /// links), sparseness and extended attributes (ACLs and capabilities among them). The vault's own
    /// directory is left out when it lies inside the tree (``BackupResult/excluded``). Paths that
    /// vanish or cannot be read are reported in the result and skipped; sockets, FIFOs and devices are
    /// recorded by type only. Nothing is visible until the snapshot commits, at the end.
    ///
    /// - Parameters:
    ///   - directory: The directory tree to back up.
    ///   - options: The snapshot's name, tags, scope, excludes, compression, time and host.
    ///   - progress: Called with the paths handled and the bytes read so far, after each path, from
    ///     the threads that read the files (in order: the counts only grow).
    /// - Throws: ``CofferError`` `.param` if `directory` is not a directory or is the vault's own, or
    ///   for a tag, name or host name that cannot be one, and the errors of
    ///   ``Blobs/write(_:data:options:progress:)-(_,DataProtocol,_,_)``.
    public func backup(
        directory: URL,
        options: BackupOptions,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> BackupResult {
        try backup(paths: [directory], options: options, progress: progress)
    }

    /// Backs up several paths (directories or files) as one snapshot, as restic's `backup PATH…`
    /// does: the snapshot's tree is rooted at their deepest common directory (its ``SnapshotInfo/sourcePath``)
    /// and holds the paths and the directories on the way to them, so a restore recreates them
    /// under the target as they sit under that directory. ``SnapshotInfo/paths`` lists them. One
    /// directory given is that directory's snapshot, as ``backup(directory:options:progress:)-5xvd0``
    /// makes it; the default name is the paths joined by commas.
    ///
    /// - Throws: ``CofferError`` `.param` for no path, one that does not exist, and the errors of
    ///   ``backup(directory:options:progress:)-5xvd0``.
    public func backup(
        paths: [URL],
        options: BackupOptions,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> BackupResult {
        let walk = try BackupWalk(self, paths: paths, options: options)
        let scope = options.scope
        let compressionLevel = options.compressionLevel
        let tags = try options.checkedTags()
        let created = Int64((options.time ?? Date()).timeIntervalSince1970 * 1000)
        let keys = try vault.keyRing()
        let protection = try options.checkedProtection()
        let writeKeys = protection.isSealedToClassKey ? try vault.writeKeys(for: scope) : nil
        let store = snapshotStore(keys)
        let previous = try walk.previous(store, cipher: try makeCipher(), sealedToClassKey: writeKeys != nil)
        defer { previous.close() }
        let run = try BackupRun(environment: vault.environment, store: store.contentStore, scope: scope)
        // What the backup's chunks are born at or after (``BackupPartWriter/noteTreeBorn``).
        let schema = vault.schema
        let beganAt = try storage("reading the change log") {
            try vault.environment.read { txn in try ChangeLog.lastSequence(in: txn, schema: schema) }
        }
        let session = try ContentSession<BackupRun.Marker>(
            vault: vault,
            keys: keys,
            scope: scope,
            level: protection,
            writeKeys: writeKeys,
            compressionLevel: compressionLevel ?? vault.configuration.compressionLevel,
            hashesContents: false,
            progress: nil
        ) { (marker, summary, context) throws(CofferError) in try run.handle(marker, summary, context) }
        run.useChunker(session.chunker)
        // On a vault that offloads its content, with the store attached, a backup of syncable content
        // commits and uploads it in parts as it goes (a write-only client's has no keys to mark parts).
        if let uploader = vault.schema.contentUploader, scope == .syncable, writeKeys == nil {
            run.commitInParts(
                BackupPartWriter(
                    vault: vault,
                    keys: keys,
                    uploader: uploader,
                    write: session.write,
                    chunker: session.chunker,
                    description: BackupPartWriter.Description(
                        name: walk.name,
                        sourcePath: walk.sources.root,
                        hostname: walk.hostname,
                        created: created,
                        tags: tags,
                        paths: walk.sources.paths
                    ),
                    partSize: options.partSize.map { UInt64(max(1, $0)) } ?? uploader.partSize,
                    beganAt: beganAt
                )
            )
            run.parts?.watch(session.commitContext)
        }
        // Progress comes from the readers, as each path is handled: the walk runs ahead of them.
        let readers = BackupReaders(session: session, run: run, progress: progress)
        var leftOut = 0
        let walker = walk.walker(
            report: { run.report($0, $1) },
            exclude: { run.exclude(EntryPath.display($0)) },
            leftOut: { _ in leftOut += 1 }
        )
        do {
            try walker.walk { (walked) throws(CofferError) in
                guard walked.kind == .file else {
                    try readers.add(walked, unchanged: nil, isNew: false)
                    return
                }
                let before = previous.entry(at: walked.relativePath)
                let unchanged = before.flatMap { $0.isUnchanged(comparedWith: walked.entry) ? $0 : nil }
                try readers.add(walked, unchanged: unchanged, isNew: before == nil)
            }
            try readers.finish()
        } catch {
            readers.stop(error)
            let abandoned = session.abandoning(error)
            readers.waitUntilStopped()
            throw abandoned
        }
        let id = SecureRandom.bytes(count: 16)
        let record = try session.finish(
            prepare: { (context) throws(CofferError) in try run.finishTree(context) },
            { txn, context in
                try commitSnapshot(
                    id: id,
                    name: walk.name,
                    root: walk.sources.root,
                    hostname: walk.hostname,
                    created: created,
                    tags: tags,
                    paths: walk.sources.paths,
                    run: run,
                    keys: keys,
                    write: writeKeys,
                    in: txn,
                    context
                )
            }
        )
        var result = BackupResult(snapshot: record.info, problems: run.problems, excluded: run.excluded)
        result.excludedByPattern = leftOut
        if let parts = run.parts {
            // The snapshot, and what was read after the last part, go up too once any part did.
            parts.finishUploading()
            result.uploads = parts.uploads
        }
        return result
    }

    /// Backs up `directory` as a new snapshot, with ``BackupOptions`` spelled out: see
    /// ``backup(directory:options:progress:)-5xvd0``.
    public func backup(
        directory: URL,
        name: String? = nil,
        scope: SyncScope = .syncable,
        compressionLevel: Int? = nil,
        excluding patterns: [String] = [],
        excludingIgnoringCase caseInsensitivePatterns: [String] = [],
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> BackupResult {
        var options = BackupOptions(name: name, scope: scope)
        options.compressionLevel = compressionLevel
        options.excluding = patterns
        options.excludingIgnoringCase = caseInsensitivePatterns
        return try backup(directory: directory, options: options, progress: progress)
    }

    /// The final transaction of a backup: the record, the release of abandoned files, the change.
    private func commitSnapshot(
        id: [UInt8],
        name: String,
        root: String,
        hostname: String,
        created: Int64,
        tags: [String],
        paths: [String],
        run: BackupRun,
        keys: KeyRing,
        write: WriteKeys?,
        in txn: Transaction,
        _ context: ContentSession<BackupRun.Marker>.CommitContext
    ) throws -> SnapshotRecord {
        guard let tree = run.tree else { throw CofferError(.internalError, "the backup's tree was not finished") }
        let scope = context.keys.scope
        let store = snapshotStore(keys)
        var record = SnapshotRecord(
            id: id,
            name: name,
            sourcePath: root,
            hostname: hostname,
            created: created,
            scope: scope,
            level: context.keys.level,
            statistics: run.statistics,
            size: tree.size,
            digest: tree.digest,
            chunkCount: tree.chunkCount,
            chunks: tree.chunks,
            tags: tags,
            paths: paths
        )
        record.write = write
        if write != nil {
            // The owner's level-3 backups carry its mark; a write-only client's cannot.
            try record.markAsOwners(keys: keys)
            try Vault.markFormat(in: txn, schema: vault.schema, atLeast: Schema.sealedToClassKeyFormatVersion)
        }
        for list in run.abandonedContents { try Self.release(list, context: context, store: store, in: txn) }
        if let parts = run.parts {
            // Parts credited peers with every chunk stored before them, the tree's among them: those
            // go with the snapshot.
            try parts.noteTreeBorn(tree.chunks, context: context, in: txn)
            try parts.deleteParts(store: store, coder: context.coder, in: txn)
        }
        try txn.put(
            vault.schema.snapshots,
            key: id,
            value: try record.seal(keys: keys, cipher: context.coder.cipher)
        )
        try ChangeLog.record(
            .snapshotPut,
            recordID: id,
            scope: scope,
            description: record.changeDescription,
            keys: keys,
            in: txn,
            schema: vault.schema
        )
        return record
    }

    /// Every snapshot, oldest first.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while the vault is locked if any snapshot is
    ///   `completeUnlessOpen` (a listing never silently leaves snapshots out).
    public func list() throws(CofferError) -> [SnapshotInfo] {
        try vault.checkOpen()
        return try snapshotStore(try vault.keyRing()).all(cipher: try makeCipher(), skippingLocked: false).map(\.info)
    }

    /// The snapshot `reference` names: an id prefix of 6 or more hex digits, or a name (its latest
    /// snapshot taken on `host`; this machine's when `host` is `nil`).
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is none; its message lists the hosts that
    ///   have snapshots of that name when only other machines do.
    public func snapshot(_ reference: String, host: String? = nil) throws(CofferError) -> SnapshotInfo {
        try resolve(reference, host: host).info
    }

    /// Every path in a snapshot, in order, the backed-up directory itself first (as `.`, in
    /// snapshots from format 3 on).
    public func entries(of reference: String, host: String? = nil) throws(CofferError) -> [SnapshotEntry] {
        let record = try resolve(reference, host: host)
        var entries: [SnapshotEntry] = []
        try snapshotStore(try vault.keyRing()).forEachEntry(of: record) { entries.append(SnapshotEntry($0)) }
        return entries
    }

    /// Drops a snapshot; chunks no other snapshot or blob uses are freed. A name drops this host's
    /// latest snapshot of that name (or `host`'s); another machine's is reached only by `host` or id.
    public func forget(_ reference: String, host: String? = nil) throws(CofferError) {
        let record = try resolve(reference, host: host)
        try snapshotStore(try vault.keyRing()).forget(record)
    }

    /// The paths added, removed and changed (content, type, mode, owner, link target or extended
    /// attributes) from `old` to `new` (names resolved on `host`, this machine by default). Paths
    /// are shown as ``SnapshotEntry/path`` shows them.
    public func diff(_ old: String, _ new: String, host: String? = nil) throws(CofferError) -> SnapshotDiff {
        let store = snapshotStore(try vault.keyRing())
        // Both trees are read as streams and merged in walk order: memory stays bounded whatever
        // their size (the diff itself aside).
        let before = TreeStream(store: store, record: try resolve(old, host: host))
        defer { before.close() }
        let after = TreeStream(store: store, record: try resolve(new, host: host))
        defer { after.close() }
        var diff = SnapshotDiff()
        var previous = before.next()
        var current = after.next()
        while previous != nil || current != nil {
            if let old = previous, let new = current, old.path == new.path {
                if !new.isRoot, !Self.same(old, new) { diff.changed.append(new.displayPath) }
                previous = before.next()
                current = after.next()
            } else if let old = previous, current.map({ TreeStream.walkOrder(old.path, precedes: $0.path) }) ?? true {
                if !old.isRoot { diff.removed.append(old.displayPath) }
                previous = before.next()
            } else if let new = current {
                if !new.isRoot { diff.added.append(new.displayPath) }
                current = after.next()
            }
        }
        if let failure = before.failure ?? after.failure { throw failure }
        diff.added.sort()
        diff.removed.sort()
        diff.changed.sort()
        return diff
    }

    /// Whether a path is the same in two snapshots: kind, mode, owner, link target, content, and
    /// extended attributes (where the older entry recorded them).
    private static func same(_ previous: TreeEntry, _ entry: TreeEntry) -> Bool {
        previous.kind == entry.kind && previous.mode == entry.mode && previous.linkTarget == entry.linkTarget
            && previous.uid == entry.uid && previous.gid == entry.gid && sameContent(previous.content, entry.content)
            && (previous.changedSeconds == nil || previous.attributes == entry.attributes)
    }

    /// Whether two entries' contents are the same bytes (both absent counts as the same).
    private static func sameContent(_ old: TreeEntry.Content?, _ new: TreeEntry.Content?) -> Bool {
        switch (old, new) {
        case (nil, nil): true
        case (let old?, let new?): old.hasSameBytes(as: new)
        default: false
        }
    }

    // MARK: Internals

    package func resolve(_ reference: String, host: String? = nil) throws(CofferError) -> SnapshotRecord {
        try vault.checkOpen()
        return try snapshotStore(try vault.keyRing()).resolve(reference, host: host, cipher: try makeCipher())
    }

    package func snapshotStore(_ keys: KeyRing) -> SnapshotStore {
        SnapshotStore(environment: vault.environment, schema: vault.schema, keys: keys)
    }

    package func makeCipher() throws(CofferError) -> AESGCM {
        do {
            return try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }

    /// This machine's name, as snapshots record it (`gethostname`, the name `unshare -u` changes).
    package static var hostname: String { ProcessInfo.processInfo.hostName }

    /// Releases the references a list holds (in `txn`).
    package static func release(
        _ list: ChunkList,
        context: ContentSession<BackupRun.Marker>.CommitContext,
        store: SnapshotStore,
        in txn: Transaction
    ) throws {
        let chunks = store.contentStore.chunks
        switch list {
        case .inline(let entries):
            for entry in entries { try chunks.release(entry.id, in: txn) }
        case .indirect(let references):
            for reference in references {
                let entries = try store.contentStore.listChunkEntries(
                    reference,
                    keys: context.keys,
                    coder: context.coder,
                    in: txn
                )
                for entry in entries { try chunks.release(entry.id, in: txn) }
                try chunks.release(reference.id, in: txn)
            }
        }
    }
}

/// One path of a snapshot, as ``Snapshots/entries(of:host:)-71285`` lists it.
public struct SnapshotEntry: Sendable, Hashable {
    /// What the path is.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A regular file, stored with its content.
        case file
        /// A directory (empty ones too).
        case directory
        /// A symbolic link, stored with its target.
        case symlink
        /// A socket, device or FIFO: recorded by type only.
        case other
    }

    /// Relative to the backed-up directory, as printable text: `.` for the directory itself; bytes
    /// that are not UTF-8 and control characters written `\xHH`, a backslash `\\`.
    public let path: String
    /// The path's exact bytes, as the file system named it (empty for the directory itself).
    public let pathBytes: [UInt8]
    /// What the path is.
    public let kind: Kind
    /// Size in bytes (files).
    public let size: Int64
    /// Permission bits and type, as `st_mode`.
    public let mode: UInt32
    /// The owner's user id.
    public let uid: UInt32
    /// The owner's group id.
    public let gid: UInt32
    /// Modification time.
    public let modified: Date
    /// Where a symbolic link points, as printable text (escaped like ``path``).
    public let linkTarget: String?
    /// How many names the file had when backed up; a restore links the names of one file again.
    public let linkCount: Int
    /// Names of the extended attributes stored with the path (ACLs and capabilities among them).
    public let extendedAttributeNames: [String]
    /// Whether the file occupied less space than its size (it is restored with holes).
    public let isSparse: Bool

    package init(_ entry: TreeEntry) {
        path = entry.displayPath
        pathBytes = entry.path
        linkCount = Int(entry.linkCount)
        extendedAttributeNames = entry.attributes.map(\.displayName)
        isSparse = entry.isSparse
        switch entry.kind {
        case .file: kind = .file
        case .directory: kind = .directory
        case .symlink: kind = .symlink
        case .other: kind = .other
        }
        size = Int64(entry.size)
        mode = entry.mode
        uid = entry.uid
        gid = entry.gid
        modified = Date(
            timeIntervalSince1970: Double(entry.modifiedSeconds) + Double(entry.modifiedNanoseconds) / 1e9
        )
        linkTarget = entry.linkTarget.map { PrintableText.escaping($0) }
    }
}

/// What changed between two snapshots.
public struct SnapshotDiff: Sendable, Hashable {
    /// Paths only in the newer snapshot.
    public var added: [String] = []
    /// Paths only in the older snapshot.
    public var removed: [String] = []
    /// Paths in both whose content, type, mode, owner, link target or extended attributes differ.
    public var changed: [String] = []
}
