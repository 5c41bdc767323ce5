public import Foundation
internal import Glibc

/// A file for a restore worker to write.
struct RestoreJob {
    let entry: TreeEntry
    let path: String
}

/// What ``Snapshots/restore(_:to:include:progress:)`` did.
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
    /// modification times, symbolic links, empty directories, and owners when running as root.
    ///
    /// Paths are checked before anything is created: a path that is absolute, has a `..` or empty
    /// component, or would pass through a symbolic link (a crafted snapshot trying to write outside
    /// the target) stops the restore with `.decode`. File contents are checked chunk by chunk (each
    /// chunk against its keyed id; in snapshots of record version 1, also each file's SHA-256).
    ///
    /// - Parameters:
    ///   - reference: The snapshot: a unique prefix of its id (at least 6 hex digits), or a name (the
    ///     latest snapshot of that name).
    ///   - directory: Where to restore; must be empty or absent.
    ///   - include: Restore only paths matching this `fnmatch` pattern, and everything under a
    ///     matching directory (`docs`, `docs/*.txt`, `*.jpg`).
    ///   - progress: Called with the files and bytes restored so far.
    public func restore(
        _ reference: String,
        to directory: URL,
        include: String? = nil,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> RestoreResult {
        let record = try resolve(reference)
        let keys = try vault.keyRing()
        let root = directory.standardizedFileURL.path
        try Self.prepareTarget(root)
        let store = snapshotStore(keys)
        let reader = BlobReader(environment: vault.environment, store: store.blobStore, keys: keys)
        var restored = 0
        var bytes: Int64 = 0
        var problems: [SnapshotProblem] = []
        var directories: [TreeEntry] = []
        var includedDirectories: [String] = []
        let isRoot = geteuid() == 0
        let scope = record.scope
        let level = record.level
        let workers = OrderedPipeline<RestoreJob, [SnapshotProblem]>.defaultWorkerCount
        let files = OrderedPipeline<RestoreJob, [SnapshotProblem]>(workers: workers, window: workers * 8) {
            { (job) throws(CofferError) in
                try Self.restoreFile(
                    job.entry,
                    at: job.path,
                    scope: scope,
                    level: level,
                    reader: reader,
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
            guard TreeEntry.isSafe(entry.path) else {
                throw CofferError(
                    .decode,
                    "the snapshot holds the path '\(entry.path)', which would escape the target; nothing more was restored"
                )
            }
            if let include {
                let underIncluded = includedDirectories.contains { entry.path.hasPrefix($0 + "/") }
                guard underIncluded || fnmatch(include, entry.path, 0) == 0 else { return }
                if entry.kind == .directory { includedDirectories.append(entry.path) }
            }
            let path = root + "/" + entry.path
            try Self.checkParents(of: entry.path, under: root)
            switch entry.kind {
            case .directory:
                guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                    throw Self.failure("creating the directory", entry.path)
                }
                directories.append(entry)
            case .file:
                // Files are written by worker threads; their parents exist already (walk order).
                while !files.hasRoom { try collect() }
                try files.submit(RestoreJob(entry: entry, path: path))
                pendingFiles += 1
                bytes += Int64(entry.size)
                return
            case .symlink:
                let target = String(decoding: entry.linkTarget ?? [], as: UTF8.self)
                guard symlink(target, path) == 0 else { throw Self.failure("creating the symbolic link", entry.path) }
                if isRoot { lchown(path, entry.uid, entry.gid) }
                var times = [Self.timespec(entry), Self.timespec(entry)]
                utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
            case .other:
                if entry.mode & UInt32(S_IFMT) == UInt32(S_IFIFO), mkfifo(path, mode_t(entry.mode & 0o7777)) == 0 {
                    var times = [Self.timespec(entry), Self.timespec(entry)]
                    utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
                } else {
                    problems.append(
                        SnapshotProblem(
                            path: entry.path,
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
        // Directories last, deepest first: their modes may forbid writing, and creating entries in
        // them changed their times.
        for entry in directories.reversed() {
            let path = root + "/" + entry.path
            if isRoot, lchown(path, entry.uid, entry.gid) != 0 {
                problems.append(SnapshotProblem(path: entry.path, message: "owner not restored"))
            }
            chmod(path, mode_t(entry.mode & 0o7777))
            var times = [Self.timespec(entry), Self.timespec(entry)]
            utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
        }
        return RestoreResult(restoredPaths: restored, bytes: bytes, problems: problems)
    }

    /// Writes one file of a snapshot: content (checked chunk by chunk, and against its SHA-256 in a
    /// version 1 snapshot), mode, times, and owner when running as root. Runs on a restore worker
    /// thread.
    static func restoreFile(
        _ entry: TreeEntry,
        at path: String,
        scope: SyncScope,
        level: ProtectionLevel,
        reader: BlobReader,
        isRoot: Bool
    ) throws(CofferError) -> [SnapshotProblem] {
        guard let content = entry.content else {
            throw CofferError(
                .decode,
                "the snapshot's file '\(entry.path)' has no content record; it is damaged"
            )
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("creating the file", entry.path) }
        defer { close(descriptor) }
        var sink = FileDescriptorSink(descriptor: descriptor)
        do throws(CofferError) {
            try reader.stream(
                FileContent(
                    scope: scope,
                    level: level,
                    size: entry.size,
                    expectedDigest: content.digest,
                    chunks: content.chunks
                ),
                range: 0..<entry.size,
                to: &sink,
                progress: nil
            )
        } catch  where error.code == .decode {
            throw CofferError(.decode, "file '\(entry.path)' of the snapshot is damaged: \(error.message)")
        }
        var problems: [SnapshotProblem] = []
        if isRoot, fchown(descriptor, entry.uid, entry.gid) != 0 {
            problems.append(SnapshotProblem(path: entry.path, message: "owner not restored"))
        }
        fchmod(descriptor, mode_t(entry.mode & 0o7777))
        var times = [Self.timespec(entry), Self.timespec(entry)]
        futimens(descriptor, &times)
        return problems
    }

    /// Creates `root` (with parents) if absent; refuses one that is not an empty directory.
    static func prepareTarget(_ root: String) throws(CofferError) {
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
    static func checkParents(of path: String, under root: String) throws(CofferError) {
        var current = root
        for component in path.split(separator: "/").dropLast() {
            current += "/" + component
            var status = stat()
            if lstat(current, &status) != 0 {
                guard errno == ENOENT, mkdir(current, 0o755) == 0 else { throw failure("creating a directory", path) }
                continue
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw CofferError(
                    .decode,
                    "the snapshot's path '\(path)' passes through '\(current.dropFirst(root.count + 1))', which is not a directory (a symbolic link?); refusing to write outside the target"
                )
            }
        }
    }

    static func failure(_ action: String, _ path: String) -> CofferError {
        let code = errno
        return CofferError(
            code == ENOSPC ? .diskFull : .io,
            "\(action) '\(path)' failed: \(String(cString: strerror(code)))"
        )
    }

    static func timespec(_ entry: TreeEntry) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(entry.modifiedSeconds), tv_nsec: Int(entry.modifiedNanoseconds))
    }
}
