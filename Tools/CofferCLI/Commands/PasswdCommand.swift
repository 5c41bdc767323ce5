import Coffer
import Foundation

/// `coffer passwd`: changes the passphrase, proving the old one or the recovery key.
struct PasswdCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "passwd",
        abstract: "Change the vault's passphrase.",
        discussion: """
            Unlocks with the current passphrase (or, with --recovery-key-file or $COFFER_RECOVERY_KEY, the
            recovery key, for a forgotten passphrase), then sets the new one from --new-passphrase-file,
            $COFFER_NEW_PASSPHRASE, or a prompt. Only the KDF record, the two passphrase-wrapped root keys
            and the sync join block are rewritten.
            """,
        examples: [
            "coffer passwd                               # asks for the old and the new one",
            "coffer passwd --recovery-key-file recovery.txt   # the passphrase was forgotten",
        ]
    )

    var newPassphrase = NewPassphraseOption()

    @Option(value: "FILE", help: "Unlock with the recovery key in FILE instead of the passphrase.")
    var recoveryKeyFile: String?

    /// The recovery key, from `--recovery-key-file` or `$COFFER_RECOVERY_KEY`, else asked.
    static let recoveryKey = SecretSource(
        fileOption: "recovery-key-file",
        environmentVariable: "COFFER_RECOVERY_KEY",
        prompt: "Recovery key: "
    )

    /// Opened locked: it unlocks with the passphrase or the recovery key.
    var vaultAccess: VaultAccess { .locked }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        if Self.recoveryKey.isProvided(file: recoveryKeyFile, context) {
            let text = String(decoding: try Self.recoveryKey.read(file: recoveryKeyFile, context), as: UTF8.self)
            try vault.unlock(recoveryKey: try RecoveryKey(text: text.trimmingCharacters(in: .whitespacesAndNewlines)))
        } else {
            try SecretSource.passphrase.unlock(vault, file: context.global.passphraseFile, context)
        }
        try vault.changePassphrase(to: try newPassphrase.passphrase(context))
        try context.output.done(["changed": true]) { "Passphrase changed." }
    }
}
