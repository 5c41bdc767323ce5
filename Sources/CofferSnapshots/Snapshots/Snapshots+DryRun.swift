public import Foundation

/// One path a dry run found, and what a backup would do with it.
public struct BackupPlanEntry: Sendable, Hashable {
    /// What a backup would do with a path.
    public enum Change: String, Sendable, Hashable, Codable {
        /// A file the previous snapshot of the name does not hold: read.
        case new
        /// A file whose size, times or inode differ from the previous snapshot's: read.
        case changed
        /// A file that matches the previous snapshot's: not read.
        case unchanged
        /// A directory, link or special file: recorded, nothing to read.
        case recorded
    }

    /// The path, relative to the backed-up directory, printable (`\xHH` for bytes that are not UTF-8).
    public let path: String
    /// What the path is.
    public let kind: SnapshotEntry.Kind
    /// Its size in bytes (files).
    public let size: Int64
    /// What a backup would do with it.
    public let change: Change

    /// Whether a backup would read the file's content.
    public var wouldRead: Bool { change == .new || change == .changed }
}

/// What ``Snapshots/dryRun(directory:options:visit:)-5n1wz`` found: what a backup with the same options
/// would read and leave out, without reading any content or storing anything.
public struct BackupPlan: Sendable {
    /// Regular files the backup would record.
    public var files = 0
    /// Of them, files with no previous version, which it would read.
    public var newFiles = 0
    /// Files that changed since the previous snapshot, which it would read.
    public var changedFiles = 0
    /// Files it would not read: they match the previous snapshot's.
    public var unchangedFiles = 0
    /// Directories, links and special files it would record.
    public var others = 0
    /// The bytes it would read.
    public var bytesToRead: Int64 = 0
    /// Paths the exclude patterns and options would leave out (a directory counts once).
    public var excludedByPattern = 0
    /// Directories it would leave out because they are the vault's own.
    public var excluded: [String] = []
    /// Paths it could not look at.
    public var problems: [SnapshotProblem] = []
}

extension Snapshots {
    /// Walks `directory` as ``backup(directory:options:progress:)-5xvd0`` would, with the same excludes and
    /// limits, and compares each file with this host's previous snapshot of the name, but reads no
    /// content and stores nothing (restic's `backup --dry-run`). Memory stays bounded: each path is
    /// handed to `visit` as it is found.
    ///
    /// - Throws: ``CofferError`` `.param` as ``backup(directory:options:progress:)-5xvd0`` does for the
    ///   directory and the options.
    public func dryRun(
        directory: URL,
        options: BackupOptions,
        visit: (BackupPlanEntry) -> Void
    ) throws(CofferError) -> BackupPlan {
        try dryRun(paths: [directory], options: options, visit: visit)
    }

    /// ``dryRun(directory:options:visit:)-5n1wz`` for the several paths
    /// ``backup(paths:options:progress:)-17xcp`` takes.
    public func dryRun(
        paths: [URL],
        options: BackupOptions,
        visit: (BackupPlanEntry) -> Void
    ) throws(CofferError) -> BackupPlan {
        let walk = try BackupWalk(self, paths: paths, options: options)
        let previous = try walk.previous(
            snapshotStore(try vault.keyRing()),
            cipher: try makeCipher(),
            sealedToClassKey: try options.checkedProtection().isSealedToClassKey
        )
        defer { previous.close() }
        var plan = BackupPlan()
        let walker = walk.walker(
            report: { plan.problems.append(SnapshotProblem(path: EntryPath.display($0), message: $1)) },
            exclude: { plan.excluded.append(EntryPath.display($0)) },
            leftOut: { _ in plan.excludedByPattern += 1 }
        )
        try walker.walk { walked in
            let entry = walked.entry
            guard !entry.isRoot else { return }
            let change: BackupPlanEntry.Change
            if walked.kind == .file {
                plan.files += 1
                if let before = previous.entry(at: walked.relativePath) {
                    change = before.isUnchanged(comparedWith: entry) ? .unchanged : .changed
                } else {
                    change = .new
                }
                switch change {
                case .new: plan.newFiles += 1
                case .changed: plan.changedFiles += 1
                default: plan.unchangedFiles += 1
                }
                if change != .unchanged { plan.bytesToRead += Int64(walked.size) }
            } else {
                plan.others += 1
                change = .recorded
            }
            let shown = SnapshotEntry(entry)
            visit(BackupPlanEntry(path: shown.path, kind: shown.kind, size: Int64(walked.size), change: change))
        }
        return plan
    }
}
