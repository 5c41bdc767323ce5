import Coffer
import Foundation

/// `coffer key export`: the vault's recovery key.
struct KeyCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "key",
        abstract: "Manage the vault's recovery key.",
        examples: [
            "coffer key export > recovery.txt             # keep it offline"
        ],
        subcommands: [KeyExportCommand.self]
    )
}

/// `coffer key export`: prints the recovery key.
struct KeyExportCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "export",
        abstract: "Print the recovery key, which unlocks the vault without the passphrase.",
        discussion: """
            Prints the vault's recovery key on standard output. Anyone who has it and the vault files
            can read the vault: keep it offline (on paper, in a safe). Use it with
            'coffer passwd --recovery-key-file FILE' to set a new passphrase.
            """,
        examples: [
            "coffer key export > recovery.txt",
            "coffer key export | qrencode -o recovery.png",
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let key = try vault.recoveryKey()
        try context.output.result(["recoveryKey": key.text]) { key.text }
        context.output.note("Keep this recovery key offline: with it, anyone holding the vault files can open them.")
    }
}
