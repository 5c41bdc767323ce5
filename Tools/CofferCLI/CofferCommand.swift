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

    /// The version `coffer --version` prints: the release, and the newest formats it reads and
    /// writes.
    public static let version =
        "coffer 0.11.0 (vault formats up to \(Schema.formatVersion), bundle format \(BundleHeader.version))"

    /// Options every command accepts, before or after its name.
    public static let globalOptions: [OptionSpec] = [
        .option(
            "vault",
            value: "DIR",
            help: "The vault directory (default: $COFFER_VAULT, else ~/.local/share/coffer/default)."
        ),
        .option(
            "passphrase-file",
            value: "FILE",
            help: "Read the passphrase from FILE (default: $COFFER_PASSPHRASE, else ask)."
        ),
        .flag("json", help: "Print results as JSON."),
        .flag("quiet", short: "q", help: "Print only results and errors; no progress."),
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
        subcommands: [
            InitCommand.spec, InfoCommand.spec, ItemCommand.spec, BlobCommands.put, BlobCommands.get,
            BlobCommands.list, BlobCommands.remove, BlobCommands.move, BlobCommands.stat, SnapshotCommands.backup,
            SnapshotCommands.list, SnapshotCommands.show, SnapshotCommands.restore, SnapshotCommands.forget,
            SnapshotCommands.diff, SyncCommands.export, SyncCommands.importBundle, RemoteCommands.push,
            RemoteCommands.pull, RemoteCommands.remoteGroup,
            MaintenanceCommands.gc, MaintenanceCommands.compact,
            MaintenanceCommands.verify, MaintenanceCommands.repair, MaintenanceCommands.stats, PasswdCommand.spec,
            RekeyCommand.spec,
            KeyCommand.spec, DeviceCommand.spec, GroupCommands.devices, GroupCommands.group,
        ],
        examples: [
            "coffer init                           # a new vault (asks for a passphrase twice)",
            "coffer put photos/cat.jpg cat.jpg     # store a file as a blob",
            "coffer backup ~/Documents             # a snapshot of a directory",
            "coffer help backup                    # help for one command",
        ],
        version: version
    )

    /// Runs the program on the process's raw arguments (`argv` without the program name), refusing
    /// any that is not UTF-8 instead of letting it be silently repaired into a different name.
    ///
    /// - Returns: The exit status: 64 for an argument that is not UTF-8, else that of
    ///   ``main(arguments:environment:console:)``.
    public static func main(rawArguments: [[UInt8]], environment: [String: String], console: Console) -> Int32 {
        var arguments: [String] = []
        for (index, raw) in rawArguments.enumerated() {
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

    /// Runs the program and returns its exit status.
    ///
    /// - Parameters:
    ///   - arguments: The command line without the program name.
    ///   - environment: The process environment.
    ///   - console: Where to write.
    public static func main(arguments: [String], environment: [String: String], console: Console) -> Int32 {
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
            console.message("coffer: error: \(error.message)\(status)")
            return failure
        } catch {
            console.message("coffer: error: \(error)")
            return failure
        }
    }

    /// The vault directory: `--vault`, else `$COFFER_VAULT`, else `~/.local/share/coffer/default`.
    static func vaultDirectory(_ invocation: Invocation) throws -> URL {
        if let path = invocation.value("vault") ?? invocation.environment["COFFER_VAULT"], !path.isEmpty {
            return URL(fileURLWithPath: path).standardizedFileURL
        }
        guard let home = invocation.environment["HOME"], !home.isEmpty else {
            throw CLIFailure("no vault given and $HOME is not set: pass --vault DIR or set COFFER_VAULT")
        }
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/coffer/default")
    }

    /// Opens the vault, and unlocks it only when a passphrase is given (`--passphrase-file`,
    /// `$COFFER_PASSPHRASE`; never a prompt): for commands that work locked and check the passphrase
    /// when there is one (`info`, `device show`).
    static func openUnlockingIfGiven(_ invocation: Invocation) throws -> Vault {
        let vault = try Vault.open(at: try vaultDirectory(invocation))
        guard SecretSource.passphrase.isProvided(in: invocation) else { return vault }
        return try unlocking(vault, invocation)
    }

    /// Opens the vault the invocation names and unlocks it with the invocation's passphrase.
    static func openUnlocked(_ invocation: Invocation, configuration: Vault.Configuration = .init()) throws -> Vault {
        var configuration = configuration
        if let text = invocation.environment["COFFER_MAX_CLOCK_SKEW"], !text.isEmpty {
            guard let seconds = Int64(text), seconds >= 0 else {
                throw CLIFailure("COFFER_MAX_CLOCK_SKEW is '\(text)'; give a whole number of seconds (default 600)")
            }
            configuration.maximumClockSkew = .seconds(seconds)
        }
        return try unlocking(
            try Vault.open(at: try vaultDirectory(invocation), configuration: configuration),
            invocation
        )
    }

    /// Unlocks `vault` with the invocation's passphrase, closing it if that fails.
    private static func unlocking(_ vault: Vault, _ invocation: Invocation) throws -> Vault {
        do {
            try SecretSource.passphrase.unlock(vault, invocation)
        } catch {
            vault.close()
            throw error
        }
        return vault
    }
}
