import Coffer
import Foundation

/// `coffer write-only enable|disable|status`: whether clients that hold no passphrase may add to the
/// vault.
struct WriteOnlyCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "write-only",
        abstract: "Let clients that hold no passphrase add backups to this vault, or stop them.",
        examples: [
            "coffer write-only enable           # then: coffer backup --write-only DIR, with no passphrase",
            "coffer write-only status           # whether it is on, and the write key's fingerprint",
        ],
        subcommands: [WriteOnlyEnableCommand.self, WriteOnlyDisableCommand.self, WriteOnlyStatusCommand.self]
    )

    /// What `status` and `enable` print: whether write-only clients may write, and the fingerprint
    /// they pin.
    static func report(_ vault: Vault, _ context: CommandContext) throws {
        let allowed = try vault.allowsWriteOnlyClients
        let fingerprint = try vault.writeKeyFingerprint
        try context.output.result(["allowed": allowed ? "yes" : "no", "writeKey": fingerprint]) {
            "Write-only clients: \(allowed ? "allowed" : "not allowed")\nWrite key:          \(fingerprint)"
        }
    }
}

/// `coffer write-only enable`.
struct WriteOnlyEnableCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "enable",
        abstract: "Allow write-only clients: 'put --write-only' and 'backup --write-only' with no passphrase.",
        discussion: """
            A write-only client opens the vault without its passphrase and writes blobs and snapshots
            of the completeUnlessOpen class: each write is sealed to a public key of the vault whose
            private half exists only while the vault is unlocked. So the client can add, but cannot
            read, list, delete or replace anything, and neither can anyone who takes its files. Its
            blobs are listed as NAME@TIME-TAG and never replace a blob of the same name. Each such write
            is stored in full (it cannot be compared with what the vault holds without a key).

            The public keys are signed by this device's key; a client pins that key's fingerprint the
            first time it writes (or is given it with --write-key) and refuses a vault whose keys were
            swapped.
            """,
        examples: [
            "coffer write-only enable",
            "coffer write-only enable --json          # the write key's fingerprint, for clients to pin",
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try vault.allowWriteOnlyClients(true)
        try WriteOnlyCommands.report(vault, context)
    }
}

/// `coffer write-only disable`.
struct WriteOnlyDisableCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "disable",
        abstract: "Refuse write-only clients from now on (what they wrote stays).",
        examples: [
            "coffer write-only disable",
            "coffer write-only disable --quiet",
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try vault.allowWriteOnlyClients(false)
        try WriteOnlyCommands.report(vault, context)
    }
}

/// `coffer write-only status`.
struct WriteOnlyStatusCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "status",
        abstract: "Show whether write-only clients may write, and the write key's fingerprint they pin.",
        examples: ["coffer write-only status", "coffer write-only status --json"]
    )

    var vaultAccess: VaultAccess { .unlockedIfPassphraseGiven }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try WriteOnlyCommands.report(vault, context)
    }
}

/// `--write-only` and `--write-key`, shared by `put` and `backup`.
struct WriteOnlyFlags: ArgumentGroup {
    @Flag(
        help:
            "Write with no passphrase, as a write-only client (the vault must allow it: 'coffer write-only enable'); implies --complete-unless-open."
    )
    var writeOnly: Bool

    @Option(
        value: "FINGERPRINT",
        help:
            "With --write-only: the vault's write key to expect (default: the one pinned on first use, or $COFFER_WRITE_KEY)."
    )
    var writeKey: String?

    @Flag(
        help:
            "With --write-only: another vault now sits at a directory pinned for an earlier one, on purpose; pin the new one."
    )
    var repin: Bool

    /// How the command opens the vault.
    var access: VaultAccess { writeOnly ? .writeOnly(expectedKey: writeKey, repin: repin) : .unlocked }

    /// Refuses `--write-key` and `--repin` without `--write-only`.
    func validate() throws {
        if writeKey != nil, !writeOnly { throw ValidationError("--write-key goes with --write-only") }
        if repin, !writeOnly { throw ValidationError("--repin goes with --write-only") }
    }
}
