import Coffer
import Foundation

/// The `coffer` program: its command tree, global options, and the mapping from outcomes to exit
/// statuses (0 success, 1 failure, 3 an incomplete backup, 64 usage error).
public enum CofferCommand {
    /// Exit status for success.
    public static let success: Int32 = 0
    /// Exit status for a failed command.
    public static let failure: Int32 = 1
    /// Exit status for a backup that completed without some paths it could not read (restic's 3).
    public static let incomplete: Int32 = 3
    /// Exit status for a command line that could not be parsed (`EX_USAGE`).
    public static let usage: Int32 = 64

    /// The release.
    public static let release = "0.11.0"

    /// The version `coffer --version` prints: the release, and the newest formats it reads and
    /// writes (`--version --json` prints them as ``VersionReport``).
    public static let version =
        "coffer \(release) (vault formats up to \(Schema.formatVersion), bundle format \(BundleHeader.version))"

    /// Options every command accepts, before or after its name: ``GlobalOptions``'s.
    public static let globalOptions: [OptionSpec] = ArgumentReflection.bindings(of: GlobalOptions()).compactMap {
        if case .option(let option) = $0.binding.definition(property: $0.property) { option } else { nil }
    }

    /// The environment variables `coffer` reads, as the manual lists them.
    public static let environmentVariables = [
        EnvironmentVariable("COFFER_VAULT", "The vault directory when --vault is not given."),
        EnvironmentVariable("COFFER_PASSPHRASE", "The passphrase when --passphrase-file is not given."),
        EnvironmentVariable("COFFER_NEW_PASSPHRASE", "The new passphrase for passwd and rekey --change-passphrase."),
        EnvironmentVariable("COFFER_RECOVERY_KEY", "The recovery key, for passwd to reset a forgotten passphrase."),
        EnvironmentVariable(
            "COFFER_RNCRYPTOR_PASSWORD",
            "The password of RNCryptor files (put --from-rncryptor, get --to-rncryptor)."
        ),
        EnvironmentVariable("COFFER_WRITE_KEY", "The write key a write-only client expects (as --write-key)."),
        EnvironmentVariable(
            "COFFER_WRITE_KEY_PINS",
            "The file of write-only clients' pinned write keys (default: $XDG_CONFIG_HOME/coffer/write-key-pins, else ~/.config/coffer/write-key-pins)."
        ),
        EnvironmentVariable(
            "COFFER_MAX_CLOCK_SKEW",
            "How many seconds ahead of this machine's clock a synced record may be (default 600)."
        ),
        EnvironmentVariable(
            InitCommand.weakenKDFForTests,
            "Tests only: 1 makes init derive the passphrase's key at a cost (scrypt N=2^10) that barely slows a guesser; never set it for a vault you keep."
        ),
        EnvironmentVariable(
            "AWS_ACCESS_KEY_ID",
            "The object store's access key (with AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN)."
        ),
        EnvironmentVariable("AWS_PROFILE", "The profile of --credentials-file to use (default: default)."),
        EnvironmentVariable(
            "AWS_REGION",
            "The object store's region when --region is not given (also AWS_DEFAULT_REGION; default us-east-1)."
        ),
        EnvironmentVariable(
            "AWS_ENDPOINT_URL",
            "The object store's endpoint when --endpoint is not given (default: AWS S3)."
        ),
        EnvironmentVariable("HOME", "Where the default vault is: ~/.local/share/coffer/default."),
        EnvironmentVariable("COLUMNS", "The terminal's width, when the terminal cannot be asked (default 80)."),
    ]

    /// Every command, in the order `coffer --help` lists them.
    static let commands: [any CommandDescription.Type] = [
        InitCommand.self, InfoCommand.self, ItemCommands.self, PutCommand.self, GetCommand.self, ListCommand.self,
        RemoveCommand.self, MoveCommand.self, StatCommand.self, BackupCommand.self, SnapshotsCommand.self,
        SnapshotCommands.self,
        ShowCommand.self, RestoreCommand.self, ForgetCommand.self, DiffCommand.self, FindCommand.self, DumpCommand.self,
        MountCommand.self,
        ExportCommand.self,
        ImportCommand.self, PushCommand.self, PullCommand.self, OffloadCommand.self, RemoteCommands.self,
        GCCommand.self,
        CompactCommand.self, VerifyCommand.self, RepairCommand.self, StatsCommand.self, PasswdCommand.self,
        RekeyCommand.self, KeyCommands.self, DeviceCommands.self, DevicesCommand.self, WriteOnlyCommands.self,
        GroupCommands.self, CompletionCommand.self,
    ]

    /// The command tree.
    public static let root = CommandSpec(
        name: "coffer",
        abstract: "An encrypted, sync-capable storage engine for secrets and large data.",
        discussion: """
            A vault is a directory holding one encrypted database. Create one with 'coffer init', then
            'coffer info' shows what it holds. Passphrases come from --passphrase-file, $COFFER_PASSPHRASE,
            or a prompt.
            """,
        subcommands: commands.map { $0.spec },
        examples: [
            "coffer init                           # a new vault (asks for a passphrase twice)",
            "coffer put photos/cat.jpg cat.jpg     # store a file as a blob",
            "coffer backup ~/Documents             # a snapshot of a directory",
            "coffer help backup                    # help for one command",
        ],
        exitStatuses: ExitStatus.standard(
            adding: ExitStatus(
                3,
                "backup: stored without some unreadable paths; import, pull, init --join: some records held back."
            )
        ),
        version: version
    )

    /// Runs the program on the process's raw arguments (`argv` without the program name), refusing
    /// any that is not UTF-8 instead of letting it be silently repaired into a different name, except
    /// where bytes are what is asked for (see ``byteArgument(_:at:of:)``).
    ///
    /// - Returns: The exit status: 64 for an argument that is not UTF-8 elsewhere, else that of
    ///   ``main(arguments:environment:console:)``.
    public static func main(rawArguments: [[UInt8]], environment: [String: String], console: Console) -> Int32 {
        var arguments: [String] = []
        for (index, raw) in rawArguments.enumerated() {
            if String(validating: raw, as: UTF8.self) == nil,
                let argument = byteArgument(raw, at: index, of: rawArguments)
            {
                arguments.append(argument)
                continue
            }
            guard let argument = String(validating: raw, as: UTF8.self) else {
                let shown = String(decoding: raw, as: UTF8.self)
                console.message(
                    "coffer: error: argument \(index + 1) ('\(shown)') is not UTF-8 text; names, services and "
                        + "values are stored as UTF-8, so give it in UTF-8 (for a file, rename it or pass its "
                        + "content on standard input)"
                )
                return usage
            }
            arguments.append(argument)
        }
        return main(arguments: arguments, environment: environment, console: console)
    }

    /// Options whose values are path patterns, matched as bytes.
    static let patternOptions = ["--exclude", "--iexclude", "--include", "--iinclude"]

    /// An argument that is not UTF-8 where bytes are asked for, as the text that stands for them: a
    /// path pattern (the value of ``patternOptions``, `find`'s PATTERN) with each byte that is not
    /// UTF-8 as `\xHH`, which patterns read as that byte; a path of `ls` escaped as listings show it.
    /// `nil` elsewhere.
    static func byteArgument(_ raw: [UInt8], at index: Int, of all: [[UInt8]]) -> String? {
        let earlier = all[..<index].map { String(decoding: $0, as: UTF8.self) }
        if let option = earlier.last, patternOptions.contains(option) { return PatternText.from(raw) }
        if let equals = raw.firstIndex(of: UInt8(ascii: "=")),
            patternOptions.contains(String(decoding: raw[..<equals], as: UTF8.self))
        {
            return String(decoding: raw[...equals], as: UTF8.self) + PatternText.from(Array(raw[(equals + 1)...]))
        }
        guard raw.first != UInt8(ascii: "-") else { return nil }
        if earlier.contains("find") { return PatternText.from(raw) }
        if earlier.contains("ls") { return PrintableText.escaping(raw) }
        return nil
    }

    /// Runs the program and returns its exit status.
    ///
    /// - Parameters:
    ///   - arguments: The command line without the program name.
    ///   - environment: The process environment.
    ///   - console: Where to write.
    public static func main(arguments: [String], environment: [String: String], console: Console) -> Int32 {
        if arguments.contains("--version"), arguments.contains("--json"),
            arguments.allSatisfy({ $0 == "--version" || $0 == "--json" })
        {
            do {
                try console.printJSON(VersionReport())
                return success
            } catch {
                console.message("coffer: error: \((error as? CofferError)?.message ?? "\(error)")")
                return failure
            }
        }
        let parser = CommandLineParser(root: root, globalOptions: globalOptions)
        var commandPath: [String] = []
        do {
            switch try parser.parse(arguments, environment: environment, console: console) {
            case .help(let text):
                console.print(text)
                return success
            case .run(let command, let invocation):
                commandPath = invocation.commandPath
                guard let run = command.run else { return success }
                if command.isCancellable {
                    try Interruption.whileCancellable { try run(invocation) }
                } else {
                    try run(invocation)
                }
                return success
            }
        } catch let error as CofferError where error.code == .userCanceled && Interruption.requested != nil {
            // Everything the command held is released by now; end as the signal would have.
            console.message("coffer: \(error.message).")
            Interruption.terminate()
        } catch let error as IncompleteResult {
            console.message("coffer: warning: \(error)")
            return incomplete
        } catch let error as UsageError {
            console.message("coffer: error: \(error)")
            return usage
        } catch let error as CofferError {
            // Keychain Services' status numbers belong to the keychain tier's errors; elsewhere the
            // message says it all.
            let status = commandPath.dropFirst().first == "item" ? " (\(error.code.name) \(error.code.osStatus))" : ""
            console.message("coffer: error: \(error.message)\(initHint(error))\(status)")
            return failure
        } catch {
            console.message("coffer: error: \(error)")
            return failure
        }
    }

    /// The command that makes a vault, for an error saying there is none: the library's messages
    /// are for any app's users, so they name no command.
    private static func initHint(_ error: CofferError) -> String {
        let noVault =
            error.code == .vaultNotFound
            || (error.code == .notAVault && error.message.hasSuffix("(it has no data.mdb)"))
        return noVault ? "; create one with `coffer init`" : ""
    }
}
