import Coffer

/// How a command needs its vault.
enum VaultAccess: Sendable, Equatable {
    /// Unlocked with the passphrase (from `--passphrase-file`, `$COFFER_PASSPHRASE`, or asked).
    case unlocked
    /// Unlocked, and items that require the user's presence ask for the passphrase again.
    case unlockedAskingForPresence
    /// Unlocked only when a passphrase is given without asking; else locked (`info`, `devices`).
    case unlockedIfPassphraseGiven
    /// Opened locked: the command unlocks it itself (`passwd`, `rekey`).
    case locked
    /// Opened and never unlocked, to write `completeUnlessOpen` records with no passphrase, its write
    /// key checked against the pinned one (`put --write-only`, `backup --write-only`); `repin` replaces
    /// the pin of the vault's directory when another vault is found there.
    case writeOnly(expectedKey: String?, repin: Bool = false)
}

/// A command that works on the vault: the driver opens it as ``vaultAccess`` says, runs the command,
/// and closes it, whatever happens.
protocol VaultCommand: ParsableCommand {
    /// How the command needs the vault (default: unlocked).
    var vaultAccess: VaultAccess { get }

    /// Does the command's work on the open vault.
    func run(_ vault: Vault, _ context: CommandContext) throws
}

extension VaultCommand {
    var vaultAccess: VaultAccess { .unlocked }

    func run(_ context: CommandContext) throws {
        let vault = try context.openVault(vaultAccess)
        defer { vault.close() }
        try run(vault, context)
    }
}
