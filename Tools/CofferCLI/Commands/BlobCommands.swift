import Coffer
import Foundation

// `coffer put|get|ls|rm|mv|stat`: the blob tier from the command line.

/// `coffer put NAME FILE`: stores a file or standard input as a blob.
struct PutCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "put",
        abstract: "Store a file (or standard input) as a blob, replacing any blob of that name.",
        discussion: """
            The content is cut into chunks by content, deduplicated against everything in the vault,
            compressed with zstd and encrypted with AES-256-GCM, on every core, streaming: any size works
            in bounded memory. The blob appears only once all of it is stored. Blobs are syncable unless
            stored with --device-only.
            """,
        examples: [
            "coffer put photos/cat.jpg cat.jpg            # store a file as the blob photos/cat.jpg",
            "tar c ~/docs | coffer put docs.tar -        # standard input, streamed",
            "coffer put --device-only keys.tar keys.tar  # never leaves this machine",
            "coffer put --write-only db.dump db.dump     # no passphrase: listed as db.dump@TIME-TAG",
        ],
        isCancellable: true
    )

    var write = BlobWriteFlags()

    var writeOnly = WriteOnlyFlags()

    var vaultAccess: VaultAccess { writeOnly.access }

    /// The write's options: `--write-only` seals to the write key.
    private var options: BlobWriteOptions {
        var options = write.options
        if writeOnly.writeOnly { options.protection = .completeUnlessOpen }
        return options
    }

    @Option(
        value: "FILE",
        help: "Store the plaintext of an RNCryptor v3 file (its HMAC is checked before the blob appears)."
    )
    var fromRNCryptor: String?

    var rncryptor = RNCryptorPasswordOption()

    @Argument("NAME", help: "The blob's name.")
    var name: String

    @Argument("FILE", help: "The file to store, or '-' for standard input (not needed with --from-rncryptor).")
    var file: String?

    func validate() throws {
        if fromRNCryptor != nil, file != nil {
            throw ValidationError("give either FILE or --from-rncryptor FILE, not both")
        }
        if writeOnly.writeOnly, write.whenUnlocked {
            throw ValidationError("--write-only writes completeUnlessOpen blobs; leave out --when-unlocked")
        }
        // Standard input only when asked for: `put notes.txt` alone is a file name meant as the content,
        // and reading a terminal or an empty pipe instead would store an empty blob and report success.
        if fromRNCryptor == nil, file == nil {
            throw ValidationError(
                "put takes the blob's name, then the file to store ('-' for standard input); to store \(name) under its own name: coffer put \(name) \(name)"
            )
        }
        // Before the passphrase is asked for: a missing file fails at once.
        if let path = fromRNCryptor ?? file, path != "-" { try InputFile.checkReadable(path) }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        if let path = fromRNCryptor { return try putFromRNCryptor(vault, path: path, context) }
        let input: InputFile? = file == "-" ? nil : try InputFile(path: file ?? "-")
        let bar = context.progressBar("put \(name)", total: input?.size)
        let info: BlobInfo
        if let descriptor = input?.descriptor ?? context.console.inputDescriptor {
            info = try vault.blobs.write(name, fileDescriptor: descriptor, options: options, progress: bar.report)
        } else {
            info = try vault.blobs.write(name, data: context.console.readStandardInput(), options: options)
        }
        bar.update(completed: info.size)
        bar.finish()
        try context.output.status(BlobListing(info)) {
            "Stored \(info.name): \(ByteCount.format(info.size)) in \(counted(info.chunkCount, "content chunk"))"
                + (info.listChunkCount > 0 ? " and \(counted(info.listChunkCount, "list chunk"))" : "")
                + " (\(info.scope.rawValue), \(info.protection.rawValue))."
        }
    }

    private func putFromRNCryptor(_ vault: Vault, path: String, _ context: CommandContext) throws {
        let input = try InputFile(path: path)
        var password = try rncryptor.password(context)
        defer { password.wipe() }
        let bar = context.progressBar("put \(name)", total: input.size)
        let info = try vault.blobs.importRNCryptor(
            name,
            from: URL(fileURLWithPath: path),
            password: String(decoding: password, as: UTF8.self),
            options: options,
            progress: bar.report
        )
        bar.finish()
        try context.output.status(BlobListing(info)) {
            "Stored \(info.name) from RNCryptor: \(ByteCount.format(info.size)), HMAC verified."
        }
    }
}

/// `coffer get NAME [FILE]`: writes a blob, or a byte range of it, to a file or standard output.
struct GetCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "get",
        abstract: "Write a blob (or a byte range of it) to a file or standard output.",
        discussion: """
            Every chunk is authenticated as it is read and the whole content's SHA-256 is checked at the
            end of a full read; damage fails the command (exit 1) naming the blob. A file is written under
            a temporary name and moved into place only when complete (through a symbolic link, the link's
            target); a device, a named pipe or /dev/stdout is written in place.
            """,
        examples: [
            "coffer get photos/cat.jpg restored.jpg       # to a file",
            "coffer get docs.tar | tar x                  # to standard output",
            "coffer get docs.tar --offset 1048576 --length 4096 | xxd",
        ],
        isCancellable: true
    )

    @Option(value: "N", help: "Start at byte N (default 0).")
    var offset: UInt64?

    @Option(value: "N", help: "Read at most N bytes (default: to the end).")
    var length: UInt64?

    @Option(value: "FILE", help: "Write the blob as an RNCryptor v3 file (password-based).")
    var toRNCryptor: String?

    var rncryptor = RNCryptorPasswordOption()

    @Argument("NAME", help: "The blob's name.")
    var name: String

    @Argument("FILE", help: "Where to write; '-' or none for standard output.")
    var file: String?

    func validate() throws {
        if toRNCryptor != nil, file != nil || offset != nil || length != nil {
            throw ValidationError("--to-rncryptor writes the whole blob to its FILE; drop FILE, --offset and --length")
        }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let info = try vault.blobs.stat(name)
        if let path = toRNCryptor { return try getToRNCryptor(vault, info, path: path, context) }
        let range = try byteRange(size: info.size)
        let total = range.map { $0.upperBound - $0.lowerBound } ?? info.size
        let bar = context.progressBar("get \(name)", total: total)
        if let path = file, path != "-" {
            try vault.blobs.read(name, range: range, to: URL(fileURLWithPath: path), progress: bar.report)
        } else if let descriptor = context.console.outputDescriptor {
            try vault.blobs.read(name, range: range, toFileDescriptor: descriptor, progress: bar.report)
        } else {
            context.console.writeOutput(raw: try vault.blobs.data(name, range: range))
        }
        bar.update(completed: total)
        bar.finish()
    }

    /// The range `--offset` and `--length` select, or `nil` for the whole blob.
    private func byteRange(size: Int64) throws -> Range<Int64>? {
        guard offset != nil || length != nil else { return nil }
        let start = Int64(clamping: offset ?? 0)
        guard start <= size else { throw CLIFailure("--offset \(start) is past the end of the blob (\(size) bytes)") }
        let end = length.map { min(size, start + min(Int64(clamping: $0), size)) } ?? size
        return start..<end
    }

    private func getToRNCryptor(_ vault: Vault, _ info: BlobInfo, path: String, _ context: CommandContext) throws {
        var password = try rncryptor.password(context, confirm: true)
        defer { password.wipe() }
        let bar = context.progressBar("get \(name)", total: info.size)
        try vault.blobs.exportRNCryptor(
            name,
            to: URL(fileURLWithPath: path),
            password: String(decoding: password, as: UTF8.self),
            progress: bar.report
        )
        bar.finish()
        try context.output.status(["written": path]) { "Wrote \(name) to \(path) as RNCryptor v3." }
    }
}

/// `coffer ls`: the blobs, as a table; `coffer ls SNAPSHOT [PATH]`: one directory of a snapshot.
struct ListCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "ls",
        abstract: "List the blobs (size, scope, protection, time, name), or one directory of a snapshot.",
        discussion: """
            With SNAPSHOT, lists the paths directly in PATH (the snapshot's top by default; relative to the
            backed-up directory or absolute as it was backed up), or everything under it with --recursive,
            as 'coffer show' does. The tree is read as a stream: memory stays bounded whatever its size.
            """,
        examples: [
            "coffer ls                      # the blobs: a table with a header and human sizes",
            "coffer ls --bytes              # sizes in bytes, for scripts",
            "coffer ls ~/docs docs/2026     # one directory of this host's latest snapshot of ~/docs",
        ]
    )

    @Flag(help: "Sizes in exact bytes instead of KiB, MiB, … (--json gives bytes too).")
    var bytes: Bool

    @Flag(help: "With SNAPSHOT: everything under PATH, not just what is directly in it.")
    var recursive: Bool

    var host = HostOption()

    @Argument("SNAPSHOT", help: "List this snapshot's paths instead of the blobs (an id prefix or a name).")
    var snapshot: String?

    @Argument("PATH", help: "With SNAPSHOT: the directory to list (default: the top).")
    var path: String?

    func validate() throws {
        if snapshot == nil, recursive || host.host != nil {
            throw ValidationError("--recursive and --host go with a snapshot: coffer ls SNAPSHOT [PATH] --recursive")
        }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        if let snapshot { return try listSnapshot(snapshot, vault, context) }
        let blobs = try vault.blobs.list()
        if blobs.isEmpty, context.output.mode != .json {
            return context.output.note("No blobs yet; coffer put NAME FILE stores one.")
        }
        try context.output.result(blobs.map(BlobListing.init)) {
            var table = TextTable([
                .init(header: "SIZE", alignsRight: true), .init(header: "SCOPE", dropOrder: 2),
                .init(header: "READABLE", dropOrder: 1), .init(header: "MODIFIED", shortened: TextTable.shortTime),
                .init(header: "NAME"),
            ])
            for blob in blobs {
                table.append([
                    bytes ? String(blob.size) : ByteCount.format(blob.size),
                    blob.scope == .syncable ? "sync" : "device",
                    Self.readable(blob.protection),
                    TextTable.localTime(blob.modified),
                    PrintableText.escaping(blob.name),
                ])
            }
            return table.text(fitting: context.console.outputColumns)
        }
    }

    /// The READABLE column: when a blob can be read.
    static func readable(_ protection: ProtectionLevel) -> String {
        switch protection {
        case .whenUnlocked: return "when-unlocked"
        case .afterFirstUnlock: return "after-first-unlock"
        case .completeUnlessOpen: return "complete-unless-open"
        }
    }
}

extension ListCommand {
    /// `ls SNAPSHOT [PATH]`: one directory of a snapshot, as `show` lists a whole one.
    private func listSnapshot(_ snapshot: String, _ vault: Vault, _ context: CommandContext) throws {
        let count = try ShowCommand.list(
            snapshot,
            host: host.host,
            under: path ?? "",
            recursive: recursive,
            vault,
            context
        )
        if count == 0 { context.output.note("\(path ?? ".") is empty in that snapshot.") }
    }
}

/// `coffer rm NAME`: deletes a blob.
struct RemoveCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "rm",
        abstract: "Delete a blob; chunks no other blob uses are freed at once.",
        examples: [
            "coffer rm photos/cat.jpg                     # chunks no other blob uses are freed",
            "coffer rm old.tar && coffer compact          # and give the space back to the disk",
        ]
    )

    @Argument("NAME", help: "The blob's name.")
    var name: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try vault.blobs.delete(name)
        try context.output.status(["deleted": name]) { "Deleted \(name)." }
    }
}

/// `coffer mv NAME NEW`: renames a blob.
struct MoveCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "mv",
        abstract: "Rename a blob (its content is not rewritten).",
        examples: [
            "coffer mv photos/cat.jpg photos/kitty.jpg",
            "coffer mv draft.txt final.txt                # replaces an existing final.txt",
        ]
    )

    @Argument("NAME", help: "The blob's name.")
    var name: String

    @Argument("NEW", help: "Its new name.")
    var newName: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try vault.blobs.rename(name, to: newName)
        try context.output.status(["renamed": name, "to": newName]) { "Renamed \(name) to \(newName)." }
    }
}

/// `coffer stat NAME`: describes a blob.
struct StatCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "stat",
        abstract: "Describe a blob: size, chunks, scope, protection, dates and SHA-256.",
        examples: [
            "coffer stat photos/cat.jpg                 # size, chunks, dates, SHA-256",
            "coffer stat photos/cat.jpg --json | jq .sha256",
        ]
    )

    @Argument("NAME", help: "The blob's name.")
    var name: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let info = try vault.blobs.stat(name)
        try context.output.result(BlobListing(info)) {
            let dates = ISO8601DateFormatter()
            return """
                name:        \(PrintableText.escaping(info.name))
                size:        \(info.size) bytes (\(ByteCount.format(info.size)))
                chunks:      \(info.chunkCount) content\(info.listChunkCount > 0 ? ", \(info.listChunkCount) list" : "")
                scope:       \(info.scope.rawValue)
                protection:  \(info.protection.rawValue)
                created:     \(dates.string(from: info.created))
                modified:    \(dates.string(from: info.modified))
                sha256:      \(info.sha256Hex)
                """
        }
    }
}

/// A blob as `--json` prints it.
struct BlobListing: Encodable {
    let name: String
    let size: Int64
    let chunks: Int
    let listChunks: Int
    let scope: String
    let protection: String
    let created: Date
    let modified: Date
    let sha256: String

    init(_ info: BlobInfo) {
        name = info.name
        size = info.size
        chunks = info.chunkCount
        listChunks = info.listChunkCount
        scope = info.scope.rawValue
        protection = info.protection.rawValue
        created = info.created
        modified = info.modified
        sha256 = info.sha256Hex
    }
}

/// A file opened for reading by the CLI, with its size when it is a regular file.
struct InputFile {
    let descriptor: Int32
    let size: Int64?
    private let handle: FileHandle

    /// Fails, naming the problem, unless `path` can be opened for reading.
    static func checkReadable(_ path: String) throws {
        _ = try InputFile(path: path)
    }

    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw CLIFailure(exists ? "cannot read \(path): permission denied" : "\(path) does not exist")
        }
        self.handle = handle
        descriptor = handle.fileDescriptor
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        size = (attributes?[.type] as? FileAttributeType) == .typeRegular ? (attributes?[.size] as? Int64) : nil
    }
}
