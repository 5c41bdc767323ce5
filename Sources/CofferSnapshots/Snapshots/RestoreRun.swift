internal import Glibc

/// One restore under way: the walk of the snapshot's tree in order, its choices for what the target
/// holds already, the worker threads writing files, then hard links, `--delete` and the directories'
/// metadata. ``Snapshots/restore(_:host:to:including:includingIgnoringCase:excluding:excludingIgnoringCase:overwrite:deleting:dryRun:changes:progress:)``
/// makes it and runs it once.
struct RestoreRun {
    let record: SnapshotRecord
    let root: [UInt8]
    let rules: PathSelection
    let overwrite: RestoreOverwrite
    let deleting: Bool
    let dryRun: Bool
    /// The target was absent or empty: nothing in it to look at.
    let isFresh: Bool
    let changes: ((RestoreChange) -> Void)?
    let sourceComponents: [[UInt8]]

    private(set) var restored = 0
    private(set) var bytes: Int64 = 0
    private(set) var problems: [SnapshotProblem] = []
    private(set) var updated = 0
    private(set) var unchanged = 0
    private(set) var kept = 0
    private(set) var deleted = 0
    /// Files the workers moved into place, and temporary files they could not remove.
    let tally = Locked(RestoreWorkerTally())
    /// Files whose outcome reached this thread (restored and updated ones counted in `restored`).
    private var collectedFiles = 0

    init(
        record: SnapshotRecord,
        root: [UInt8],
        rules: PathSelection,
        overwrite: RestoreOverwrite,
        deleting: Bool,
        dryRun: Bool,
        isFresh: Bool,
        changes: ((RestoreChange) -> Void)?
    ) {
        self.record = record
        self.root = root
        self.rules = rules
        self.overwrite = overwrite
        self.deleting = deleting
        self.dryRun = dryRun
        self.isFresh = isFresh
        self.changes = changes
        sourceComponents = Array(record.sourcePath.utf8).split(separator: UInt8(ascii: "/")).map(Array.init)
    }

    var result: RestoreResult {
        var result = RestoreResult(restoredPaths: restored, bytes: bytes, problems: problems)
        result.updatedPaths = updated
        result.unchangedPaths = unchanged
        result.keptPaths = kept
        result.deletedPaths = deleted
        return result
    }

    private mutating func report(_ action: RestoreChange.Action, _ path: [UInt8]) {
        switch action {
        case .restored: restored += 1
        case .updated: (restored, updated) = (restored + 1, updated + 1)
        case .unchanged: unchanged += 1
        case .kept: kept += 1
        case .deleted: deleted += 1
        }
        changes?(RestoreChange(action, EntryPath.display(path)))
    }

    /// What the target holds at `path` now; nothing is looked up in a fresh target.
    private func existing(_ path: [CChar], _ entry: TreeEntry) throws(CofferError) -> RestoreTarget.Existing? {
        isFresh ? nil : try RestoreTarget.existing(path, entry.displayPath)
    }

    /// Whether `overwrite` leaves the existing path alone for `entry` (never; if-newer when the
    /// snapshot's is not newer).
    private func keeps(_ existing: RestoreTarget.Existing, for entry: TreeEntry) -> Bool {
        switch overwrite {
        case .never: true
        case .ifNewer: !existing.isOlder(than: entry)
        case .always, .ifChanged: false
        }
    }

    /// Makes room for a non-directory where the target has a directory: an empty one is removed, a
    /// full one only with `--delete` (as restic does); otherwise the restore stops, naming it.
    private mutating func clearDirectory(_ path: [CChar], for entry: TreeEntry) throws(CofferError) {
        if dryRun { return }
        if rmdir(path) == 0 { return }
        guard deleting, Errno.current.code == ENOTEMPTY || Errno.current.code == EEXIST else {
            throw CofferError(
                .param,
                "'\(entry.displayPath)' is a directory with files in the target, but not a directory in the snapshot; remove or rename it, or restore with \(InterfaceName.restoreDeleting) to replace it"
            )
        }
        try RestoreTarget.removeTree(path, relative: entry.path) { _ in }
    }

    mutating func restore(
        store: SnapshotStore,
        reader: ContentReader,
        progress: (@Sendable (BackupProgress) -> Void)?
    ) throws(CofferError) {
        /// The directory the patterns last left out wholly: entries come in walk order, so only it
        /// can hold the next one. And the directories left out but waiting for something under them
        /// to be taken (each then restored just before it).
        var excludedDirectory: [UInt8]?
        var pendingDirectories: [TreeEntry] = []
        var directories: [TreeEntry] = []
        /// For `--delete`: the names each directory has in the snapshot, and whether anything at all
        /// was selected (then the target itself is one of the directories restored).
        var expectedNames: [[UInt8]: Set<[UInt8]>] = [:]
        var anySelected = false
        /// The first restored name of each file with several, and the names to link to it at the end
        /// (its worker may not have created it yet).
        var firstNames: [FileIdentity: [UInt8]] = [:]
        var links: [(entry: TreeEntry, existing: [UInt8])] = []
        let isRoot = geteuid() == 0
        let (scope, level, write, dryRun, tally) = (record.scope, record.level, record.write, dryRun, tally)
        let workers = OrderedPipeline<RestoreJob, RestoreOutcome>.defaultWorkerCount
        let files = OrderedPipeline<RestoreJob, RestoreOutcome>(workers: workers, window: workers * 8) {
            () throws(CofferError) in
            // Each worker keeps its contexts and keys for all the files it writes.
            let context = try reader.makeContext()
            return { (job) throws(CofferError) in
                try Snapshots.restoreFile(
                    job,
                    scope: scope,
                    level: level,
                    write: write,
                    reader: reader,
                    context: context,
                    isRoot: isRoot,
                    dryRun: dryRun,
                    tally: tally
                )
            }
        }
        defer { files.shutDown() }
        // What a killed restore left in the target itself (its directories are seen to as they come).
        if !isFresh, !dryRun { RestoreTarget.removeLeftovers(in: EntryPath.absolute(root, [])) }
        var pendingFiles: [(path: [UInt8], size: UInt64)] = []
        var pendingHead = 0
        func collect(_ run: inout RestoreRun) throws(CofferError) {
            guard let outcome = try files.next() else { return }
            let (path, size) = pendingFiles[pendingHead]
            pendingHead += 1
            if pendingHead >= 1024 {
                pendingFiles.removeFirst(pendingHead)
                pendingHead = 0
            }
            run.problems += outcome.problems
            if outcome.action != .unchanged { run.collectedFiles += 1 }
            if outcome.action != .unchanged { run.bytes += Int64(size) }
            run.report(outcome.action, path)
            progress?(BackupProgress(files: run.restored, bytesRead: run.bytes))
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
            if deleting {
                expectedNames[EntryPath.parent(entry.path), default: []].insert(EntryPath.name(entry.path))
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
                        try restoreDirectory(parent)
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
            anySelected = true
            let path = EntryPath.absolute(root, entry.path)
            if !dryRun { try Snapshots.checkParents(of: entry.path, under: root) }
            switch entry.kind {
            case .directory:
                try restoreDirectory(entry)
                directories.append(entry)
                return
            case .file:
                if entry.linkCount > 1 {
                    let identity = FileIdentity(device: entry.device, inode: entry.inode)
                    if let existing = firstNames[identity] {
                        links.append((entry, existing))
                        return
                    }
                    firstNames[identity] = entry.path
                }
                var check = RestoreJob.Check.create
                if let existing = try existing(path, entry) {
                    if keeps(existing, for: entry) { return report(.kept, entry.path) }
                    switch existing.kind {
                    case .regular:
                        check = .verify(trustingSizeAndTime: overwrite == .ifChanged, existing: existing)
                    case .directory:
                        try clearDirectory(path, for: entry)
                        check = .replace
                    default:
                        check = .replace
                    }
                }
                // Files are written by worker threads; their parents exist already (walk order).
                while !files.hasRoom { try collect(&self) }
                try files.submit(RestoreJob(entry: entry, path: path, check: check))
                pendingFiles.append((entry.path, entry.size))
                return
            case .symlink, .other:
                try restoreSpecial(entry, at: path, isRoot: isRoot)
            }
            progress?(BackupProgress(files: restored, bytesRead: bytes))
        }
        files.finishSubmitting()
        while pendingHead < pendingFiles.count { try collect(&self) }
        // Further names of one file, now that the first name exists and is complete.
        for (entry, existing) in links {
            try restoreLink(entry, to: existing)
        }
        if deleting {
            var visited = directories.filter { !$0.isRoot }.map(\.path)
            if anySelected { visited.insert([], at: 0) }
            for directory in visited {
                try deleteUnexpected(in: directory, expecting: expectedNames[directory] ?? [])
            }
        }
        if dryRun { return }
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
            var times = [Snapshots.timespec(entry), Snapshots.timespec(entry)]
            utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
        }
    }

    /// A directory of the snapshot: created (private until its own mode is set at the end), or found
    /// in place, where a killed restore's temporary files are removed. A non-directory in its place
    /// is removed first, whatever `overwrite` says, as restic does.
    private mutating func restoreDirectory(_ entry: TreeEntry) throws(CofferError) {
        let path = EntryPath.absolute(root, entry.path)
        if let existing = try existing(path, entry) {
            if existing.kind == .directory {
                if !dryRun { RestoreTarget.removeLeftovers(in: path) }
                return
            }
            if !dryRun, unlink(path) != 0 {
                throw Snapshots.failure("removing the non-directory in the place of the directory", entry.displayPath)
            }
        }
        if !dryRun {
            if !isFresh { try Snapshots.checkParents(of: entry.path, under: root) }
            guard mkdir(path, 0o700) == 0 || Errno.current.code == EEXIST else {
                throw Snapshots.failure("creating the directory", entry.displayPath)
            }
        }
        report(.restored, entry.path)
    }

    /// A symbolic link or a FIFO (other special files are recorded by type only): made under a
    /// temporary name and renamed over what is in its place, if anything.
    private mutating func restoreSpecial(_ entry: TreeEntry, at path: [CChar], isRoot: Bool) throws(CofferError) {
        let isFIFO = entry.kind == .other && entry.mode & UInt32(S_IFMT) == UInt32(S_IFIFO)
        if entry.kind == .other, !isFIFO {
            problems.append(
                SnapshotProblem(
                    path: entry.displayPath,
                    message: "a socket or device, recorded by type only; not recreated"
                )
            )
            return
        }
        var action = RestoreChange.Action.restored
        if let existing = try existing(path, entry) {
            if keeps(existing, for: entry) { return report(.kept, entry.path) }
            if existing.kind == .symbolicLink, entry.kind == .symlink, Self.linkTarget(path) == entry.linkTarget {
                action = .unchanged
            } else if existing.kind == .fifo, isFIFO {
                action = .unchanged
            } else {
                if existing.kind == .directory { try clearDirectory(path, for: entry) }
                action = .updated
            }
        }
        if dryRun { return report(action, entry.path) }
        let made = action == .unchanged ? path : RestoreTarget.temporaryName(beside: path)
        if action != .unchanged {
            if entry.kind == .symlink {
                let target = (entry.linkTarget ?? []).map { CChar(bitPattern: $0) } + [0]
                guard symlink(target, made) == 0 else {
                    throw Snapshots.failure("creating the symbolic link", entry.displayPath)
                }
            } else if mkfifo(made, mode_t(entry.mode & 0o7777)) != 0 {
                throw Snapshots.failure("creating the FIFO", entry.displayPath)
            }
        }
        if isRoot, lchown(made, entry.uid, entry.gid) != 0 {
            problems.append(SnapshotProblem(path: entry.displayPath, message: "owner not restored"))
        }
        problems += ExtendedAttribute.apply(entry.attributes, to: made).map {
            SnapshotProblem(path: entry.displayPath, message: $0)
        }
        var times = [Snapshots.timespec(entry), Snapshots.timespec(entry)]
        utimensat(AT_FDCWD, made, &times, AT_SYMLINK_NOFOLLOW)
        if made != path, rename(made, path) != 0 {
            let error = Snapshots.failure("moving the new link into place at", entry.displayPath)
            unlink(made)
            throw error
        }
        report(action, entry.path)
    }

    /// A further name of a file with several: a hard link to its first name, made under a temporary
    /// name and renamed over what is in its place, if anything.
    private mutating func restoreLink(_ entry: TreeEntry, to first: [UInt8]) throws(CofferError) {
        let path = EntryPath.absolute(root, entry.path)
        let firstPath = EntryPath.absolute(root, first)
        var action = RestoreChange.Action.restored
        if let existing = try existing(path, entry) {
            if keeps(existing, for: entry) { return report(.kept, entry.path) }
            let firstExisting = try RestoreTarget.existing(firstPath, EntryPath.display(first))
            if firstExisting?.identity == existing.identity {
                return report(.unchanged, entry.path)
            }
            if existing.kind == .directory { try clearDirectory(path, for: entry) }
            action = .updated
        }
        if !dryRun {
            let made = action == .restored ? path : RestoreTarget.temporaryName(beside: path)
            guard link(firstPath, made) == 0 else {
                throw Snapshots.failure("creating the hard link", entry.displayPath)
            }
            if made != path, rename(made, path) != 0 {
                let error = Snapshots.failure("moving the new hard link into place at", entry.displayPath)
                unlink(made)
                throw error
            }
        }
        report(action, entry.path)
    }

    /// `--delete` in one restored directory: removes (or, in a dry run, lists) each name the target
    /// has there that the snapshot does not, where the patterns select it; temporary names of a
    /// restore still running are left alone.
    private mutating func deleteUnexpected(in directory: [UInt8], expecting names: Set<[UInt8]>) throws(CofferError) {
        let path = EntryPath.absolute(root, directory)
        guard let here = try RestoreTarget.existing(path, EntryPath.display(directory)), here.kind == .directory else {
            return
        }
        let prefix = Array(RestoreTarget.temporaryPrefix.utf8)
        for name in try RestoreTarget.names(in: path, EntryPath.display(directory)).sorted(by: {
            $0.lexicographicallyPrecedes($1)
        })
        where !names.contains(name) && !name.starts(with: prefix) {
            let relative = EntryPath.joining(directory, name)
            let childPath = EntryPath.absolute(root, relative)
            if !rules.isEmpty {
                let isDirectory = try RestoreTarget.existing(childPath, EntryPath.display(relative))?.kind == .directory
                let components = sourceComponents + relative.split(separator: UInt8(ascii: "/")).map(Array.init)
                guard rules.decision(for: components, isDirectory: isDirectory) == .included else { continue }
            }
            var removed: [[UInt8]] = []
            try RestoreTarget.removeTree(childPath, relative: relative, dryRun: dryRun) { removed.append($0) }
            for path in removed { report(.deleted, path) }
        }
    }

    /// The target of the symbolic link at `path`, or `nil`.
    private static func linkTarget(_ path: [CChar]) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBytes {
            readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
        }
        return count < 0 ? nil : Array(buffer[0..<count])
    }

    /// The error a failure midway ends the restore with: what failed, then how far it got and what
    /// is left.
    func failure(_ error: CofferError) -> CofferError {
        if dryRun { return error }
        let (filesInPlace, left) = tally.withLock { ($0.filesInPlace, $0.leftovers) }
        let whole = restored - collectedFiles + filesInPlace
        let temporary =
            left.isEmpty
            ? "no partial file is left (files are written under temporary names and moved into place only when complete)"
            : "these temporary files could not be removed: \(left.joined(separator: ", "))"
        let again =
            [.userCanceled, .diskFull, .io].contains(error.code) ? "; running the same restore again completes it" : ""
        return CofferError(
            error.code,
            "\(error.message); \(whole) path\(whole == 1 ? " was" : "s were") restored, whole, before it stopped; \(temporary)\(again)",
            underlying: error
        )
    }
}
