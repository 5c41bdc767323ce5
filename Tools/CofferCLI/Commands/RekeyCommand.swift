import Coffer
import Foundation

/// `coffer rekey`: moves the vault's device-bound records to a fresh device root.
struct RekeyCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "rekey",
        abstract: "Give this vault a fresh device root and device keys, for when its files may have leaked.",
        discussion: """
            Makes a fresh random device root and seals every device-bound record (items, blobs, chunks,
            snapshots) again under it, in batches, then wraps the new root under the passphrase and a new
            recovery key. A copy of the vault's files taken before, with its old recovery key or its
            device root, opens nothing written or re-sealed since; with --change-passphrase (or
            --new-passphrase-file), neither does the old passphrase. In a sync group, the device also
            gets new device keys, recorded in the group's log, and a new key epoch sealed to them: the
            copy, which holds the old keys, reads nothing the group writes afterwards and can add
            nothing the group accepts. Every identity whose keys were in the vault's files is revoked
            and named: the device ids this vault had before it re-enrolled as a new device, devices
            admitted in their name that this vault did not admit (a copy that re-enrolled, a thief's
            client), and the devices those admitted in turn; pull first, so the vault knows of them.
            Passphrase joins close, as after a revocation (whoever holds the
            leaked files may know a member's passphrase): allow them again with 'coffer group set
            --join passphrase' once passphrases are changed. Export or push at once so the other
            devices learn the new keys: of two replacements of one device's keys, the one the group
            hears of first wins, so a copy's later replacement does nothing, one that reaches another
            member at the same time gets the device revoked, and one that reached the group first
            holds the device (import then says so: have a member revoke it). Bundles and store objects
            made before the rekey are signed with the old keys, so the others refuse them: the first
            push after the rekey sends this vault's changes again under the new keys.

            Safe to interrupt: the vault reads everything at every moment, and running 'coffer rekey'
            again resumes where it stopped. Afterwards, run 'coffer key export' and keep the new
            recovery key offline: the old one no longer opens the vault.
            """,
        examples: [
            "coffer rekey                                  # after the vault's files leaked",
            "coffer rekey --change-passphrase",
        ]
    )

    @Flag(help: "Protect the new root with a new passphrase ($COFFER_NEW_PASSPHRASE, or asked).")
    var changePassphrase: Bool

    var newPassphrase = NewPassphraseOption()

    /// Opened locked: the passphrase that unlocks it also wraps the new root.
    var vaultAccess: VaultAccess { .locked }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let changing = changePassphrase || newPassphrase.newPassphraseFile != nil
        let passphrase = try SecretSource.passphrase.unlock(vault, file: context.global.passphraseFile, context)
        let replacement = changing ? try newPassphrase.passphrase(context) : nil
        let resuming = try vault.isRekeyInProgress
        let before = try vault.members()
        if resuming { context.output.note("Resuming the rekey an earlier run began.") }
        let bar = context.progressBar("rekey", total: nil)
        var last: RekeyProgress?
        try vault.rekey(passphrase: passphrase, newPassphrase: replacement) { progress in
            last = progress
            bar.update(
                completed: progress.resealedBytes,
                detail: "\(progress.examined) of \(progress.total) records examined, \(progress.resealed) re-sealed"
            )
        }
        bar.finish()
        let resealed = last?.resealed ?? 0
        let bytes = last?.resealedBytes ?? 0
        let wasActive = Set(before.filter(\.isActive).map(\.deviceID))
        let revoked = try vault.members().filter { !$0.isActive && wasActive.contains($0.deviceID) }
        let report = RekeyReport(
            resealedRecords: resealed,
            resealedBytes: bytes,
            resumed: resuming,
            passphraseChanged: replacement != nil,
            revokedDevices: revoked.map { $0.deviceID.uuidString.lowercased() }
        )
        try context.output.done(report) {
            "Rekeyed: \(resealed) device-bound records (\(ByteCount.format(bytes))) sealed again under a fresh device root\(replacement != nil ? ", protected by the new passphrase" : "")."
        }
        if !revoked.isEmpty {
            let names = revoked.map { "\($0.name) (\($0.deviceID.uuidString.prefix(8).lowercased()))" }
            context.output.note(
                "Revoked \(names.joined(separator: ", ")): identities whose keys were in this vault's files (the device this vault was before it re-enrolled), or devices admitted in their name elsewhere (a copy that re-enrolled, a thief's client), and what those admitted. If one is yours, make a new vault there and ask a member to approve it."
            )
        }
        context.output.note(
            "Next: run 'coffer key export' and keep the new recovery key offline; the old one no longer opens the vault."
        )
    }

    /// What `rekey --json` prints.
    struct RekeyReport: Encodable {
        let resealedRecords: Int
        let resealedBytes: Int64
        let resumed: Bool
        let passphraseChanged: Bool
        /// Devices a copy holding the old keys had admitted, revoked with them.
        let revokedDevices: [String]
    }
}
