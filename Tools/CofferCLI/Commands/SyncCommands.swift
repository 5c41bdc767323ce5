import Coffer
import Foundation

/// `coffer export|import`, and the bundle side of `coffer init --join`: moving syncable records
/// between the vaults of a sync group with bundle files.
enum SyncCommands {
    static let export = CommandSpec(
        name: "export",
        abstract: "Write the vault's syncable records to a bundle file.",
        discussion: """
            Only syncable records are written (items, blobs and snapshots marked syncable, with their
            deletions); device-bound ones never leave this machine. Without --peer the bundle holds
            everything syncable; with --peer NAME it holds only what changed since the last export to NAME
            (everything, the first time). The bundle is encrypted under the sync group's key and can be
            carried on any medium; 'coffer import' or 'coffer init --join' reads it on the other machine.
            """,
        options: [
            .option("out", value: "FILE", help: "The bundle file to write (required; replaced if it exists)."),
            .option("peer", value: "NAME", help: "Export only what NAME has not been sent yet."),
        ],
        examples: [
            "coffer export --out /media/usb/laptop.bundle            # everything syncable",
            "coffer export --out /media/usb/2.bundle --peer desktop   # only what desktop lacks",
        ],
        run: runExport
    )

    static let importBundle = CommandSpec(
        name: "import",
        abstract: "Apply a bundle exported by a vault of this sync group.",
        discussion: """
            The whole bundle is verified before anything changes; a damaged, truncated or foreign bundle
            is refused and the vault stays as it was. Each record replaces this vault's only if it is newer
            (last writer wins, deletions included), so importing in any order, or twice, is safe.
            """,
        arguments: [ArgumentSpec("FILE", help: "The bundle to import.")],
        examples: [
            "coffer import /media/usb/laptop.bundle",
            "coffer import 2.bundle --json",
        ],
        run: runImport
    )

    // MARK: Commands

    static func runExport(_ invocation: Invocation) throws {
        guard let path = invocation.value("out"), !path.isEmpty else {
            throw UsageError(
                message: "export needs --out FILE: where to write the bundle",
                commandPath: invocation.commandPath
            )
        }
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let bar = ProgressBar(label: "export", total: nil, for: invocation)
        let summary = try vault.export(
            to: URL(fileURLWithPath: path),
            peer: invocation.value("peer"),
            progress: { bar.update(completed: $0) }
        )
        bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(Report(bundle: path, summary: summary))
            return
        }
        if summary.isIncremental, summary.records.total == 0, summary.chunks == 0 {
            invocation.console.print(
                "Nothing new for peer '\(summary.peer ?? "")' since change \(summary.firstSequence - 1): wrote an empty bundle to \(path) (importing it changes nothing)."
            )
            return
        }
        let scope =
            summary.isIncremental
            ? (summary.firstSequence == summary.lastSequence
                ? "change \(summary.lastSequence)" : "changes \(summary.firstSequence) to \(summary.lastSequence)")
                + " for peer '\(summary.peer ?? "")'"
            : "everything syncable"
        invocation.console.print(
            "Exported \(describe(summary.records)) and \(summary.chunks) chunks to \(path) "
                + "(\(ByteCount.format(summary.bytes)), \(scope))."
        )
        if let left = summary.deviceBoundLeftBehind, !invocation.flag("quiet") {
            invocation.console.message("\(left) device-bound record\(left == 1 ? "" : "s") stayed on this machine.")
        }
    }

    static func runImport(_ invocation: Invocation) throws {
        let path = invocation.arguments[0]
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let summary = try importBundle(into: vault, path: path, invocation: invocation)
        try report(summary, path: path, invocation: invocation)
    }

    // MARK: Shared with init --join

    /// Imports the bundle at `path` with a progress bar.
    static func importBundle(into vault: Vault, path: String, invocation: Invocation) throws -> ImportSummary {
        let bar = ProgressBar(label: "import", total: fileSize(path), for: invocation)
        let summary = try vault.import(from: URL(fileURLWithPath: path), progress: { bar.update(completed: $0) })
        bar.finish()
        return summary
    }

    /// The bar for joining: the same as an import's.
    static func joinProgress(_ path: String, invocation: Invocation) -> (ProgressBar, SyncProgress) {
        let bar = ProgressBar(label: "import", total: fileSize(path), for: invocation)
        return (bar, { bar.update(completed: $0) })
    }

    /// Prints what an import did, as text or JSON.
    static func report(_ summary: ImportSummary, path: String, invocation: Invocation) throws {
        if invocation.flag("json") {
            try invocation.console.printJSON(Report(bundle: path, summary: summary))
            try reportIncomplete(summary, invocation, quietly: true)
            return
        }
        invocation.console.print(
            "Imported \(path) from device \(summary.sourceDevice.uuidString.lowercased()): applied "
                + "\(describe(summary.applied)); \(summary.skipped) already here or older; "
                + "\(summary.conflicts) conflict\(summary.conflicts == 1 ? "" : "s") decided by last writer wins; "
                + "\(summary.newChunks) of \(summary.chunks) chunks new."
        )
        try reportIncomplete(summary, invocation)
    }

    /// Says what an import could not apply now, and ends the command with exit 3 when something
    /// waits (held records, asked for in this vault's next bundles) or was refused (a device whose
    /// clock is ahead); notes device-bound blobs moved aside to make room for synced ones.
    static func reportIncomplete(_ summary: ImportSummary, _ invocation: Invocation, quietly: Bool = false) throws {
        if !quietly {
            if summary.joinedGroup {
                invocation.console.message("Joined sync group: a member approved this device.")
            } else if summary.membershipChanged {
                invocation.console.message("note: the sync group's membership changed; see coffer devices")
            }
            for name in summary.renamedDeviceBoundBlobs {
                invocation.console.message(
                    "note: a synced blob took this vault's device-bound blob's name; the device-bound one is kept as '\(PrintableText.escaping(name))'"
                )
            }
            if summary.held > 0 {
                invocation.console.message(
                    "warning: \(summary.held) record(s) wait for data this vault lacks (deleted here, or never received); this vault's next export or push asks for it, and the import that brings it applies them"
                )
            }
            let dates = ISO8601DateFormatter()
            for (device, date) in summary.devicesAhead.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
                invocation.console.message(
                    "warning: records from device \(device.uuidString.lowercased()) carry clock stamps up to \(dates.string(from: date)), ahead of this machine's clock by more than the allowed skew; they were refused: fix that device's clock (its next changes will travel), or allow more with COFFER_MAX_CLOCK_SKEW=SECONDS"
                )
            }
        }
        guard summary.isIncomplete else { return }
        throw IncompleteResult(
            "the import is incomplete: \(summary.held) record(s) held back, \(summary.refusedFutureRecords) refused for their clock"
        )
    }

    static func describe(_ counts: SyncRecordCounts) -> String {
        func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }
        return [
            count(counts.items, "item"), count(counts.blobs, "blob"), count(counts.snapshots, "snapshot"),
            count(counts.deletions, "deletion"),
        ].joined(separator: ", ")
    }

    private static func fileSize(_ path: String) -> Int64? {
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
