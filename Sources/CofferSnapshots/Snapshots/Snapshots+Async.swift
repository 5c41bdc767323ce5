public import Foundation

/// The asynchronous forms of the snapshot operations. Each runs its synchronous twin on a global
/// dispatch queue, so the tree walks, the write and read pipelines and LMDB's blocking I/O never
/// occupy a thread of Swift's cooperative pool. In an `async` function Swift picks these; the two
/// forms have the same semantics and throw the same errors. Closures given to them (`visit`,
/// `changes`, `progress`) are called on that queue's thread, so they must be `@Sendable`.
extension Snapshots {
    // MARK: Backing up

    /// Backs up `directory` as a new snapshot; see ``backup(directory:options:progress:)-5xvd0``.
    public func backup(
        directory: URL,
        options: BackupOptions,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws(CofferError) -> BackupResult {
        try await offload { () throws(CofferError) in
            try self.backup(directory: directory, options: options, progress: progress)
        }
    }

    /// Backs up several paths as one snapshot; see ``backup(paths:options:progress:)-17xcp``.
    public func backup(
        paths: [URL],
        options: BackupOptions,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws(CofferError) -> BackupResult {
        try await offload { () throws(CofferError) in
            try self.backup(paths: paths, options: options, progress: progress)
        }
    }

    /// Backs up `directory` as a new snapshot, with ``BackupOptions`` spelled out; see
    /// ``backup(directory:name:scope:compressionLevel:excluding:excludingIgnoringCase:progress:)-8mgty``.
    public func backup(
        directory: URL,
        name: String? = nil,
        scope: SyncScope = .syncable,
        compressionLevel: Int? = nil,
        excluding patterns: [String] = [],
        excludingIgnoringCase caseInsensitivePatterns: [String] = [],
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws(CofferError) -> BackupResult {
        try await offload { () throws(CofferError) in
            try self.backup(
                directory: directory,
                name: name,
                scope: scope,
                compressionLevel: compressionLevel,
                excluding: patterns,
                excludingIgnoringCase: caseInsensitivePatterns,
                progress: progress
            )
        }
    }

    /// Walks `directory` as a backup would, storing nothing; see
    /// ``dryRun(directory:options:visit:)-5n1wz``.
    public func dryRun(
        directory: URL,
        options: BackupOptions,
        visit: @escaping @Sendable (BackupPlanEntry) -> Void
    ) async throws(CofferError) -> BackupPlan {
        try await offload { () throws(CofferError) in
            try self.dryRun(directory: directory, options: options, visit: visit)
        }
    }

    /// Walks several paths as a backup would, storing nothing; see
    /// ``dryRun(paths:options:visit:)-3uqbd``.
    public func dryRun(
        paths: [URL],
        options: BackupOptions,
        visit: @escaping @Sendable (BackupPlanEntry) -> Void
    ) async throws(CofferError) -> BackupPlan {
        try await offload { () throws(CofferError) in try self.dryRun(paths: paths, options: options, visit: visit) }
    }

    /// Adopts a write-only client's snapshot; see ``adopt(_:)-6vae9``.
    @discardableResult
    public func adopt(_ reference: String) async throws(CofferError) -> SnapshotInfo {
        try await offload { () throws(CofferError) in try self.adopt(reference) }
    }

    // MARK: Restoring and reading

    /// Restores a snapshot, or the paths the patterns select, into `directory`; see
    /// ``restore(_:host:to:including:includingIgnoringCase:excluding:excludingIgnoringCase:overwrite:deleting:dryRun:changes:progress:)-6xncf``.
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
        changes: (@Sendable (RestoreChange) -> Void)? = nil,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws(CofferError) -> RestoreResult {
        try await offload { () throws(CofferError) in
            try self.restore(
                reference,
                host: host,
                to: directory,
                including: including,
                includingIgnoringCase: includingIgnoringCase,
                excluding: patterns,
                excludingIgnoringCase: caseInsensitivePatterns,
                overwrite: overwrite,
                deleting: deleting,
                dryRun: dryRun,
                changes: changes,
                progress: progress
            )
        }
    }

    /// Writes one file of a snapshot, or a directory as a tar archive, to `descriptor`; see
    /// ``dump(_:host:path:toFileDescriptor:)-vqjx``.
    @discardableResult
    public func dump(
        _ reference: String,
        host: String? = nil,
        path: String,
        toFileDescriptor descriptor: Int32
    ) async throws(CofferError) -> DumpResult {
        try await offload { () throws(CofferError) in
            try self.dump(reference, host: host, path: path, toFileDescriptor: descriptor)
        }
    }

    /// Every path in a snapshot, in order; see ``entries(of:host:)-71285``.
    public func entries(of reference: String, host: String? = nil) async throws(CofferError) -> [SnapshotEntry] {
        try await offload { () throws(CofferError) in try self.entries(of: reference, host: host) }
    }

    /// The paths of one directory of a snapshot, or everything under it; see
    /// ``entries(of:host:under:recursive:visit:)-55rtq``.
    public func entries(
        of reference: String,
        host: String? = nil,
        under path: String,
        recursive: Bool = false,
        visit: @escaping @Sendable (SnapshotEntry) -> Void
    ) async throws(CofferError) {
        try await offload { () throws(CofferError) in
            try self.entries(of: reference, host: host, under: path, recursive: recursive, visit: visit)
        }
    }

    /// Every path matching `pattern` in the snapshots chosen; see
    /// ``find(_:matching:snapshots:modifiedAfter:modifiedBefore:visit:)-6ajst``.
    @discardableResult
    public func find(
        _ pattern: String,
        matching filter: SnapshotFilter = SnapshotFilter(),
        snapshots references: [String] = [],
        modifiedAfter: Date? = nil,
        modifiedBefore: Date? = nil,
        visit: @escaping @Sendable (FoundEntry) -> Void
    ) async throws(CofferError) -> Int {
        try await offload { () throws(CofferError) in
            try self.find(
                pattern,
                matching: filter,
                snapshots: references,
                modifiedAfter: modifiedAfter,
                modifiedBefore: modifiedBefore,
                visit: visit
            )
        }
    }

    /// The paths added, removed and changed from `old` to `new`; see ``diff(_:_:host:)-279g8``.
    public func diff(_ old: String, _ new: String, host: String? = nil) async throws(CofferError) -> SnapshotDiff {
        try await offload { () throws(CofferError) in try self.diff(old, new, host: host) }
    }

    // MARK: Listing

    /// Every snapshot, oldest first; see ``list()-7mhmw``.
    public func list() async throws(CofferError) -> [SnapshotInfo] {
        try await offload { () throws(CofferError) in try self.list() }
    }

    /// The snapshots `filter` passes, oldest first; see ``list(matching:)-31jbg``.
    public func list(matching filter: SnapshotFilter) async throws(CofferError) -> [SnapshotInfo] {
        try await offload { () throws(CofferError) in try self.list(matching: filter) }
    }

    /// The snapshot `reference` names; see ``snapshot(_:host:)-8seon``.
    public func snapshot(_ reference: String, host: String? = nil) async throws(CofferError) -> SnapshotInfo {
        try await offload { () throws(CofferError) in try self.snapshot(reference, host: host) }
    }

    // MARK: Forgetting

    /// Drops a snapshot; see ``forget(_:host:)-4s5es``.
    public func forget(_ reference: String, host: String? = nil) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.forget(reference, host: host) }
    }

    /// What `policy` would keep and remove, changing nothing; see
    /// ``plan(_:groupedBy:matching:now:timeZone:)-4v4di``.
    public func plan(
        _ policy: RetentionPolicy,
        groupedBy grouping: SnapshotGrouping = [.host, .name],
        matching filter: SnapshotFilter = SnapshotFilter(),
        now: Date = Date(),
        timeZone: TimeZone = .current
    ) async throws(CofferError) -> [RetentionGroup] {
        try await offload { () throws(CofferError) in
            try self.plan(policy, groupedBy: grouping, matching: filter, now: now, timeZone: timeZone)
        }
    }

    /// Forgets every snapshot `policy` does not keep; see
    /// ``forget(keeping:groupedBy:matching:now:timeZone:)-993ye``.
    @discardableResult
    public func forget(
        keeping policy: RetentionPolicy,
        groupedBy grouping: SnapshotGrouping = [.host, .name],
        matching filter: SnapshotFilter = SnapshotFilter(),
        now: Date = Date(),
        timeZone: TimeZone = .current
    ) async throws(CofferError) -> [RetentionGroup] {
        try await offload { () throws(CofferError) in
            try self.forget(keeping: policy, groupedBy: grouping, matching: filter, now: now, timeZone: timeZone)
        }
    }
}
