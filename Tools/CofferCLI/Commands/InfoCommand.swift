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
        let waiting = try vault.pendingJoinRequest() != nil
        let revoked = members.filter { !$0.isActive }.count
        let devices =
            counted(members.filter(\.isActive).count, "device") + (revoked > 0 ? ", \(revoked) revoked" : "")
            + "; new devices join by \(try vault.joinPolicy().rawValue)"
        var rows: [(String, String)] = [
            ("Vault", info.path),
            ("Vault ID", info.vaultID.uuidString.lowercased()),
            (
                "Device",
                info.deviceID.uuidString.lowercased()
                    + (members.first(where: \.isThisDevice).map { " (\(PrintableText.escaping($0.name)))" } ?? "")
            ),
            (
                "Sync group",
                waiting
                    ? "none yet: waiting for approval to join one (see coffer devices)"
                    : info.syncGroupID.uuidString.lowercased()
            ),
        ]
        if !waiting { rows.append(("Devices", devices)) }
        rows += [
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
            rows.insert(
                ("Rekey", "in progress (an earlier run stopped): run coffer rekey to finish it"),
                at: waiting ? 8 : 9
            )
        }
        try context.output.result(InfoListing(info)) {
            LabeledRows.text(rows, width: context.console.outputColumns)
        }
    }
}

/// What `coffer info --json` prints: the vault's identity, format, counts and sizes, named as every
/// command's JSON is (docs/CLI.md, "JSON output").
struct InfoListing: Encodable {
    let path: String
    let vaultID: String
    let deviceID: String
    let syncGroupID: String
    let formatVersion: Int
    let created: Date
    let kdf: String
    let isLocked: Bool
    let items: Int
    let blobs: Int
    let chunks: Int
    let snapshots: Int
    let fileBytes: Int
    let usedBytes: Int
    let liveBytes: Int
    let freeBytes: Int
    let mapBytes: Int

    init(_ info: VaultInfo) {
        path = info.path
        vaultID = info.vaultID.uuidString.lowercased()
        deviceID = info.deviceID.uuidString.lowercased()
        syncGroupID = info.syncGroupID.uuidString.lowercased()
        formatVersion = info.formatVersion
        created = info.createdAt
        kdf = info.kdf
        isLocked = info.isLocked
        items = info.itemCount
        blobs = info.blobCount
        chunks = info.chunkCount
        snapshots = info.snapshotCount
        fileBytes = info.fileBytes
        usedBytes = info.usedBytes
        liveBytes = info.liveBytes
        freeBytes = info.freeBytes
        mapBytes = info.mapBytes
    }
}
