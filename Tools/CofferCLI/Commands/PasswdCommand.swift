import Coffer
import Foundation

/// `coffer passwd`: changes the passphrase, proving the old one or the recovery key.
enum PasswdCommand {
    static let spec = CommandSpec(
        name: "passwd",
        abstract: "Change the vault's passphrase.",
        discussion: """
            Unlocks with the current passphrase (or, with --recovery-key-file or $COFFER_RECOVERY_KEY, the
            recovery key, for a forgotten passphrase), then sets the new one from --new-passphrase-file,
            $COFFER_NEW_PASSPHRASE, or a prompt. Only the KDF record, the two passphrase-wrapped root keys
            and the sync join block are rewritten.
            """,
        options: [
            .option("new-passphrase-file", value: "FILE", help: "Read the new passphrase from FILE."),
            .option(
                "recovery-key-file",
                value: "FILE",
                help: "Unlock with the recovery key in FILE instead of the passphrase."
            ),
        ],
        examples: [
            "coffer passwd                               # asks for the old and the new one",
            "coffer passwd --recovery-key-file recovery.txt   # the passphrase was forgotten",
        ],
        run: run
    )

    static let recoveryKey = SecretSource(
        fileOption: "recovery-key-file",
        environmentVariable: "COFFER_RECOVERY_KEY",
        prompt: "Recovery key: "
    )

    static func run(_ invocation: Invocation) throws {
        let vault = try Vault.open(at: try CofferCommand.vaultDirectory(invocation))
        defer { vault.close() }
        if recoveryKey.isProvided(in: invocation) {
            let text = String(decoding: try recoveryKey.read(invocation), as: UTF8.self)
            try vault.unlock(recoveryKey: try RecoveryKey(text: text.trimmingCharacters(in: .whitespacesAndNewlines)))
        } else {
            try SecretSource.passphrase.unlock(vault, invocation)
        }
        try vault.changePassphrase(to: try SecretSource.newPassphrase.passphrase(invocation, confirm: true))
        if invocation.flag("json") {
            try invocation.console.printJSON(["changed": true])
        } else if !invocation.flag("quiet") {
            invocation.console.print("Passphrase changed.")
        }
    }
}
