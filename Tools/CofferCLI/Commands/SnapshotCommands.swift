import Coffer
import Foundation

// `coffer backup|snapshots|show|restore|forget|diff`: directory snapshots from the command line.

/// `coffer backup DIR`: a new snapshot of a directory tree.
struct BackupCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "backup",
        abstract: "Back up a directory tree as a new snapshot.",
        discussion: """
            File contents are deduplicated against everything in the vault; files whose size,
            modification and change times and inode match this host's previous snapshot of the same name
            are not read at all. Names are stored as bytes (UTF-8 or not), with modes, owners, times, hard
            links, sparseness and extended attributes (ACLs, capabilities). Each file is read up to the
            size it had when opened. The vault's own directory is left out. Paths that vanish or cannot
            be read are reported and skipped, and the command then exits 3: the snapshot is incomplete.
            Snapshots are syncable unless --device-only.
            """,
        examples: [
            "coffer backup ~/docs                     # a snapshot, named by the path",
            "coffer backup ~/docs ~/mail /etc/fstab --name home   # several paths in one snapshot",
            "coffer backup ~ --exclude '*.tmp' --exclude node_modules --exclude '!keep.tmp'",
            "coffer backup /srv/www --name www --tag daily --exclude-file www.excludes",
            "coffer backup ~ --exclude-caches --exclude-larger-than 2G -x --dry-run   # what it would read",
            "coffer backup /srv/db --write-only       # no passphrase: add, never read (coffer write-only enable)",
        ],
        isCancellable: true,
        exitStatuses: ExitStatus.standard(adding: .incompleteBackup)
    )

    @Flag(
        help:
            "Readable only while the vault is unlocked, writable without any key; stored in full (no comparison with earlier snapshots)."
    )
    var completeUnlessOpen: Bool

    var writeOnly = WriteOnlyFlags()

    var vaultAccess: VaultAccess { writeOnly.access }

    @Option(value: "NAME", help: "Group snapshots under NAME (default: the directory's absolute path).")
    var name: String?

    @Option(value: "TAGS", help: "Tag the snapshot (repeatable; daily,laptop gives two tags).")
    var tag: [TagList]

    @Flag(help: "Keep the snapshot on this machine: never export it.")
    var deviceOnly: Bool

    var compression = CompressionOption()

    @Option(
        value: "TIME",
        help:
            "The time the snapshot records, like '2019-09-01 11:00:00' (local, read as restic reads it; default: now)."
    )
    var time: SnapshotTime?

    @Option(value: "HOST", help: "The host the snapshot records (default: this machine's hostname).")
    var host: String?

    @Option(
        value: "PATTERN",
        help: "Leave out paths matching PATTERN (repeatable; restic's rules: *.log, /abs/path, a/**/b, !keep)."
    )
    var exclude: [String]

    @Option(value: "PATTERN", help: "Like --exclude, ignoring case (repeatable).")
    var iexclude: [String]

    @Option(
        value: "FILE",
        help: "Read exclude patterns from FILE, one a line, as bytes; # starts a comment (repeatable)."
    )
    var excludeFile: [String]

    @Flag(help: "Leave out the contents of cache directories (a valid CACHEDIR.TAG marks them).")
    var excludeCaches: Bool

    @Option(value: "NAME[:HEADER]", help: "Leave out the contents of directories holding NAME (starting with HEADER).")
    var excludeIfPresent: [String]

    @Option(value: "SIZE", help: "Leave out files larger than SIZE (2048, 500k, 10M, 2G).")
    var excludeLargerThan: ByteSize?

    @Flag(short: "x", help: "Stay on the directory's file system: mount points are kept empty.")
    var oneFileSystem: Bool

    @Option(
        value: "SIZE",
        help:
            "On an offloaded vault, upload a part once SIZE of new content is read (default: a quarter of offload --keep, 64M to 1G)."
    )
    var partSize: ByteSize?

    @Flag(help: "List what the backup would read and leave out; read and store nothing.")
    var dryRun: Bool

    @Argument("PATH", help: "The directory to back up, or several paths (directories or files) for one snapshot.")
    var paths: [String]

    /// The paths, as the library takes them.
    var urls: [URL] { paths.map { URL(fileURLWithPath: $0) } }

    /// The options the flags make.
    func options() throws -> BackupOptions {
        var options = BackupOptions(name: name, scope: deviceOnly ? .deviceBound : .syncable, tags: tag.flatMap(\.tags))
        options.compressionLevel = compression.level?.value
        options.excluding = try excludePatterns()
        options.excludingIgnoringCase = iexclude
        options.excludeCaches = excludeCaches
        options.excludeIfPresent = excludeIfPresent
        options.excludeLargerThan = excludeLargerThan?.bytes
        options.oneFileSystem = oneFileSystem
        options.partSize = partSize?.bytes
        options.time = time?.date
        options.hostname = host
        if completeUnlessOpen || writeOnly.writeOnly { options.protection = .completeUnlessOpen }
        return options
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let options = try options()
        if dryRun { return try plan(vault, options, context) }
        let label = paths.count == 1 ? "backup \(paths[0])" : "backup \(counted(paths.count, "path"))"
        let bar = context.progressBar(label, total: nil, unit: .count("paths"))
        // The total comes from a count of the tree that runs beside the backup (as restic's scanner
        // does): the bar shows a percentage and an ETA once it is known. The count leaves nothing
        // out, so with excludes there is no total rather than a wrong one.
        let excludes =
            !options.excluding.isEmpty || !iexclude.isEmpty || excludeCaches || !excludeIfPresent.isEmpty
            || excludeLargerThan != nil || oneFileSystem
        if bar.isDrawn, !excludes, paths.count == 1 {
            TreeCount.start(urls[0]) { bar.setTotal($0) }
        }
        let result = try vault.snapshots.backup(
            paths: urls,
            options: options,
            progress: { bar.update(completed: Int64($0.files), detail: "\(ByteCount.format($0.bytesRead)) read") }
        )
        bar.finish()
        let output = context.output
        if output.mode != .json {
            for path in result.excluded { output.warning("excluded: \(path) (the vault's own directory)") }
            if result.excludedByPattern > 0 {
                output.note(
                    "\(result.excludedByPattern) path\(result.excludedByPattern == 1 ? "" : "s") left out by the exclude options (a directory counts once)."
                )
            }
            for problem in result.problems { output.warning("warning: \(problem)") }
            if let uploads = result.uploads {
                for notice in uploads.notices { output.note(notice) }
                // "Then the snapshot" only when the last push went up too: a failure says what stayed.
                if uploads.parts > 0 {
                    output.note(
                        "Uploaded to \(uploads.store) as it went: \(counted(uploads.parts, "part"))"
                            + (uploads.failure == nil ? ", then the snapshot" : "")
                            + "; what it uploaded is not kept here (the cache keeps what reads fetch)."
                    )
                }
                if let failure = uploads.failure {
                    output.warning(
                        "warning: uploading to \(uploads.store) stopped (\(failure)); the snapshot is complete here, and what was not uploaded stays here until the next push or offload."
                    )
                }
            }
        }
        let stats = result.snapshot.statistics
        let listing = BackupListing(
            snapshot: SnapshotListing(result.snapshot),
            problems: result.problems.map(\.description),
            excluded: result.excluded,
            uploads: result.uploads.map {
                BackupListing.Uploads(store: $0.store, parts: $0.parts, failure: $0.failure)
            }
        )
        try output.status(listing) {
            "Snapshot \(result.snapshot.shortID) of \(result.snapshot.paths.joined(separator: ", ")): \(counted(stats.files, "file")) "
                + "(\(stats.newFiles) new, \(stats.changedFiles) changed, \(stats.unchangedFiles) unchanged), "
                + "\(counted(stats.directories, "directory", "directories")), \(ByteCount.format(stats.bytes)); "
                + "\(ByteCount.format(stats.bytesAdded)) added to the vault"
                + (stats.bytesAdded == 0 && stats.newFiles + stats.changedFiles > 0
                    ? " (their content was already stored: chunks are shared by every blob and snapshot)." : ".")
        }
        // A backup that could not read everything ends with exit status 3, as restic's does, so a
        // script or a scheduler sees that the snapshot is incomplete.
        guard result.problems.isEmpty else {
            throw IncompleteResult(
                "snapshot \(result.snapshot.shortID) is incomplete: \(counted(result.problems.count, "path")) could not be backed up in full (listed above); fix them and back up again"
            )
        }
    }

    /// `--dry-run`: each path the backup would read (or, with `--json`, every path), then a summary.
    private func plan(_ vault: Vault, _ options: BackupOptions, _ context: CommandContext) throws {
        var entries: [BackupPlanEntry] = []
        let json = context.output.mode == .json
        let plan = try vault.snapshots.dryRun(paths: urls, options: options) { entry in
            if json {
                entries.append(entry)
            } else if entry.wouldRead {
                context.console.print(
                    "would read  \(entry.change.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0))  "
                        + "\(ByteCount.format(entry.size).leftPadded(to: 10))  \(entry.path)"
                )
            }
        }
        if !json {
            for path in plan.excluded { context.output.warning("excluded: \(path) (the vault's own directory)") }
            for problem in plan.problems { context.output.warning("warning: \(problem)") }
        }
        try context.output.status(DryRunListing(plan: plan, entries: entries)) {
            "Dry run: would read \(plan.newFiles + plan.changedFiles) of \(counted(plan.files, "file")) "
                + "(\(plan.newFiles) new, \(plan.changedFiles) changed), \(ByteCount.format(plan.bytesToRead)); "
                + "\(counted(plan.unchangedFiles, "unchanged file")) would not be read; \(plan.excludedByPattern) "
                + "path\(plan.excludedByPattern == 1 ? "" : "s") left out by the exclude options. Nothing was read or stored."
        }
    }

    /// What `backup --dry-run --json` prints.
    struct DryRunListing: Encodable {
        let files: Int
        let newFiles: Int
        let changedFiles: Int
        let unchangedFiles: Int
        let bytesToRead: Int64
        let excludedByPattern: Int
        let problems: [String]
        let paths: [Path]

        struct Path: Encodable {
            let path: String
            let kind: String
            let size: Int64
            let change: String
        }

        init(plan: BackupPlan, entries: [BackupPlanEntry]) {
            files = plan.files
            newFiles = plan.newFiles
            changedFiles = plan.changedFiles
            unchangedFiles = plan.unchangedFiles
            bytesToRead = plan.bytesToRead
            excludedByPattern = plan.excludedByPattern
            problems = plan.problems.map(\.description)
            paths = entries.map {
                Path(path: $0.path, kind: $0.kind.rawValue, size: $0.size, change: $0.change.rawValue)
            }
        }
    }

    /// `--exclude` patterns, then those of each `--exclude-file` (one a line, `#` comments).
    private func excludePatterns() throws -> [String] {
        var patterns = exclude
        for path in excludeFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIFailure("cannot read --exclude-file '\(path)': no such readable file")
            }
            // As bytes: a line that is not UTF-8 names files whose names are not.
            patterns += PatternText.lines(of: Array(data))
        }
        return patterns
    }
}

/// `coffer snapshots`: the snapshots, as a table.
struct SnapshotsCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "snapshots",
        abstract: "List the snapshots: id, time, host, files, size, name.",
        examples: [
            "coffer snapshots",
            "coffer snapshots --host laptop --tag daily --json",
        ]
    )

    var selection = SnapshotSelection()

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let snapshots = try vault.snapshots.list(matching: selection.filter)
        if snapshots.isEmpty, context.output.mode != .json {
            let filtered = selection.filter != SnapshotFilter()
            return context.output.note(
                filtered ? "No snapshots match." : "No snapshots yet; coffer backup DIR makes one."
            )
        }
        try context.output.result(snapshots.map(SnapshotListing.init)) {
            var table = TextTable([
                .init(header: "ID"), .init(header: "TIME", shortened: TextTable.shortTime),
                .init(header: "HOST", dropOrder: 4), .init(header: "FILES", alignsRight: true, dropOrder: 3),
                .init(header: "SIZE", alignsRight: true), .init(header: "SCOPE", dropOrder: 1),
                .init(header: "TAGS", dropOrder: 2), .init(header: "NAME"),
            ])
            for snapshot in snapshots {
                // A write-only client's time and host are its claims: marked with '?'.
                let claim = snapshot.isWriteOnly ? "?" : ""
                table.append([
                    snapshot.shortID + (snapshot.isWriteOnly ? " W" : ""),
                    TextTable.localTime(snapshot.created) + claim, PrintableText.escaping(snapshot.hostname) + claim,
                    String(snapshot.statistics.files), ByteCount.format(snapshot.statistics.bytes),
                    snapshot.scope == .syncable ? "sync" : "device",
                    PrintableText.escaping(snapshot.tags.joined(separator: ",")),
                    PrintableText.escaping(snapshot.name) + claim,
                ])
            }
            let text = table.text(fitting: context.console.outputColumns)
            guard snapshots.contains(where: \.isWriteOnly) else { return text }
            let legend = SnapshotListing.writeOnlyLegend
            return text + "\n" + (context.console.outputColumns.map { WordWrap.wrap(legend, width: $0) } ?? legend)
        }
    }
}

/// `coffer show SNAPSHOT`: the paths in a snapshot.
struct ShowCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "show",
        abstract: "List the paths in a snapshot, with sizes.",
        examples: [
            "coffer show ~/docs                         # this host's latest",
            "coffer show 3f9c2a71",
        ]
    )

    var host = HostOption()

    @Argument("SNAPSHOT", help: "An id prefix (6+ hex digits), a name (its latest snapshot), or latest (the newest).")
    var snapshot: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try Self.list(snapshot, host: host.host, under: "", recursive: true, vault, context)
    }

    /// Lists paths of a snapshot as they are read, so memory stays bounded whatever the tree's size
    /// (JSON collects them); returns how many there were. `show` and `ls SNAPSHOT` both list this way.
    @discardableResult
    static func list(
        _ snapshot: String,
        host: String?,
        under path: String,
        recursive: Bool,
        _ vault: Vault,
        _ context: CommandContext
    ) throws -> Int {
        var collected: [EntryListing] = []
        var count = 0
        let json = context.output.mode == .json
        warnIfWriteOnly(try vault.snapshots.snapshot(snapshot, host: host), context)
        try vault.snapshots.entries(of: snapshot, host: host, under: path, recursive: recursive) { entry in
            count += 1
            if json {
                collected.append(EntryListing(entry))
            } else {
                context.console.print(line(entry))
            }
        }
        if json { try context.console.printJSON(collected) }
        return count
    }

    /// Says on standard error that `info` is a write-only client's snapshot, whose name, host and time
    /// are its claims.
    static func warnIfWriteOnly(_ info: SnapshotInfo, _ context: CommandContext) {
        guard info.isWriteOnly else { return }
        context.output.warning(
            "note: snapshot \(info.shortID) was made by a write-only client: its name '\(PrintableText.escaping(info.name))', host '\(PrintableText.escaping(info.hostname))' and time \(TextTable.localTime(info.created)) are its claims (coffer snapshot adopt \(info.shortID) makes it the owner's)"
        )
    }

    /// One path as `show` and `ls SNAPSHOT` list it: kind, mode, size, path (`/` after a
    /// directory, the target after a link).
    static func line(_ entry: SnapshotEntry) -> String {
        let mode = String(entry.mode & 0o7777, radix: 8).leftPadded(to: 4)
        let size = entry.kind == .file ? String(entry.size) : "-"
        let suffix = entry.kind == .directory ? "/" : entry.linkTarget.map { " -> \($0)" } ?? ""
        return
            "\(entry.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(mode) \(size.leftPadded(to: 12))  \(entry.path)\(suffix)"
    }
}

/// `coffer restore SNAPSHOT DIR`: recreates a snapshot's tree, in a new directory or in place.
struct RestoreCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "restore",
        abstract: "Recreate a snapshot's tree in a directory, new or not (in place, as restic does).",
        discussion: """
            Contents, modes, modification times, symbolic links, empty directories, names as stored,
            hard links, sparse files' holes and extended attributes are restored (and owners when run as
            root). Paths that would escape DIR are refused. A name means this host's latest snapshot of
            that name unless --host says whose; latest means its newest snapshot of any name. Patterns
            follow backup's rules (restic's): --include report.pdf matches it at any depth, several
            --include restore what any of them matches, and the last matching pattern of each list
            decides.

            DIR may hold files already (restic 0.17's restore in place; the tree goes under DIR as it
            sat under the backed-up directory, so naming that directory restores in place). --overwrite
            says what becomes of an existing path (always, the default: files whose content differs are
            replaced, the others keep their content and get the snapshot's metadata; if-changed: the
            same, trusting an equal size and modification time; if-newer: only where the snapshot's is
            newer; never). --delete removes what DIR holds that the snapshot does not, in the
            directories restored and where the patterns select it. --dry-run lists what would change
            and changes nothing. Each file is written under a temporary name (.coffer-restore-...)
            and moved into place when complete: a restore that fails or is interrupted leaves no
            partial file, says how far it got, and running it again completes it.
            """,
        examples: [
            "coffer restore ~/docs /tmp/docs-back       # into a new or empty directory",
            "coffer restore 3f9c2a71 /tmp/txt --include '*.txt' --include report.pdf",
            "coffer restore latest /tmp/last                # this host's newest snapshot",
            "coffer restore ~/docs /tmp/small --exclude '*.iso' --exclude cache",
            "coffer restore ~/docs ~/docs --delete --dry-run    # in place: what would change",
            "coffer restore ~/docs ~/docs --overwrite if-newer  # replace only files older than the snapshot's",
        ],
        isCancellable: true
    )

    var host = HostOption()

    @Option(
        value: "PATTERN",
        help:
            "Only paths matching PATTERN, and all under a matching directory (repeatable: any of them; backup's rules)."
    )
    var include: [String]

    @Option(value: "PATTERN", help: "Like --include, ignoring case (repeatable; a list of its own).")
    var iinclude: [String]

    @Option(value: "PATTERN", help: "Leave out paths matching PATTERN, by backup's exclude rules (repeatable).")
    var exclude: [String]

    @Option(value: "PATTERN", help: "Like --exclude, ignoring case (repeatable; a list of its own).")
    var iexclude: [String]

    @Option(value: "DIR", help: "Where to restore (restic's spelling; instead of the DIR argument).")
    var target: String?

    @Option(
        value: "MODE",
        help:
            "What to do with existing files: always (default; replace those whose content differs), if-changed, if-newer, never."
    )
    var overwrite: RestoreOverwrite = .always

    @Flag(help: "Remove what DIR holds that the snapshot does not (where the patterns select it).")
    var delete: Bool

    @Flag(help: "List what would be restored, updated, kept or deleted; change nothing.")
    var dryRun: Bool

    @Argument("SNAPSHOT", help: "An id prefix (6+ hex digits), a name (its latest snapshot), or latest (the newest).")
    var snapshot: String

    @Argument("DIR", help: "Where to restore: a new directory, or one with files (see --overwrite).")
    var directory: String?

    func validate() throws {
        if directory != nil, target != nil {
            throw ValidationError("give the directory either as DIR or as --target DIR, not both")
        }
        if directory == nil, target == nil {
            throw ValidationError("missing argument DIR: give the directory to restore to (or --target DIR)")
        }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let directory = directory ?? target ?? ""
        let info = try vault.snapshots.snapshot(snapshot, host: host.host)
        ShowCommand.warnIfWriteOnly(info, context)
        let json = context.output.mode == .json
        var changes: [String] = []
        let list: (RestoreChange) -> Void = { change in
            guard dryRun else { return }
            if json { changes.append(change.description) } else { context.console.print(change.description) }
        }
        // The snapshot's size is the total, unless --include restores a part of it.
        let total =
            include.isEmpty && iinclude.isEmpty && exclude.isEmpty && iexclude.isEmpty
            ? info.statistics.bytes : nil
        let bar = dryRun ? nil : context.progressBar("restore \(snapshot)", total: total)
        let result = try vault.snapshots.restore(
            snapshot,
            host: host.host,
            to: URL(fileURLWithPath: directory),
            including: include,
            includingIgnoringCase: iinclude,
            excluding: exclude,
            excludingIgnoringCase: iexclude,
            overwrite: overwrite,
            deleting: delete,
            dryRun: dryRun,
            changes: list,
            progress: { bar?.update(completed: $0.bytesRead, detail: counted($0.files, "path")) }
        )
        bar?.finish()
        if !json {
            for problem in result.problems { context.output.warning("note: \(problem)") }
        }
        let listing = RestoreListing(result, dryRun: dryRun, changes: dryRun ? changes : nil)
        try context.output.status(listing) {
            let paths = result.restoredPaths - result.updatedPaths
            var parts = ["\(paths) new path\(paths == 1 ? "" : "s")"]
            if result.updatedPaths > 0 { parts.append("\(result.updatedPaths) updated") }
            if result.unchangedPaths > 0 { parts.append("\(result.unchangedPaths) unchanged") }
            if result.keptPaths > 0 {
                parts.append("\(result.keptPaths) kept as they were (--overwrite \(overwrite.rawValue))")
            }
            if result.deletedPaths > 0 { parts.append("\(result.deletedPaths) deleted") }
            let summary = parts.joined(separator: ", ")
            return dryRun
                ? "Dry run: would restore to \(directory): \(summary), \(ByteCount.format(result.bytes)) to write. Nothing was changed."
                : "Restored \(counted(result.restoredPaths, "path")), \(ByteCount.format(result.bytes)), to \(directory) (\(summary))."
        }
    }
}

extension RestoreOverwrite: ArgumentValue {}

/// `coffer diff A B`: what changed from one snapshot to another.
struct DiffCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "diff",
        abstract: "Show the paths added (+), removed (-) and changed (M) from snapshot A to B.",
        examples: [
            "coffer diff 3f9c2a71 8d01be4c              # + added, - removed, M changed",
            "coffer diff 3f9c2a71 ~/docs",
        ]
    )

    var host = HostOption()

    @Argument("A", help: "The older snapshot.")
    var older: String

    @Argument("B", help: "The newer snapshot.")
    var newer: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let diff = try vault.snapshots.diff(older, newer, host: host.host)
        let lines = diff.added.map { "+ \($0)" } + diff.removed.map { "- \($0)" } + diff.changed.map { "M \($0)" }
        if !lines.isEmpty || context.output.mode == .json {
            try context.output.result(["added": diff.added, "removed": diff.removed, "changed": diff.changed]) {
                lines.joined(separator: "\n")
            }
        }
        // The summary goes to standard error, so that standard output stays the list of paths (empty
        // when nothing changed).
        context.output.note(
            lines.isEmpty
                ? "No differences: \(older) and \(newer) hold the same paths, each with the same content, type, mode, owner and attributes."
                : "\(counted(diff.added.count, "path")) added, \(diff.removed.count) removed, "
                    + "\(diff.changed.count) changed from \(older) to \(newer)."
        )
    }
}

/// A snapshot as `--json` prints it.
struct SnapshotListing: Encodable {
    let id: String
    let name: String
    let sourcePath: String
    let paths: [String]
    let hostname: String
    let created: Date
    let scope: String
    let protection: String
    let tags: [String]
    let statistics: SnapshotStatistics
    /// Whether a write-only client (holding no key) made it; then `claimed` names the fields that are
    /// only its claims.
    let writeOnly: Bool
    let claimed: [String]?

    /// What text listings print under a table that holds a write-only client's snapshot.
    static let writeOnlyLegend =
        "W: made by a write-only client; its time, host and name (marked ?) are claims. It is not counted by forget --keep-*, never a name's latest; coffer snapshot adopt ID makes it the owner's."

    init(_ info: SnapshotInfo) {
        id = info.id
        name = info.name
        sourcePath = info.sourcePath
        paths = info.paths
        hostname = info.hostname
        created = info.created
        scope = info.scope.rawValue
        protection = info.protection.rawValue
        tags = info.tags
        statistics = info.statistics
        writeOnly = info.isWriteOnly
        claimed = info.isWriteOnly ? ["name", "hostname", "created"] : nil
    }
}

struct BackupListing: Encodable {
    let snapshot: SnapshotListing
    let problems: [String]
    let excluded: [String]
    /// On a vault that offloads its content: the parts uploaded as the backup went.
    let uploads: Uploads?

    struct Uploads: Encodable {
        let store: String
        let parts: Int
        let failure: String?
    }
}

struct RestoreListing: Encodable {
    let paths: Int
    let bytes: Int64
    let updated: Int
    let unchanged: Int
    let kept: Int
    let deleted: Int
    let dryRun: Bool
    let problems: [String]
    /// With --dry-run, each change as the text listing shows it (`updated   docs/report.pdf`).
    let changes: [String]?

    init(_ result: RestoreResult, dryRun: Bool, changes: [String]?) {
        paths = result.restoredPaths
        bytes = result.bytes
        updated = result.updatedPaths
        unchanged = result.unchangedPaths
        kept = result.keptPaths
        deleted = result.deletedPaths
        self.dryRun = dryRun
        problems = result.problems.map(\.description)
        self.changes = changes
    }
}

struct EntryListing: Encodable {
    let path: String
    let kind: String
    let size: Int64
    let mode: UInt32
    let modified: Date
    let linkTarget: String?
    let linkCount: Int
    let extendedAttributes: [String]
    let sparse: Bool

    init(_ entry: SnapshotEntry) {
        path = entry.path
        kind = entry.kind.rawValue
        size = entry.size
        mode = entry.mode
        modified = entry.modified
        linkTarget = entry.linkTarget
        linkCount = entry.linkCount
        extendedAttributes = entry.extendedAttributeNames
        sparse = entry.isSparse
    }
}
