import Coffer
import Foundation

/// `coffer info`: identity, format, counts and sizes of a vault.
struct InfoCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "info",
        abstract: "Show a vault's ids, format, counts and sizes.",
        discussion: """
            Works without the passphrase. When one is given (--passphrase-file or $COFFER_PASSPHRASE), it
            is checked, and a wrong one is an error; info never prompts.
            """,
        examples: [
            "coffer info                                   # works without the passphrase",
            "coffer info --json | jq .liveBytes",
        ]
    )

    var vaultAccess: VaultAccess { .unlockedIfPassphraseGiven }

    /// `2.4 GiB: 45.2 MiB live, 2.3 GiB free for reuse (coffer compact gives it back)`.
    static func dataFileSummary(_ info: VaultInfo) -> String {
        // What the file holds beyond its live pages: free pages, in the file or not yet written.
        let free = Int64(max(0, info.fileBytes - info.liveBytes))
        let summary = "\(ByteCount.format(Int64(info.fileBytes))): \(ByteCount.format(Int64(info.liveBytes))) live"
        // Less than a tenth free (or under 4 MiB) is LMDB's ordinary slack, not worth a compaction.
        guard free >= 4 << 20, free * 10 >= Int64(info.fileBytes) else {
            return summary + ", \(ByteCount.format(free)) free for reuse"
        }
        return summary + ", \(ByteCount.format(free)) free for reuse (coffer compact gives it back)"
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let info = try vault.info()
        let members = try vault.members()
        let group =
            try vault.pendingJoinRequest() != nil
            ? "none yet: waiting for approval to join one (see coffer devices)"
            : "\(info.syncGroupID.uuidString), \(members.filter(\.isActive).count) device(s)"
                + "\(members.contains { !$0.isActive } ? ", \(members.filter { !$0.isActive }.count) revoked" : ""), "
                + "new devices join by \(try vault.joinPolicy().rawValue)"
        var rows: [(String, String)] = [
            ("Vault", info.path),
            ("Vault ID", info.vaultID.uuidString),
            ("Device ID", info.deviceID.uuidString),
            ("Sync group", group),
            ("Format", "version \(info.formatVersion)"),
            ("Created", ISO8601DateFormatter().string(from: info.createdAt)),
            ("Key derivation", info.kdf),
            ("State", info.isLocked ? "locked" : "unlocked (passphrase verified)"),
            ("Items", "\(info.itemCount)"),
            ("Blobs", "\(info.blobCount)"),
            ("Chunks", "\(info.chunkCount)"),
            ("Snapshots", "\(info.snapshotCount)"),
            ("Data file", Self.dataFileSummary(info)),
        ]
        if !info.isLocked, try vault.isRekeyInProgress {
            rows.insert(("Rekey", "in progress (an earlier run stopped): run coffer rekey to finish it"), at: 8)
        }
        let width = rows.map(\.0.count).max() ?? 0
        try context.output.result(info) {
            rows.map { "\(($0.0 + ":").padding(toLength: width + 2, withPad: " ", startingAt: 0))\($0.1)" }
                .joined(separator: "\n")
        }
    }
}
