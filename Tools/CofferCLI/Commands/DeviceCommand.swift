import Coffer
import Foundation

/// `coffer device show|approve|revoke`: this vault's device identity, and letting others in or out.
struct DeviceCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "device",
        abstract: "Show this vault's device identity; approve or revoke other devices.",
        examples: [
            "coffer device show                      # id, fingerprint, public keys",
            "coffer device approve request.txt         # let a new device in",
        ],
        subcommands: [DeviceShowCommand.self, DeviceApproveCommand.self, DeviceRevokeCommand.self]
    )
}

/// `coffer device show`: this device's id, fingerprint and public keys.
struct DeviceShowCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "show",
        abstract: "Print this device's id, fingerprint and public keys.",
        discussion: """
            Every vault has a device identity: an X25519 key that keys are sealed to and an Ed25519
            key that signs what the device adds to its group. Their private halves stay sealed in
            the vault. The fingerprint is what two people compare when one approves the other's
            device. A vault made by an older Coffer gets its device keys the first time this runs
            with the passphrase; after that it works without one.
            """,
        examples: [
            "coffer device show",
            "coffer device show --json | jq .fingerprint",
        ]
    )

    var vaultAccess: VaultAccess { .unlockedIfPassphraseGiven }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let identity: DeviceIdentity
        switch Result(catching: { () throws(CofferError) in try vault.deviceIdentity() }) {
        case .success(let found):
            identity = found
        case .failure(let refused) where refused.code == .interactionNotAllowed:
            throw CofferError(
                .interactionNotAllowed,
                "this vault has no device keys yet; run 'coffer device show' once with the passphrase to make them"
            )
        case .failure(let error):
            throw error
        }
        let encryptionKey = identity.encryptionKey.map { String(format: "%02x", $0) }.joined()
        let signingKey = identity.signingKey.map { String(format: "%02x", $0) }.joined()
        let json = [
            "deviceID": identity.deviceID.uuidString.lowercased(), "fingerprint": identity.fingerprint,
            "encryptionKey": encryptionKey, "signingKey": signingKey,
        ]
        try context.output.result(json) {
            LabeledRows.text(
                [
                    ("Device ID", identity.deviceID.uuidString.lowercased()),
                    ("Fingerprint", identity.fingerprint),
                    ("Encryption key", "\(encryptionKey) (X25519)"),
                    ("Signing key", "\(signingKey) (Ed25519)"),
                ],
                width: context.console.outputColumns
            )
        }
    }
}
