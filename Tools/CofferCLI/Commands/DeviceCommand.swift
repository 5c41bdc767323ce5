import Coffer
import Foundation

/// `coffer device`: this vault's device identity in its sync group, and approving or revoking others.
enum DeviceCommand {
    static let spec = CommandSpec(
        name: "device",
        abstract: "Show this vault's device identity; approve or revoke other devices.",
        subcommands: [
            CommandSpec(
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
                ],
                run: show
            ),
            GroupCommands.approve,
            GroupCommands.revoke,
        ],
        examples: [
            "coffer device show                      # id, fingerprint, public keys",
            "coffer device approve request.txt         # let a new device in",
        ]
    )

    static func show(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlockingIfGiven(invocation)
        defer { vault.close() }
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
        if invocation.flag("json") {
            try invocation.console.printJSON([
                "deviceID": identity.deviceID.uuidString,
                "fingerprint": identity.fingerprint,
                "encryptionKey": identity.encryptionKey.map { String(format: "%02x", $0) }.joined(),
                "signingKey": identity.signingKey.map { String(format: "%02x", $0) }.joined(),
            ])
            return
        }
        invocation.console.print(
            """
            Device ID:       \(identity.deviceID.uuidString)
            Fingerprint:     \(identity.fingerprint)
            Encryption key:  \(identity.encryptionKey.map { String(format: "%02x", $0) }.joined()) (X25519)
            Signing key:     \(identity.signingKey.map { String(format: "%02x", $0) }.joined()) (Ed25519)
            """
        )
    }
}
