import Coffer
import Foundation

// `coffer export|import`, and the bundle side of `coffer init --join`: moving syncable records
// between the vaults of a sync group with bundle files.

/// `coffer export --out FILE`: the vault's syncable records, in a bundle.
struct ExportCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "export",
        abstract: "Write the vault's syncable records to a bundle file.",
        discussion: """
            Only syncable records are written (items, blobs and snapshots marked syncable, with their
            deletions); device-bound ones never leave this machine. Without --peer the bundle holds
            everything syncable; with --peer NAME it holds only what changed since the last export to NAME
            (everything, the first time). The bundle is encrypted under the sync group's key and can be
            carried on any medium; 'coffer import' or 'coffer init --join' reads it on the other machine.
            """,
        examples: [
            "coffer export --out /media/usb/laptop.bundle            # everything syncable",
            "coffer export --out /media/usb/2.bundle --peer desktop   # only what desktop lacks",
        ]
    )

    @Option(value: "FILE", help: "The bundle file to write (required; replaced if it exists).")
    var out: String?

    @Option(value: "NAME", help: "Export only what NAME has not been sent yet.")
    var peer: String?

    func validate() throws {
        guard let out, !out.isEmpty else { throw ValidationError("export needs --out FILE: where to write the bundle") }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let path = out ?? ""
        let bar = context.progressBar("export", total: nil)
        let summary = try vault.export(to: URL(fileURLWithPath: path), peer: peer, progress: bar.report)
        bar.finish()
        let nothingNew = summary.isIncremental && summary.records.total == 0 && summary.chunks == 0
        try context.output.result(ImportCommand.Report(bundle: path, summary: summary)) {
            if summary.groupLogFull {
                return "Wrote the sync group's membership log to \(path), and no record."
            }
            if nothingNew {
                return
                    "Nothing new for peer '\(summary.peer ?? "")' since change \(summary.firstSequence - 1): wrote an empty bundle to \(path) (importing it changes nothing)."
            }
            let scope =
                summary.isIncremental
                ? (summary.firstSequence == summary.lastSequence
                    ? "change \(summary.lastSequence)" : "changes \(summary.firstSequence) to \(summary.lastSequence)")
                    + " for peer '\(summary.peer ?? "")'"
                : "everything syncable"
            return
                "Exported \(ImportCommand.describe(summary.records)) and \(counted(summary.chunks, "chunk")) to \(path) "
                + "(\(ByteCount.format(summary.bytes)), \(scope))."
        }
        if summary.groupLogFull {
            throw CLIFailure(
                "no record was exported: the sync group is frozen (its membership log is full, or a member's log would overflow it). \(Self.frozen)"
            )
        }
        if let left = summary.deviceBoundLeftBehind, !nothingNew {
            context.output.note("\(left) device-bound record\(left == 1 ? "" : "s") stayed on this machine.")
        }
    }

    /// What a frozen group means, and what to do (docs/SYNC.md, "A full log").
    static let frozen = GroupLog.frozenExplanation + "."
}

/// `coffer import FILE`: applies a bundle.
struct ImportCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "import",
        abstract: "Apply a bundle exported by a vault of this sync group.",
        discussion: """
            The whole bundle is verified before anything changes; a damaged, truncated or foreign bundle
            is refused and the vault stays as it was. Each record replaces this vault's only if it is newer
            (last writer wins, deletions included), so importing in any order, or twice, is safe.
            """,
        examples: [
            "coffer import /media/usb/laptop.bundle",
            "coffer import 2.bundle --json",
        ],
        exitStatuses: ExitStatus.standard(adding: .incompleteImport)
    )

    @Argument("FILE", help: "The bundle to import.")
    var file: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let bar = context.progressBar("import", total: Self.fileSize(file))
        let before = try? vault.members()
        let summary = try vault.import(from: URL(fileURLWithPath: file), progress: bar.report)
        bar.finish()
        try context.output.result(Report(bundle: file, summary: summary)) { Self.describe(summary, path: file) }
        let changes = before.flatMap { before in (try? vault.members()).map { MembershipChanges(from: before, to: $0) }
        }
        try Self.finish(summary, context, membership: changes)
    }

    /// Says how the sync group's membership changed, naming each device, when it did: a warning when
    /// this device is out.
    static func note(_ changes: MembershipChanges, _ context: CommandContext) {
        guard context.output.mode != .json, !changes.isEmpty else { return }
        if changes.thisDeviceIsOut {
            context.output.warning(
                "warning: this device is no longer a member of the sync group: \(changes.summary). It can no longer sync with the group; its records stay readable here. To rejoin, make a new vault on this machine and ask a member to approve it, or, if no member you trust is left, found a new group with coffer group new"
            )
        } else {
            context.output.warning("note: the sync group's membership changed: \(changes.summary); see coffer devices")
        }
    }

    // MARK: Shared with init --join and pull

    /// The line that says what an import of `path` did.
    static func describe(_ summary: ImportSummary, path: String) -> String {
        "Imported \(path) from device \(summary.sourceDevice.uuidString.lowercased()): applied "
            + "\(describe(summary.applied)); \(summary.skipped) already here or older; "
            + "\(summary.conflicts) conflict\(summary.conflicts == 1 ? "" : "s") decided by last writer wins; "
            + "\(summary.newChunks) of \(summary.chunks) chunks new."
    }

    /// Says what an import could not apply now, and ends the command with exit 3 when something
    /// waits (held records, asked for in this vault's next bundles) or was refused (a device whose
    /// clock is ahead); notes device-bound blobs moved aside to make room for synced ones. With
    /// `--json` only the exit status tells: the JSON holds the rest.
    static func finish(
        _ summary: ImportSummary,
        _ context: CommandContext,
        membership: MembershipChanges? = nil
    ) throws {
        let output = context.output
        if output.mode != .json {
            if let joined = summary.joined {
                output.warning(
                    "Joined sync group \(joined.group.description): approved by device \(joined.approver.uuidString.lowercased()) ('\(PrintableText.escaping(joined.approverName))')."
                )
            } else if let membership, !membership.isEmpty {
                note(membership, context)
            } else if summary.membershipChanged {
                // Only a comparison of the members before and after shows that no one was admitted
                // or revoked.
                output.warning(
                    membership == nil
                        ? "note: the sync group's membership log changed (its devices, key epoch or join policy); see coffer devices"
                        : "note: the sync group's membership log took new entries that admit or revoke no device (a new key epoch, a device's new keys, a change of join policy, or entries without effect, such as joins that do not count); see coffer devices"
                )
            }
            if summary.groupLogFull {
                output.warning(
                    "warning: the sync group's membership log is now full, which freezes the group. \(ExportCommand.frozen)"
                )
            }
            for name in summary.renamedDeviceBoundBlobs {
                output.warning(
                    "note: a synced blob took this vault's device-bound blob's name; the device-bound one is kept as '\(PrintableText.escaping(name))'"
                )
            }
            if summary.droppedForgedRecords > 0 {
                output.warning(
                    "warning: dropped \(counted(summary.droppedForgedRecords, "record")) held back since an earlier import: \(summary.droppedForgedRecords == 1 ? "it refers" : "they refer") to chunks of a write-only client's write that \(summary.droppedForgedRecords == 1 ? "its" : "their") keys do not open, so a modified client made \(summary.droppedForgedRecords == 1 ? "it" : "them") up (a member's stolen device, say); the genuine chunks were kept. Check coffer devices for a device you do not know"
                )
            }
            if summary.held > 0 {
                let senders = summary.heldBySender.map {
                    "device \($0.deviceID.uuidString.lowercased()) sent \($0.records)"
                }
                let sent = senders.isEmpty ? "" : " (\(senders.joined(separator: ", ")))"
                output.warning(
                    "warning: \(counted(summary.held, "record")) \(summary.held == 1 ? "waits" : "wait") for data this vault lacks (deleted here, or never received)\(sent); this vault's next export or push asks for it, and the import that brings it applies them. A device that sent records held their data: if they still wait after it has pushed or exported again, it lost the data or made the records up; revoke it if you do not trust it (coffer device revoke ID), and what it sent stops counting"
                )
            }
            if summary.heldFromFormerMembers > 0 {
                let count = summary.heldFromFormerMembers
                output.warning(
                    "note: \(counted(count, "record")) that devices no longer in the group (revoked, or their join voided) sent \(count == 1 ? "waits" : "wait") for data they may never send; \(count == 1 ? "it is" : "they are") applied if it arrives from any member, and no longer make imports incomplete"
                )
            }
            let dates = ISO8601DateFormatter()
            for (device, date) in summary.devicesAhead.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
                output.warning(
                    "warning: records from device \(device.uuidString.lowercased()) carry clock stamps up to \(dates.string(from: date)), ahead of this machine's clock by more than the allowed skew; they were refused, and the next pulls (or, for bundle files, the device's next exports) bring them again until their time has come here. Fix that device's clock, or that of a write-only client that writes into its vault (its stamps are its own); or allow more with COFFER_MAX_CLOCK_SKEW=SECONDS"
                )
            }
        }
        guard summary.isIncomplete else { return }
        throw IncompleteResult(
            "the import is incomplete: \(counted(summary.held, "record")) held back, \(summary.refusedFutureRecords) refused for their clock"
        )
    }

    static func describe(_ counts: SyncRecordCounts) -> String {
        func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }
        return [
            count(counts.items, "item"), count(counts.blobs, "blob"), count(counts.snapshots, "snapshot"),
            count(counts.deletions, "deletion"),
        ].joined(separator: ", ")
    }

    /// The size of the file at `path`, for a progress bar's total.
    static func fileSize(_ path: String) -> Int64? {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value
    }

    /// A summary with the bundle's path, as one flat JSON object.
    struct Report<Summary: Encodable>: Encodable {
        let bundle: String
        let summary: Summary

        private enum Keys: String, CodingKey { case bundle }

        func encode(to encoder: any Encoder) throws {
            try summary.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(bundle, forKey: .bundle)
        }
    }
}
