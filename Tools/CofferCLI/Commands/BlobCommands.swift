import Coffer
import Foundation

/// `coffer put|get|ls|rm|mv|stat`: the blob tier from the command line.
enum BlobCommands {
    static let put = CommandSpec(
        name: "put",
        abstract: "Store a file (or standard input) as a blob, replacing any blob of that name.",
        discussion: """
            The content is cut into chunks by content, deduplicated against everything in the vault,
            compressed with zstd and encrypted with AES-256-GCM, on every core, streaming: any size works
            in bounded memory. The blob appears only once all of it is stored. Blobs are syncable unless
            stored with --device-only.
            """,
        options: [
            .flag("device-only", help: "Keep the blob on this machine: never export it."),
            .flag("when-unlocked", help: "Readable only while the vault is unlocked (default: after first unlock)."),
            compressionOption,
            .option(
                "from-rncryptor",
                value: "FILE",
                help: "Store the plaintext of an RNCryptor v3 file (its HMAC is checked before the blob appears)."
            ),
            rncryptorPasswordOption,
        ],
        arguments: [
            ArgumentSpec("NAME", help: "The blob's name."),
            ArgumentSpec(
                "FILE",
                help: "The file to store, or '-' for standard input (not needed with --from-rncryptor).",
                optional: true
            ),
        ],
        examples: [
            "coffer put photos/cat.jpg cat.jpg            # store a file as the blob photos/cat.jpg",
            "tar c ~/docs | coffer put docs.tar -        # standard input, streamed",
            "coffer put --device-only keys.tar keys.tar  # never leaves this machine",
        ],
        isCancellable: true,
        run: runPut
    )

    static let get = CommandSpec(
        name: "get",
        abstract: "Write a blob (or a byte range of it) to a file or standard output.",
        discussion: """
            Every chunk is authenticated as it is read and the whole content's SHA-256 is checked at the
            end of a full read; damage fails the command (exit 1) naming the blob. A file is written under
            a temporary name and moved into place only when complete.
            """,
        options: [
            .option("offset", value: "N", help: "Start at byte N (default 0)."),
            .option("length", value: "N", help: "Read at most N bytes (default: to the end)."),
            .option("to-rncryptor", value: "FILE", help: "Write the blob as an RNCryptor v3 file (password-based)."),
            rncryptorPasswordOption,
        ],
        arguments: [
            ArgumentSpec("NAME", help: "The blob's name."),
            ArgumentSpec("FILE", help: "Where to write; '-' or none for standard output.", optional: true),
        ],
        examples: [
            "coffer get photos/cat.jpg restored.jpg       # to a file",
            "coffer get docs.tar | tar x                  # to standard output",
            "coffer get docs.tar --offset 1048576 --length 4096 | xxd",
        ],
        isCancellable: true,
        run: runGet
    )

    static let list = CommandSpec(
        name: "ls",
        abstract: "List the blobs: size, scope, protection, modification time (local) and name.",
        options: [.flag("bytes", help: "Sizes in exact bytes instead of KiB, MiB, … (--json gives bytes too).")],
        examples: [
            "coffer ls                      # a table with a header and human sizes",
            "coffer ls --bytes              # sizes in bytes, for scripts",
        ],
        run: runList
    )

    static let remove = CommandSpec(
        name: "rm",
        abstract: "Delete a blob; chunks no other blob uses are freed at once.",
        arguments: [ArgumentSpec("NAME", help: "The blob's name.")],
        examples: [
            "coffer rm photos/cat.jpg                     # chunks no other blob uses are freed",
            "coffer rm old.tar && coffer compact          # and give the space back to the disk",
        ],
        run: runRemove
    )

    static let move = CommandSpec(
        name: "mv",
        abstract: "Rename a blob (its content is not rewritten).",
        arguments: [ArgumentSpec("NAME", help: "The blob's name."), ArgumentSpec("NEW", help: "Its new name.")],
        examples: [
            "coffer mv photos/cat.jpg photos/kitty.jpg",
            "coffer mv draft.txt final.txt                # replaces an existing final.txt",
        ],
        run: runMove
    )

    static let stat = CommandSpec(
        name: "stat",
        abstract: "Describe a blob: size, chunks, scope, protection, dates and SHA-256.",
        arguments: [ArgumentSpec("NAME", help: "The blob's name.")],
        examples: [
            "coffer stat photos/cat.jpg                 # size, chunks, dates, SHA-256",
            "coffer stat photos/cat.jpg --json | jq .sha256",
        ],
        run: runStat
    )

    static let rncryptorPasswordOption = OptionSpec.option(
        "rncryptor-password-file",
        value: "FILE",
        help: "The RNCryptor password (default: $COFFER_RNCRYPTOR_PASSWORD, else ask)."
    )

    // MARK: Commands

    static func runPut(_ invocation: Invocation) throws {
        if let path = invocation.value("from-rncryptor") { return try putFromRNCryptor(invocation, path: path) }
        let name = invocation.arguments[0]
        let options = try writeOptions(invocation)
        // Standard input only when asked for: `put notes.txt` alone is a file name meant as the content,
        // and reading a terminal or an empty pipe instead would store an empty blob and report success.
        guard invocation.arguments.count > 1 else {
            throw UsageError(
                message:
                    "put takes the blob's name, then the file to store ('-' for standard input); to store \(name) under its own name: coffer put \(name) \(name)",
                commandPath: invocation.commandPath
            )
        }
        let path = invocation.arguments[1]
        let input: InputFile? = path == "-" ? nil : try InputFile(path: path)
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let progress = progressBar(invocation, label: "put \(name)", total: input?.size)
        let info: BlobInfo
        if let input {
            info = try vault.blobs.write(
                name,
                fileDescriptor: input.descriptor,
                options: options,
                progress: progress.report
            )
        } else if let descriptor = invocation.console.inputDescriptor {
            info = try vault.blobs.write(name, fileDescriptor: descriptor, options: options, progress: progress.report)
        } else {
            info = try vault.blobs.write(name, data: invocation.console.readStandardInput(), options: options)
        }
        progress.bar.update(completed: info.size)
        progress.bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(BlobListing(info))
        } else if !invocation.flag("quiet") {
            invocation.console.message(
                "Stored \(info.name): \(ByteCount.format(info.size)) in \(info.chunkCount) content chunks\(info.listChunkCount > 0 ? " and \(info.listChunkCount) list chunks" : "") (\(info.scope.rawValue), \(info.protection.rawValue))."
            )
        }
    }

    static func runGet(_ invocation: Invocation) throws {
        if let path = invocation.value("to-rncryptor") { return try getToRNCryptor(invocation, path: path) }
        let name = invocation.arguments[0]
        let path = invocation.arguments.count > 1 ? invocation.arguments[1] : "-"
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let info = try vault.blobs.stat(name)
        let range = try byteRange(invocation, size: info.size)
        let total = range.map { $0.upperBound - $0.lowerBound } ?? info.size
        let progress = progressBar(invocation, label: "get \(name)", total: total)
        if path != "-" {
            try vault.blobs.read(name, range: range, to: URL(fileURLWithPath: path), progress: progress.report)
        } else if let descriptor = invocation.console.outputDescriptor {
            try vault.blobs.read(name, range: range, toFileDescriptor: descriptor, progress: progress.report)
        } else {
            invocation.console.writeOutput(raw: try vault.blobs.data(name, range: range))
        }
        progress.bar.update(completed: total)
        progress.bar.finish()
    }

    static func runList(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let blobs = try vault.blobs.list()
        if invocation.flag("json") {
            try invocation.console.printJSON(blobs.map(BlobListing.init))
            return
        }
        guard !blobs.isEmpty else {
            if !invocation.flag("quiet") {
                invocation.console.message("No blobs yet; coffer put NAME FILE stores one.")
            }
            return
        }
        let exact = invocation.flag("bytes")
        var table = TextTable([
            .init(header: "SIZE", alignsRight: true), .init(header: "SCOPE"), .init(header: "READABLE"),
            .init(header: "MODIFIED"), .init(header: "NAME"),
        ])
        for blob in blobs {
            table.append([
                exact ? String(blob.size) : ByteCount.format(blob.size),
                blob.scope == .syncable ? "sync" : "device",
                blob.protection == .whenUnlocked ? "when-unlocked" : "after-first-unlock",
                TextTable.localTime(blob.modified),
                PrintableText.escaping(blob.name),
            ])
        }
        invocation.console.print(table.text)
    }

    static func runRemove(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        try vault.blobs.delete(invocation.arguments[0])
        if invocation.flag("json") {
            try invocation.console.printJSON(["deleted": invocation.arguments[0]])
        } else if !invocation.flag("quiet") {
            invocation.console.message("Deleted \(invocation.arguments[0]).")
        }
    }

    static func runMove(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        try vault.blobs.rename(invocation.arguments[0], to: invocation.arguments[1])
        if !invocation.flag("quiet"), !invocation.flag("json") {
            invocation.console.message("Renamed \(invocation.arguments[0]) to \(invocation.arguments[1]).")
        }
    }

    static func runStat(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let info = try vault.blobs.stat(invocation.arguments[0])
        if invocation.flag("json") {
            try invocation.console.printJSON(BlobListing(info))
            return
        }
        let dates = ISO8601DateFormatter()
        invocation.console.print(
            """
            name:        \(PrintableText.escaping(info.name))
            size:        \(info.size) bytes (\(ByteCount.format(info.size)))
            chunks:      \(info.chunkCount) content\(info.listChunkCount > 0 ? ", \(info.listChunkCount) list" : "")
            scope:       \(info.scope.rawValue)
            protection:  \(info.protection.rawValue)
            created:     \(dates.string(from: info.created))
            modified:    \(dates.string(from: info.modified))
            sha256:      \(info.sha256Hex)
            """
        )
    }

    static func putFromRNCryptor(_ invocation: Invocation, path: String) throws {
        guard invocation.arguments.count == 1 else {
            throw CLIFailure("give either FILE or --from-rncryptor FILE, not both")
        }
        let name = invocation.arguments[0]
        let input = try InputFile(path: path)
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        var password = try SecretSource.rncryptorPassword.read(invocation)
        defer { password.wipe() }
        let options = try writeOptions(invocation)
        let progress = progressBar(invocation, label: "put \(name)", total: input.size)
        let info = try vault.blobs.importRNCryptor(
            name,
            from: URL(fileURLWithPath: path),
            password: String(decoding: password, as: UTF8.self),
            options: options,
            progress: progress.report
        )
        progress.bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(BlobListing(info))
        } else if !invocation.flag("quiet") {
            invocation.console.message(
                "Stored \(info.name) from RNCryptor: \(ByteCount.format(info.size)), HMAC verified."
            )
        }
    }

    static func getToRNCryptor(_ invocation: Invocation, path: String) throws {
        guard invocation.arguments.count == 1, invocation.value("offset") == nil, invocation.value("length") == nil
        else {
            throw CLIFailure("--to-rncryptor writes the whole blob to its FILE; drop FILE, --offset and --length")
        }
        let name = invocation.arguments[0]
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let info = try vault.blobs.stat(name)
        var password = try SecretSource.rncryptorPassword.read(invocation, confirm: true)
        defer { password.wipe() }
        let progress = progressBar(invocation, label: "get \(name)", total: info.size)
        try vault.blobs.exportRNCryptor(
            name,
            to: URL(fileURLWithPath: path),
            password: String(decoding: password, as: UTF8.self),
            progress: progress.report
        )
        progress.bar.finish()
        if !invocation.flag("quiet"), !invocation.flag("json") {
            invocation.console.message("Wrote \(name) to \(path) as RNCryptor v3.")
        }
    }

    // MARK: Helpers

    /// The range `--offset` and `--length` select, or `nil` for the whole blob.
    static func byteRange(_ invocation: Invocation, size: Int64) throws -> Range<Int64>? {
        let offsetText = invocation.value("offset")
        let lengthText = invocation.value("length")
        if offsetText == nil, lengthText == nil { return nil }
        guard let offset = Int64(offsetText ?? "0"), offset >= 0 else {
            throw CLIFailure("--offset takes a byte offset (0 or more), not '\(offsetText ?? "")'")
        }
        guard offset <= size else {
            throw CLIFailure("--offset \(offset) is past the end of the blob (\(size) bytes)")
        }
        var end = size
        if let lengthText {
            guard let length = Int64(lengthText), length >= 0 else {
                throw CLIFailure("--length takes a byte count (0 or more), not '\(lengthText)'")
            }
            end = min(size, offset + length)
        }
        return offset..<end
    }

    /// A progress bar on standard error (when it is a terminal and output is not quiet or JSON) and the
    /// callback that feeds it.
    static func progressBar(
        _ invocation: Invocation,
        label: String,
        total: Int64?
    ) -> (bar: ProgressBar, report: BlobProgress) {
        let bar = ProgressBar(label: label, total: total, for: invocation)
        return (bar, { bar.update(completed: $0) })
    }

    /// `--compression LEVEL`, shared by `put` and `backup`.
    static let compressionOption = OptionSpec.option(
        "compression",
        value: "LEVEL",
        help: "zstd level for new chunks, 1 (fastest) to 19 (smallest); default 3."
    )

    /// The options `put` was given: scope, protection, compression level.
    static func writeOptions(_ invocation: Invocation) throws -> BlobWriteOptions {
        BlobWriteOptions(
            scope: invocation.flag("device-only") ? .deviceBound : .syncable,
            protection: invocation.flag("when-unlocked") ? .whenUnlocked : .afterFirstUnlock,
            compressionLevel: try compressionLevel(invocation)
        )
    }

    /// The level `--compression` gives, or `nil` for the vault's default.
    static func compressionLevel(_ invocation: Invocation) throws -> Int? {
        guard let text = invocation.value("compression") else { return nil }
        guard let level = Int(text), (1...19).contains(level) else {
            throw UsageError(
                message: "--compression takes a zstd level from 1 to 19, not '\(text)'",
                commandPath: invocation.commandPath
            )
        }
        return level
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
