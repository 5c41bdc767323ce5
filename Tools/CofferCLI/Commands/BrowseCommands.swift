import Coffer
import Foundation

// `coffer find PATTERN` and `coffer dump SNAPSHOT PATH`: finding a file across snapshots and taking
// it out (`coffer ls SNAPSHOT [PATH]` lists one directory).

/// `coffer find PATTERN`: every path matching PATTERN in the snapshots.
struct FindCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "find",
        abstract: "Find paths matching a pattern across snapshots: snapshot, time, size, path.",
        discussion: """
            A pattern without a slash matches a path's last component (report*.pdf); one with a slash
            matches the whole path as it was backed up (/home/*/docs/*.txt); * stays inside one
            component. Every snapshot is read as a stream, so memory stays bounded whatever their size.
            """,
        examples: [
            "coffer find 'report*.pdf'                        # in every snapshot",
            "coffer find '*.txt' --snapshot 3f9c2a71 --oldest 2026-11-01",
            "coffer find '/home/*/docs/*.odt' --host laptop --json",
        ]
    )

    var selection = SnapshotSelection()

    @Option(value: "SNAPSHOT", help: "Only this snapshot (an id prefix or a name; repeatable).")
    var snapshot: [String]

    @Option(value: "TIME", help: "Only paths modified at or after TIME (e.g. '2026-11-01 00:00:00').")
    var oldest: SnapshotTime?

    @Option(value: "TIME", help: "Only paths modified at or before TIME.")
    var newest: SnapshotTime?

    @Argument("PATTERN", help: "A glob (restic's syntax, [^a] negates): a name (*.pdf) or, with a /, a whole path.")
    var pattern: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        var found: [FoundListing] = []
        var sawWriteOnly = false
        let json = context.output.mode == .json
        let count = try vault.snapshots.find(
            pattern,
            matching: selection.filter,
            snapshots: snapshot,
            modifiedAfter: oldest?.date,
            modifiedBefore: newest?.date
        ) { match in
            sawWriteOnly = sawWriteOnly || match.snapshot.isWriteOnly
            if json {
                found.append(FoundListing(match))
            } else {
                let entry = match.entry
                // The entry's path is escaped already (escaping it again doubled each `\`).
                let path =
                    PrintableText.escaping(match.snapshot.sourcePath)
                    + (entry.pathBytes.isEmpty ? "" : "/" + entry.path) + (entry.kind == .directory ? "/" : "")
                let id = match.snapshot.shortID + (match.snapshot.isWriteOnly ? " W" : "")
                let size = (entry.kind == .file ? ByteCount.format(entry.size) : "-").leftPadded(to: 10)
                var time = TextTable.localTime(entry.modified)
                var line = "\(id)  \(time)  \(size)  \(path)"
                // On a terminal, a line fits its width: the time loses its seconds and offset, then
                // the path is cut in the middle.
                if let width = context.console.outputColumns, line.count > width {
                    time = TextTable.shortTime(time)
                    let head = "\(id)  \(time)  \(size)  "
                    line = head + path.middleTruncated(to: max(width - head.count, 12))
                }
                context.console.print(line)
            }
        }
        if json { return try context.console.printJSON(found) }
        if sawWriteOnly {
            context.output.note("W: a write-only client's snapshot; its name, host and time are claims.")
        }
        context.output.note(
            count == 0 ? "Nothing matches '\(pattern)'." : "\(count) path\(count == 1 ? "" : "s") match '\(pattern)'."
        )
    }

    /// One match as `find --json` prints it.
    struct FoundListing: Encodable {
        let snapshot: String
        let path: String
        let kind: String
        let size: Int64
        let modified: Date
        /// Whether the snapshot is a write-only client's.
        let writeOnly: Bool

        init(_ match: FoundEntry) {
            snapshot = match.snapshot.id
            writeOnly = match.snapshot.isWriteOnly
            path = match.absolutePath
            kind = match.entry.kind.rawValue
            size = match.entry.size
            modified = match.entry.modified
        }
    }
}

/// `coffer dump SNAPSHOT PATH`: one file to standard output, or a directory as a tar stream.
struct DumpCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "dump",
        abstract: "Write one file of a snapshot to standard output, or a directory as a tar archive.",
        discussion: """
            PATH is relative to the backed-up directory (docs/report.pdf; . for all of it) or absolute
            as it was backed up (/home/ann/docs/report.pdf). A directory becomes a POSIX tar stream
            (pax headers, as GNU tar writes them, for what ustar cannot hold: long or non-UTF-8 names
            and link targets, sizes of 8 GiB or more, uids and gids of 8^7 or more, times before 1970
            or from 8^11 seconds; hard links as links), named from the directory
            itself, which tar, bsdtar and others read. Streaming: memory stays bounded, and every chunk
            is checked as it is read. Refuses to write to a terminal.
            """,
        examples: [
            "coffer dump ~/docs docs/report.pdf > report.pdf      # one file",
            "coffer dump 3f9c2a71 docs | tar x -C /tmp            # a directory, as tar",
            "coffer dump ~/docs . --host laptop > all.tar",
        ],
        isCancellable: true
    )

    var host = HostOption()

    @Argument("SNAPSHOT", help: "An id prefix (6+ hex digits), a name (its latest snapshot), or latest (the newest).")
    var snapshot: String

    @Argument("PATH", help: "The file or directory in the snapshot.")
    var path: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        guard let descriptor = context.console.outputDescriptor else {
            throw CLIFailure("dump writes to standard output, which this console does not have")
        }
        guard !context.console.outputIsTerminal else {
            throw CLIFailure(
                "standard output is a terminal; send it to a file or a pipe (coffer dump \(snapshot) \(path) > out)"
            )
        }
        ShowCommand.warnIfWriteOnly(try vault.snapshots.snapshot(snapshot, host: host.host), context)
        let result = try vault.snapshots.dump(snapshot, host: host.host, path: path, toFileDescriptor: descriptor)
        for skipped in result.skipped {
            context.output.warning(
                "note: \(skipped) is a socket or device, which a tar archive here cannot hold; left out"
            )
        }
        context.output.note(
            result.isArchive
                ? "Wrote \(counted(result.paths, "path")) (\(ByteCount.format(result.bytes)) of content) as a tar archive."
                : "Wrote \(path) (\(ByteCount.format(result.bytes)))."
        )
    }
}
