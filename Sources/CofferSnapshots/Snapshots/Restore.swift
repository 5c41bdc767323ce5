public import Foundation
internal import Glibc

/// A file for a restore worker to write.
package struct RestoreJob {
    package let entry: TreeEntry
    package let path: [CChar]

    package init(entry: TreeEntry, path: [CChar]) {
        self.entry = entry
        self.path = path
    }
}

/// What ``Snapshots/restore(_:host:to:including:includingIgnoringCase:excluding:excludingIgnoringCase:progress:)``
/// did.
public struct RestoreResult: Sendable {
    /// Files, directories and links created.
    public let restoredPaths: Int
    /// Bytes of file content written.
    public let bytes: Int64
    /// Paths restored only in part (an owner that could not be set, a special file that is not a
    /// FIFO), with why.
    public let problems: [SnapshotProblem]
}

extension Snapshots {
    /// Recreates a snapshot's tree in `directory`, which must be empty or absent: contents, modes,
    /// modification times, symbolic links, empty directories, names exactly as they were stored
    /// (UTF-8 or not), hard links as links, sparse files with their holes, extended attributes (ACLs
    /// and file capabilities among them), the backed-up directory's own mode, times and attributes,
    /// and owners when running as root. What cannot be put back (an attribute the file system or a
    /// non-root user cannot set, an owner) is listed in ``RestoreResult/problems``.
    ///
    /// Paths are checked before anything is created: a path that is absolute, has a `..` or empty
    /// component, or would pass through a symbolic link (a crafted snapshot trying to write outside
    /// the target) stops the restore with `.decode`. File contents are checked chunk by chunk (each
    /// chunk against its keyed id; in snapshots of record version 1, also each file's SHA-256).
    ///
    /// - Parameters:
    ///   - reference: The snapshot: a unique prefix of its id (at least 6 hex digits), a name (the
    ///     latest snapshot of that name taken on `host`), or `latest` (the newest taken on `host`).
    ///   - host: Whose snapshot a name or `latest` means; this machine's when `nil`.
    ///   - directory: Where to restore; must be empty or absent.
    ///   - including: Restore only paths these patterns match (`--include`), and everything under a
    ///     matching directory: `docs`, `report.pdf` (at any depth), `docs/*.txt`, `!docs/old`.
    ///     Patterns follow restic's rules, as excludes do, matched against each path as it was
    ///     backed up (the backed-up directory's absolute path, then the path under it). Empty:
    ///     everything.
    ///   - includingIgnoringCase: The same, matched ignoring case (`--iinclude`), a list of its own.
    ///   - patterns: Leave out paths these patterns match (`--exclude`): `*.iso`, `cache`,
    ///     `!cache/keep`.
    ///   - caseInsensitivePatterns: The same, matched ignoring case (`--iexclude`), a list of its own.
    ///   - progress: Called with the files and bytes restored so far.
    public func restore(
        _ reference: String,
        host: String? = nil,
        to directory: URL,
        including: [String] = [],
        includingIgnoringCase: [String] = [],
        excluding patterns: [String] = [],
        excludingIgnoringCase caseInsensitivePatterns: [String] = [],
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> RestoreResult {
        let rules = try PathSelection(
            excluding: patterns,
            excludingIgnoringCase: caseInsensitivePatterns,
            including: including,
            includingIgnoringCase: includingIgnoringCase
        )
        let record = try resolve(reference, host: host)
        let sourceComponents = Array(record.sourcePath.utf8).split(separator: UInt8(ascii: "/")).map(Array.init)
        /// The directory the patterns last left out wholly: entries come in walk order, so only it
        /// can hold the next one. And the directories left out but waiting for something under them
        /// to be taken (each then restored just before it).
        var excludedDirectory: [UInt8]?
        var pendingDirectories: [TreeEntry] = []
        let keys = try vault.keyRing()
        let rootPath = directory.standardizedFileURL.path
        try Self.prepareTarget(rootPath)
        let root = Array(rootPath.utf8)
        let store = snapshotStore(keys)
        let reader = ContentReader(environment: vault.environment, store: store.contentStore, keys: keys)
        var restored = 0
        var bytes: Int64 = 0
        var problems: [SnapshotProblem] = []
        var directories: [TreeEntry] = []
        /// The first restored name of each file with several, and the names to link to it at the end
        /// (its worker may not have created it yet).
        var firstNames: [FileIdentity: [UInt8]] = [:]
        var links: [(entry: TreeEntry, existing: [UInt8])] = []
        let isRoot = geteuid() == 0
        let scope = record.scope
        let level = record.level
        let write = record.write
        let workers = OrderedPipeline<RestoreJob, [SnapshotProblem]>.defaultWorkerCount
        let files = OrderedPipeline<RestoreJob, [SnapshotProblem]>(workers: workers, window: workers * 8) {
            () throws(CofferError) in
            // Each worker keeps its contexts and keys for all the files it writes.
            let context = try reader.makeContext()
            return { (job) throws(CofferError) in
                try Self.restoreFile(
                    job.entry,
                    at: job.path,
                    scope: scope,
                    level: level,
                    write: write,
                    reader: reader,
                    context: context,
                    isRoot: isRoot
                )
            }
        }
        defer { files.shutDown() }
        var pendingFiles = 0
        func collect() throws(CofferError) {
            guard let fileProblems = try files.next() else { return }
            pendingFiles -= 1
            problems += fileProblems
            restored += 1
        }
        try store.forEachEntry(of: record) { (entry) throws(CofferError) in
            if entry.isRoot {
                if entry.kind == .directory { directories.append(entry) }
                return
            }
            guard EntryPath.isSafe(entry.path) else {
                throw CofferError(
                    .decode,
                    "the snapshot holds the path '\(entry.displayPath)', which would escape the target; nothing more was restored"
                )
            }
            if !rules.isEmpty {
                if let excludedDirectory, EntryPath.isInside(entry.path, excludedDirectory) { return }
                while let last = pendingDirectories.last, !EntryPath.isInside(entry.path, last.path) {
                    pendingDirectories.removeLast()
                }
                let components = sourceComponents + entry.path.split(separator: UInt8(ascii: "/")).map(Array.init)
                switch rules.decision(for: components, isDirectory: entry.kind == .directory) {
                case .included:
                    // Something put back: the directories above it first.
                    for parent in pendingDirectories {
                        try Self.checkParents(of: parent.path, under: root)
                        try Self.createDirectory(EntryPath.absolute(root, parent.path), parent.displayPath)
                        directories.append(parent)
                    }
                    pendingDirectories.removeAll()
                case .excluded:
                    if entry.kind == .directory { excludedDirectory = entry.path }
                    return
                case .excludedWalkingInto:
                    pendingDirectories.append(entry)
                    return
                }
            }
            let path = EntryPath.absolute(root, entry.path)
            try Self.checkParents(of: entry.path, under: root)
            switch entry.kind {
            case .directory:
                try Self.createDirectory(path, entry.displayPath)
                directories.append(entry)
            case .file:
                if entry.linkCount > 1 {
                    let identity = FileIdentity(device: entry.device, inode: entry.inode)
                    if let existing = firstNames[identity] {
                        links.append((entry, existing))
                        return
                    }
                    firstNames[identity] = entry.path
                }
                // Files are written by worker threads; their parents exist already (walk order).
                while !files.hasRoom { try collect() }
                try files.submit(RestoreJob(entry: entry, path: path))
                pendingFiles += 1
                bytes += Int64(entry.size)
                return
            case .symlink:
                let target = (entry.linkTarget ?? []).map { CChar(bitPattern: $0) } + [0]
                guard symlink(target, path) == 0 else {
                    throw Self.failure("creating the symbolic link", entry.displayPath)
                }
                if isRoot, lchown(path, entry.uid, entry.gid) != 0 {
                    problems.append(SnapshotProblem(path: entry.displayPath, message: "owner not restored"))
                }
                problems += ExtendedAttribute.apply(entry.attributes, to: path).map {
                    SnapshotProblem(path: entry.displayPath, message: $0)
                }
                var times = [Self.timespec(entry), Self.timespec(entry)]
                utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
            case .other:
                if entry.mode & UInt32(S_IFMT) == UInt32(S_IFIFO), mkfifo(path, mode_t(entry.mode & 0o7777)) == 0 {
                    problems += ExtendedAttribute.apply(entry.attributes, to: path).map {
                        SnapshotProblem(path: entry.displayPath, message: $0)
                    }
                    var times = [Self.timespec(entry), Self.timespec(entry)]
                    utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
                } else {
                    problems.append(
                        SnapshotProblem(
                            path: entry.displayPath,
                            message: "a socket or device, recorded by type only; not recreated"
                        )
                    )
                    return
                }
            }
            restored += 1
            progress?(BackupProgress(files: restored, bytesRead: bytes))
        }
        files.finishSubmitting()
        while pendingFiles > 0 { try collect() }
        // Further names of one file, now that the first name exists and is complete.
        for (entry, existing) in links {
            guard link(EntryPath.absolute(root, existing), EntryPath.absolute(root, entry.path)) == 0 else {
                throw Self.failure("creating the hard link", entry.displayPath)
            }
            restored += 1
        }
        // Directories last, deepest first: their modes may forbid writing, and creating entries in
        // them changed their times. The backed-up directory itself (version 3 on) comes last of all.
        for entry in directories.reversed() {
            let path = EntryPath.absolute(root, entry.path)
            if isRoot, lchown(path, entry.uid, entry.gid) != 0 {
                problems.append(SnapshotProblem(path: entry.displayPath, message: "owner not restored"))
            }
            chmod(path, mode_t(entry.mode & 0o7777))
            problems += ExtendedAttribute.apply(entry.attributes, to: path).map {
                SnapshotProblem(path: entry.displayPath, message: $0)
            }
            var times = [Self.timespec(entry), Self.timespec(entry)]
            utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
        }
        return RestoreResult(restoredPaths: restored, bytes: bytes, problems: problems)
    }

    /// Writes one file of a snapshot: content (checked chunk by chunk, and against its SHA-256 in a
    /// version 1 snapshot; with holes where a sparse file had them), owner when running as root,
    /// mode, extended attributes (after the owner, which clears capabilities), times. Runs on a
    /// restore worker thread.
    package static func restoreFile(
        _ entry: TreeEntry,
        at path: [CChar],
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?,
        reader: ContentReader,
        context: ContentReadContext? = nil,
        isRoot: Bool
    ) throws(CofferError) -> [SnapshotProblem] {
        // Checked before the file is created: a damaged tree leaves nothing half made.
        _ = try FileContent(entry, scope: scope, level: level, write: write)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("creating the file", entry.displayPath) }
        defer { close(descriptor) }
        func stream(to sink: inout some ByteSink) throws(CofferError) {
            try reader.streamFile(
                entry,
                scope: scope,
                level: level,
                write: write,
                to: &sink,
                context: context,
                parallelAbove: Self.filesParallelAbove
            )
        }
        if entry.isSparse {
            var sink = SparseFileSink(descriptor: descriptor)
            try stream(to: &sink)
            try sink.finish()
        } else {
            var sink = FileDescriptorSink(descriptor: descriptor)
            try stream(to: &sink)
        }
        var problems: [SnapshotProblem] = []
        if isRoot, fchown(descriptor, entry.uid, entry.gid) != 0 {
            problems.append(SnapshotProblem(path: entry.displayPath, message: "owner not restored"))
        }
        fchmod(descriptor, mode_t(entry.mode & 0o7777))
        problems += ExtendedAttribute.apply(entry.attributes, to: descriptor).map {
            SnapshotProblem(path: entry.displayPath, message: $0)
        }
        var times = [Self.timespec(entry), Self.timespec(entry)]
        futimens(descriptor, &times)
        return problems
    }

    /// Files of more chunks than this are opened by threads of their own; smaller ones on their
    /// restore worker, as the workers already write several files at once.
    static let filesParallelAbove = 16

    /// Creates `root` (with parents) if absent; refuses one that is not an empty directory.
    package static func prepareTarget(_ root: String) throws(CofferError) {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: root, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CofferError(
                    .param,
                    "\(root) exists and is not a directory; restore into an empty or new directory"
                )
            }
            guard (try? files.contentsOfDirectory(atPath: root))?.isEmpty == true else {
                throw CofferError(.param, "\(root) is not empty; restore into an empty or new directory")
            }
            return
        }
        do {
            try files.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw CofferError(.io, "cannot create \(root): \(error.localizedDescription)")
        }
    }

    /// Creates the missing parents of `path` (for a subset restore) and refuses one that is a
    /// symbolic link or not a directory.
    package static func checkParents(of path: [UInt8], under root: [UInt8]) throws(CofferError) {
        var current: [UInt8] = []
        for component in path.split(separator: UInt8(ascii: "/")).dropLast() {
            current = EntryPath.joining(current, Array(component))
            let absolute = EntryPath.absolute(root, current)
            var status = stat()
            if lstat(absolute, &status) != 0 {
                guard Errno.current.code == ENOENT, mkdir(absolute, 0o755) == 0 else {
                    throw failure("creating a directory", EntryPath.display(path))
                }
                continue
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw CofferError(
                    .decode,
                    "the snapshot's path '\(EntryPath.display(path))' passes through '\(EntryPath.display(current))', which is not a directory (a symbolic link?); refusing to write outside the target"
                )
            }
        }
    }

    /// Creates a directory being restored (private until its own mode is set at the end); one that
    /// exists already is fine.
    static func createDirectory(_ path: [CChar], _ shown: String) throws(CofferError) {
        guard mkdir(path, 0o700) == 0 || Errno.current.code == EEXIST else {
            throw failure("creating the directory", shown)
        }
    }

    package static func failure(_ action: String, _ path: String) -> CofferError {
        Errno.current.cofferError("\(action) '\(path)' failed")
    }

    package static func timespec(_ entry: TreeEntry) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(entry.modifiedSeconds), tv_nsec: Int(entry.modifiedNanoseconds))
    }
}
