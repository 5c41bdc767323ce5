public import Foundation
internal import Glibc

/// A file for a restore worker to write, or to check first.
package struct RestoreJob {
    /// What is at the file's path in the target, and what to do about it.
    package enum Check {
        /// Nothing: write it.
        case create
        /// Something to replace without looking (a link, a FIFO, an empty directory removed).
        case replace
        /// A regular file: write it only if its content differs (trusting an equal size and
        /// modification time first, for `--overwrite if-changed`).
        case verify(trustingSizeAndTime: Bool, existing: RestoreTarget.Existing)
    }

    package let entry: TreeEntry
    package let path: [CChar]
    package let check: Check

    package init(entry: TreeEntry, path: [CChar], check: Check = .create) {
        self.entry = entry
        self.path = path
        self.check = check
    }
}

/// What ``Snapshots/restore(_:host:to:including:includingIgnoringCase:excluding:excludingIgnoringCase:overwrite:deleting:dryRun:changes:progress:)-6xncf``
/// did, or with `dryRun` would do.
public struct RestoreResult: Sendable {
    /// Files, directories and links created or replaced.
    public let restoredPaths: Int
    /// Bytes of file content written.
    public let bytes: Int64
    /// Paths restored only in part (an owner that could not be set, a special file that is not a
    /// FIFO), with why.
    public let problems: [SnapshotProblem]
    /// Of ``restoredPaths``, the existing files and links replaced because they differed.
    public var updatedPaths = 0
    /// Existing files that already held the snapshot's content (only their metadata set).
    public var unchangedPaths = 0
    /// Existing paths left as they were by `--overwrite never` or `if-newer`.
    public var keptPaths = 0
    /// Paths of the target that are not in the snapshot, removed by `--delete` (each path under a
    /// removed directory counted).
    public var deletedPaths = 0
}

extension Snapshots {
    /// Recreates a snapshot's tree in `directory`, new, empty or not (restic's in-place restore):
    /// contents, modes, modification times, symbolic links, empty directories, names exactly as they
    /// were stored (UTF-8 or not), hard links as links, sparse files with their holes, extended
    /// attributes (ACLs and file capabilities among them), the backed-up directory's own mode, times
    /// and attributes, and owners when running as root. What cannot be put back (an attribute the
    /// file system or a non-root user cannot set, an owner) is listed in ``RestoreResult/problems``.
    ///
    /// Each file is written under a temporary name in its directory (`.coffer-restore-…`) and renamed
    /// into place when complete, so a final name never holds a partial file. A restore that fails or
    /// is interrupted removes the file it was writing and says how far it got; the paths already in
    /// place are whole, and running the same restore again completes it (the existing files checked
    /// and kept). What is at a path already is treated as `overwrite` says; a non-directory where the
    /// snapshot has a directory is replaced by it, and a directory where it has anything else is
    /// replaced only if empty or with `deleting`.
    ///
    /// Paths are checked before anything is created: a path that is absolute, has a `..` or empty
    /// component, or would pass through a symbolic link (a crafted snapshot trying to write outside
    /// the target) stops the restore with `.decode`. File contents are checked chunk by chunk (each
    /// chunk against its keyed id; in snapshots of record version 1, also each file's SHA-256).
    ///
    /// ```swift
    /// let result = try vault.snapshots.restore("latest", to: home, including: ["docs"], deleting: true, dryRun: true) {
    ///     print($0)   // "updated   docs/report.pdf", "deleted   docs/draft.tmp"
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - reference: The snapshot: a unique prefix of its id (at least 6 hex digits), a name (the
    ///     latest snapshot of that name taken on `host`), or `latest` (the newest taken on `host`).
    ///   - host: Whose snapshot a name or `latest` means; this machine's when `nil`.
    ///   - directory: Where to restore; created if absent.
    ///   - including: Restore only paths these patterns match (`--include`), and everything under a
    ///     matching directory: `docs`, `report.pdf` (at any depth), `docs/*.txt`, `!docs/old`.
    ///     Patterns follow restic's rules, as excludes do, matched against each path as it was
    ///     backed up (the backed-up directory's absolute path, then the path under it). Empty:
    ///     everything.
    ///   - includingIgnoringCase: The same, matched ignoring case (`--iinclude`), a list of its own.
    ///   - patterns: Leave out paths these patterns match (`--exclude`): `*.iso`, `cache`,
    ///     `!cache/keep`.
    ///   - caseInsensitivePatterns: The same, matched ignoring case (`--iexclude`), a list of its own.
    ///   - overwrite: What to do with a path that exists already (``RestoreOverwrite``).
    ///   - deleting: Remove what the target holds that the snapshot does not, in every directory
    ///     restored, where the patterns select it (restic's `--delete`); refused for the target `/`
    ///     with no pattern.
    ///   - dryRun: Work out and report every change, checking existing files' contents, but change
    ///     nothing (the target is not even created).
    ///   - changes: Told each path restored, updated, unchanged, kept or deleted, on this thread.
    ///   - progress: Called with the files and bytes restored so far.
    /// - Throws: ``CofferError``: `.param` for a target that is not a directory or a `--delete` of `/`
    ///   without patterns (nothing changed); for a failure midway (a full disk, Ctrl-C), its error,
    ///   naming the file and how far the restore got.
    public func restore(
        _ reference: String,
        host: String? = nil,
        to directory: URL,
        including: [String] = [],
        includingIgnoringCase: [String] = [],
        excluding patterns: [String] = [],
        excludingIgnoringCase caseInsensitivePatterns: [String] = [],
        overwrite: RestoreOverwrite = .always,
        deleting: Bool = false,
        dryRun: Bool = false,
        changes: ((RestoreChange) -> Void)? = nil,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) throws(CofferError) -> RestoreResult {
        let rules = try PathSelection(
            excluding: patterns,
            excludingIgnoringCase: caseInsensitivePatterns,
            including: including,
            includingIgnoringCase: includingIgnoringCase
        )
        let record = try resolve(reference, host: host)
        let rootPath = directory.standardizedFileURL.path
        if deleting, rules.isEmpty, rootPath == "/" {
            throw CofferError(
                .param,
                "\(InterfaceName.restoreDeleting) into / would remove everything on this machine that is not in the snapshot; give \(InterfaceName.includeOption) or \(InterfaceName.excludeOption) patterns to say what to restore and delete (restic's rule); nothing was changed"
            )
        }
        let keys = try vault.keyRing()
        let isFresh = try Self.prepareTarget(rootPath, create: !dryRun)
        var run = RestoreRun(
            record: record,
            root: Array(rootPath.utf8),
            rules: rules,
            overwrite: overwrite,
            deleting: deleting,
            dryRun: dryRun,
            isFresh: isFresh,
            changes: changes
        )
        let store = snapshotStore(keys)
        let reader = ContentReader(environment: vault.environment, store: store.contentStore, keys: keys)
        do {
            try run.restore(store: store, reader: reader, progress: progress)
        } catch {
            throw run.failure(error)
        }
        return run.result
    }

    /// Creates `root` (with parents) if absent and `create` says so; refuses one that is not a
    /// directory.
    ///
    /// - Returns: Whether the target was absent or empty (a fresh restore: nothing to check).
    package static func prepareTarget(_ root: String, create: Bool) throws(CofferError) -> Bool {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: root, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CofferError(
                    .param,
                    "\(root) exists and is not a directory; restore into a directory (new, empty or not); nothing was changed"
                )
            }
            return (try? files.contentsOfDirectory(atPath: root))?.isEmpty == true
        }
        guard create else { return true }
        do {
            try files.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw CofferError(.io, "cannot create \(root): \(error.localizedDescription)")
        }
        return true
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

    package static func failure(_ action: String, _ path: String) -> CofferError {
        Errno.current.cofferError("\(action) '\(path)' failed")
    }

    package static func timespec(_ entry: TreeEntry) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(entry.modifiedSeconds), tv_nsec: Int(entry.modifiedNanoseconds))
    }
}
