import Coffer
import Foundation

/// `coffer backup|snapshots|show|restore|forget|diff`: directory snapshots from the command line.
enum SnapshotCommands {
    static let backup = CommandSpec(
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
        options: [
            .option(
                "name",
                value: "NAME",
                help: "Group snapshots under NAME (default: the directory's absolute path)."
            ),
            .flag("device-only", help: "Keep the snapshot on this machine: never export it."),
            BlobCommands.compressionOption,
            .option(
                "exclude",
                value: "PATTERN",
                help: "Leave out paths matching PATTERN (repeatable; restic's rules: *.log, /abs/path, a/**/b, !keep)."
            ),
            .option("iexclude", value: "PATTERN", help: "Like --exclude, ignoring case (repeatable)."),
            .option(
                "exclude-file",
                value: "FILE",
                help: "Read exclude patterns from FILE, one a line; # starts a comment (repeatable)."
            ),
        ],
        arguments: [ArgumentSpec("DIR", help: "The directory to back up.")],
        examples: [
            "coffer backup ~/docs                     # a snapshot, named by the path",
            "coffer backup ~ --exclude '*.tmp' --exclude node_modules --exclude '!keep.tmp'",
            "coffer backup /srv/www --name www --device-only --exclude-file www.excludes",
        ],
        isCancellable: true,
        run: runBackup
    )

    static let hostOption = OptionSpec.option(
        "host",
        value: "HOST",
        help: "Whose snapshot a name means (default: this machine's hostname)."
    )

    static let list = CommandSpec(
        name: "snapshots",
        abstract: "List the snapshots: id, time, host, files, size, name.",
        options: [.option("host", value: "HOST", help: "Only the snapshots taken on HOST.")],
        examples: [
            "coffer snapshots",
            "coffer snapshots --host laptop --json",
        ],
        run: runList
    )

    static let show = CommandSpec(
        name: "show",
        abstract: "List the paths in a snapshot, with sizes.",
        options: [hostOption],
        arguments: [ArgumentSpec("SNAPSHOT", help: "An id prefix (6+ hex digits) or a name (its latest snapshot).")],
        examples: [
            "coffer show ~/docs                         # this host's latest",
            "coffer show 3f9c2a71",
        ],
        run: runShow
    )

    static let restore = CommandSpec(
        name: "restore",
        abstract: "Recreate a snapshot's tree in an empty or new directory.",
        discussion: """
            Contents, modes, modification times, symbolic links, empty directories, names as stored,
            hard links, sparse files' holes and extended attributes are restored (and owners when run as
            root). Paths that would escape DIR are refused. A name means this host's latest snapshot of
            that name unless --host says whose.
            """,
        options: [
            hostOption,
            .option(
                "include",
                value: "PATTERN",
                help: "Only paths matching PATTERN (fnmatch), and all under a matching directory."
            ),
        ],
        arguments: [
            ArgumentSpec("SNAPSHOT", help: "An id prefix (6+ hex digits) or a name (its latest snapshot)."),
            ArgumentSpec("DIR", help: "Where to restore; must be empty or absent."),
        ],
        examples: [
            "coffer restore ~/docs /tmp/docs-back       # into an empty or new directory",
            "coffer restore 3f9c2a71 /tmp/txt --include '*.txt'",
        ],
        isCancellable: true,
        run: runRestore
    )

    static let forget = CommandSpec(
        name: "forget",
        abstract: "Drop a snapshot; chunks nothing else uses are freed.",
        options: [hostOption],
        arguments: [ArgumentSpec("SNAPSHOT", help: "An id prefix (6+ hex digits) or a name (its latest snapshot).")],
        examples: [
            "coffer forget 3f9c2a71                    # frees what nothing else uses",
            "coffer forget ~/docs --host old-laptop",
        ],
        run: runForget
    )

    static let diff = CommandSpec(
        name: "diff",
        abstract: "Show the paths added (+), removed (-) and changed (M) from snapshot A to B.",
        options: [hostOption],
        arguments: [ArgumentSpec("A", help: "The older snapshot."), ArgumentSpec("B", help: "The newer snapshot.")],
        examples: [
            "coffer diff 3f9c2a71 8d01be4c              # + added, - removed, M changed",
            "coffer diff 3f9c2a71 ~/docs",
        ],
        run: runDiff
    )

    // MARK: Commands

    static func runBackup(_ invocation: Invocation) throws {
        let path = invocation.arguments[0]
        let level = try BlobCommands.compressionLevel(invocation)
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let bar = ProgressBar(label: "backup \(path)", total: nil, unit: .count("paths"), for: invocation)
        let excluding = try excludePatterns(invocation)
        let excludingIgnoringCase = invocation.values("iexclude")
        // The total comes from a count of the tree that runs beside the backup (as restic's scanner
        // does): the bar shows a percentage and an ETA once it is known. The count does not apply
        // exclude patterns, so with them there is no total rather than a wrong one.
        if bar.isDrawn, excluding.isEmpty, excludingIgnoringCase.isEmpty {
            TreeCount.start(URL(fileURLWithPath: path)) { bar.setTotal($0) }
        }
        let result = try vault.snapshots.backup(
            directory: URL(fileURLWithPath: path),
            name: invocation.value("name"),
            scope: invocation.flag("device-only") ? .deviceBound : .syncable,
            compressionLevel: level,
            excluding: excluding,
            excludingIgnoringCase: excludingIgnoringCase,
            progress: { bar.update(completed: Int64($0.files), detail: "\(ByteCount.format($0.bytesRead)) read") }
        )
        bar.finish()
        let stats = result.snapshot.statistics
        if invocation.flag("json") {
            try invocation.console.printJSON(
                BackupListing(
                    snapshot: SnapshotListing(result.snapshot),
                    problems: result.problems.map(\.description),
                    excluded: result.excluded
                )
            )
            try incomplete(result)
            return
        }
        for path in result.excluded { invocation.console.message("excluded: \(path) (the vault's own directory)") }
        if result.excludedByPattern > 0, !invocation.flag("quiet") {
            invocation.console.message(
                "\(result.excludedByPattern) path\(result.excludedByPattern == 1 ? "" : "s") left out by the exclude patterns (a directory counts once)."
            )
        }
        for problem in result.problems { invocation.console.message("warning: \(problem)") }
        if !invocation.flag("quiet") {
            invocation.console.message(
                "Snapshot \(result.snapshot.shortID) of \(result.snapshot.sourcePath): \(stats.files) files "
                    + "(\(stats.newFiles) new, \(stats.changedFiles) changed, \(stats.unchangedFiles) unchanged), "
                    + "\(stats.directories) directories, \(ByteCount.format(stats.bytes)); "
                    + "\(ByteCount.format(stats.bytesAdded)) added to the vault"
                    + (stats.bytesAdded == 0 && stats.newFiles + stats.changedFiles > 0
                        ? " (their content was already stored: chunks are shared by every blob and snapshot)." : ".")
            )
        }
        try incomplete(result)
    }

    /// `--exclude` patterns, then those of each `--exclude-file` (one a line, `#` comments).
    static func excludePatterns(_ invocation: Invocation) throws -> [String] {
        var patterns = invocation.values("exclude")
        for path in invocation.values("exclude-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIFailure("cannot read --exclude-file '\(path)': no such readable file")
            }
            patterns += ExcludeRules.lines(of: String(decoding: data, as: UTF8.self))
        }
        return patterns
    }

    /// Ends a backup that could not read everything with exit status 3, as restic does, so a script
    /// or a scheduler sees that the snapshot is incomplete.
    private static func incomplete(_ result: BackupResult) throws {
        guard !result.problems.isEmpty else { return }
        throw IncompleteResult(
            "snapshot \(result.snapshot.shortID) is incomplete: \(result.problems.count) path(s) could not be backed up in full (listed above); fix them and back up again"
        )
    }

    static func runList(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let host = invocation.value("host")
        let snapshots = try vault.snapshots.list().filter { host == nil || $0.hostname == host }
        if invocation.flag("json") {
            try invocation.console.printJSON(snapshots.map(SnapshotListing.init))
            return
        }
        guard !snapshots.isEmpty else {
            if !invocation.flag("quiet") {
                invocation.console.message(
                    host == nil
                        ? "No snapshots yet; coffer backup DIR makes one." : "No snapshots from host '\(host ?? "")'."
                )
            }
            return
        }
        var table = TextTable([
            .init(header: "ID"), .init(header: "TIME"), .init(header: "HOST"),
            .init(header: "FILES", alignsRight: true),
            .init(header: "SIZE", alignsRight: true), .init(header: "SCOPE"), .init(header: "NAME"),
        ])
        for snapshot in snapshots {
            table.append([
                snapshot.shortID, TextTable.localTime(snapshot.created), PrintableText.escaping(snapshot.hostname),
                String(snapshot.statistics.files), ByteCount.format(snapshot.statistics.bytes),
                snapshot.scope == .syncable ? "sync" : "device", PrintableText.escaping(snapshot.name),
            ])
        }
        invocation.console.print(table.text)
    }

    static func runShow(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let entries = try vault.snapshots.entries(of: invocation.arguments[0], host: invocation.value("host"))
        if invocation.flag("json") {
            try invocation.console.printJSON(entries.map(EntryListing.init))
            return
        }
        let lines = entries.map { entry -> String in
            let mode = String(entry.mode & 0o7777, radix: 8).leftPadded(to: 4)
            let size = entry.kind == .file ? String(entry.size) : "-"
            let suffix = entry.kind == .directory ? "/" : entry.linkTarget.map { " -> \($0)" } ?? ""
            return
                "\(entry.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(mode) \(size.leftPadded(to: 12))  \(entry.path)\(suffix)"
        }
        if !lines.isEmpty { invocation.console.print(lines.joined(separator: "\n")) }
    }

    static func runRestore(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        // The snapshot's size is the total, unless --include restores a part of it.
        let total =
            invocation.value("include") == nil
            ? try vault.snapshots.snapshot(invocation.arguments[0], host: invocation.value("host")).statistics.bytes
            : nil
        let bar = ProgressBar(label: "restore \(invocation.arguments[0])", total: total, for: invocation)
        let result = try vault.snapshots.restore(
            invocation.arguments[0],
            host: invocation.value("host"),
            to: URL(fileURLWithPath: invocation.arguments[1]),
            include: invocation.value("include"),
            progress: { bar.update(completed: $0.bytesRead, detail: "\($0.files) paths") }
        )
        bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(
                RestoreListing(
                    paths: result.restoredPaths,
                    bytes: result.bytes,
                    problems: result.problems.map(\.description)
                )
            )
            return
        }
        for problem in result.problems { invocation.console.message("note: \(problem)") }
        if !invocation.flag("quiet") {
            invocation.console.message(
                "Restored \(result.restoredPaths) paths, \(ByteCount.format(result.bytes)), to \(invocation.arguments[1])."
            )
        }
    }

    static func runForget(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let snapshot = try vault.snapshots.snapshot(invocation.arguments[0], host: invocation.value("host"))
        try vault.snapshots.forget(snapshot.id)
        if invocation.flag("json") {
            try invocation.console.printJSON(["forgotten": snapshot.id])
        } else if !invocation.flag("quiet") {
            invocation.console.message(
                "Forgot snapshot \(snapshot.shortID) (\(PrintableText.escaping(snapshot.name)) on \(PrintableText.escaping(snapshot.hostname)))."
            )
        }
    }

    static func runDiff(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let diff = try vault.snapshots.diff(
            invocation.arguments[0],
            invocation.arguments[1],
            host: invocation.value("host")
        )
        if invocation.flag("json") {
            try invocation.console.printJSON(["added": diff.added, "removed": diff.removed, "changed": diff.changed])
            return
        }
        let lines = diff.added.map { "+ \($0)" } + diff.removed.map { "- \($0)" } + diff.changed.map { "M \($0)" }
        if !lines.isEmpty { invocation.console.print(lines.joined(separator: "\n")) }
    }
}

/// A snapshot as `--json` prints it.
struct SnapshotListing: Encodable {
    let id: String
    let name: String
    let sourcePath: String
    let hostname: String
    let created: Date
    let scope: String
    let statistics: SnapshotStatistics

    init(_ info: SnapshotInfo) {
        id = info.id
        name = info.name
        sourcePath = info.sourcePath
        hostname = info.hostname
        created = info.created
        scope = info.scope.rawValue
        statistics = info.statistics
    }
}

struct BackupListing: Encodable {
    let snapshot: SnapshotListing
    let problems: [String]
    let excluded: [String]
}

struct RestoreListing: Encodable {
    let paths: Int
    let bytes: Int64
    let problems: [String]
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
