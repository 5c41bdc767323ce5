import Coffer
import Foundation

/// `coffer rekey`: moves the vault's device-bound records to a fresh device root.
enum RekeyCommand {
    static let spec = CommandSpec(
        name: "rekey",
        abstract: "Move this vault's device-bound records to a fresh device root, for when its files may have leaked.",
        discussion: """
            Makes a fresh random device root and seals every device-bound record (items, blobs, chunks,
            snapshots) again under it, in batches, then wraps the new root under the passphrase and a new
            recovery key. A copy of the vault's files taken before, with its old recovery key or its
            device root, opens nothing written or re-sealed since; with --change-passphrase (or
            --new-passphrase-file), neither does the old passphrase. Syncable records are the sync
            group's: to shut out a leaked member, run 'coffer device revoke' or 'coffer group rotate'
            on another device.

            Safe to interrupt: the vault reads everything at every moment, and running 'coffer rekey'
            again resumes where it stopped. Afterwards, run 'coffer key export' and keep the new
            recovery key offline: the old one no longer opens the vault.
            """,
        options: [
            .flag(
                "change-passphrase",
                help: "Protect the new root with a new passphrase ($COFFER_NEW_PASSPHRASE, or asked)."
            ),
            .option("new-passphrase-file", value: "FILE", help: "Read the new passphrase from FILE."),
        ],
        examples: [
            "coffer rekey                                  # after the vault's files leaked",
            "coffer rekey --change-passphrase",
        ],
        run: run
    )

    static func run(_ invocation: Invocation) throws {
        let changing = invocation.flag("change-passphrase") || invocation.value("new-passphrase-file") != nil
        let vault = try Vault.open(at: try CofferCommand.vaultDirectory(invocation))
        defer { vault.close() }
        let passphrase = try SecretSource.passphrase.unlock(vault, invocation)
        let newPassphrase = changing ? try SecretSource.newPassphrase.passphrase(invocation, confirm: true) : nil
        let resuming = try vault.isRekeyInProgress
        if resuming, !invocation.flag("quiet"), !invocation.flag("json") {
            invocation.console.message("Resuming the rekey an earlier run began.")
        }
        let bar = ProgressBar(label: "rekey", total: nil, for: invocation)
        var last: RekeyProgress?
        try vault.rekey(passphrase: passphrase, newPassphrase: newPassphrase) { progress in
            last = progress
            bar.update(
                completed: progress.resealedBytes,
                detail: "\(progress.examined) of \(progress.total) records examined, \(progress.resealed) re-sealed"
            )
        }
        bar.finish()
        let resealed = last?.resealed ?? 0
        let bytes = last?.resealedBytes ?? 0
        if invocation.flag("json") {
            try invocation.console.printJSON(
                RekeyReport(
                    resealedRecords: resealed,
                    resealedBytes: bytes,
                    resumed: resuming,
                    passphraseChanged: newPassphrase != nil
                )
            )
        } else if !invocation.flag("quiet") {
            invocation.console.print(
                "Rekeyed: \(resealed) device-bound records (\(ByteCount.format(bytes))) sealed again under a fresh device root\(newPassphrase != nil ? ", protected by the new passphrase" : "")."
            )
            invocation.console.message(
                "Next: run 'coffer key export' and keep the new recovery key offline; the old one no longer opens the vault."
            )
        }
    }

    /// What `rekey --json` prints.
    struct RekeyReport: Encodable {
        let resealedRecords: Int
        let resealedBytes: Int64
        let resumed: Bool
        let passphraseChanged: Bool
    }
}
