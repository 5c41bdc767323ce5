import Coffer
import Foundation

/// `coffer key`: recovery key management.
enum KeyCommand {
    static let spec = CommandSpec(
        name: "key",
        abstract: "Manage the vault's recovery key.",
        subcommands: [
            CommandSpec(
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
                ],
                run: export
            )
        ],
        examples: [
            "coffer key export > recovery.txt             # keep it offline"
        ]
    )

    static func export(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let key = try vault.recoveryKey()
        if invocation.flag("json") {
            try invocation.console.printJSON(["recoveryKey": key.text])
        } else {
            invocation.console.print(key.text)
            if !invocation.flag("quiet") {
                invocation.console.message(
                    "Keep this recovery key offline: with it, anyone holding the vault files can open them."
                )
            }
        }
    }
}
