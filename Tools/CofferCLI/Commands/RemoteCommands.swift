import Coffer
import Foundation

// `coffer push|pull s3://BUCKET/PREFIX` and `coffer remote compact`: sync through an S3-compatible
// object store.

/// `coffer push REMOTE`: uploads this vault's changes.
struct PushCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "push",
        abstract: "Upload this vault's changes to an S3-compatible object store.",
        discussion: """
            Uploads, as one encrypted bundle object, what changed since this vault's last push to the
            remote (everything syncable the first time), then this device's small head object. Device-bound
            records never leave this machine, and records this vault pulled from the same remote are not sent
            back. A push that stops early leaves nothing a pull would see; the next push completes it. A push
            never deletes, so its credentials need not allow s3:DeleteObject. Other machines run 'coffer pull' to receive it, or 'coffer init --join'
            with the same s3:// location to start a new vault from it.
            """,
        examples: [
            "coffer push s3://bucket/group --create-bucket   # the first time",
            "coffer push s3://bucket/group --limit-upload 2048",
        ]
    )

    var target = RemoteTarget()

    @Flag(help: "Create the bucket if it does not exist.")
    var createBucket: Bool

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let store = try target.store(context)
        if createBucket { try store.createBucketIfMissing() }
        let bar = context.progressBar("push", total: nil)
        let summary = try vault.push(to: store, progress: bar.report)
        bar.finish()
        let export = summary.export
        let alreadyThere =
            export.alreadyInStore > 0
            ? " (\(export.alreadyInStore) record\(export.alreadyInStore == 1 ? "" : "s") pulled from there left out: the store has them)"
            : ""
        try context.output.result(summary) {
            if export.groupLogFull {
                return summary.object.map {
                    "Pushed the sync group's membership log to \(summary.remote) as \($0), and no record."
                }
                    ?? "Pushed nothing to \(summary.remote): the store has this device's membership log already."
            }
            guard let object = summary.object else {
                return "Nothing to push to \(summary.remote): no changes since the last push\(alreadyThere)."
            }
            let scope =
                export.isIncremental ? "changes \(export.firstSequence)-\(export.lastSequence)" : "everything syncable"
            return
                "Pushed \(ImportCommand.describe(export.records)) and \(counted(export.chunks, "chunk")) to \(summary.remote) "
                + "as \(object) (\(ByteCount.format(export.bytes)), \(scope))\(alreadyThere)."
        }
        for notice in summary.notices { context.output.note(notice) }
        if export.groupLogFull {
            throw CLIFailure(
                "no record was pushed: the sync group is frozen (its membership log is full, or a member's log would overflow it). \(ExportCommand.frozen)"
            )
        }
        guard summary.object != nil else { return }
        if summary.resumedParts > 0 {
            context.output.note(
                "Resumed an interrupted push: \(summary.resumedParts) part\(summary.resumedParts == 1 ? "" : "s") already sent were kept."
            )
        }
        if export.resentFromRevoked > 0 {
            context.output.note(
                "Sent \(counted(export.resentFromRevoked, "record")) again that came from devices revoked since, whose bundles the group refuses, or from objects signed with keys a device has replaced since (a rekey), which the group skips."
            )
        }
    }
}

/// `coffer pull REMOTE`: applies the other devices' changes.
struct PullCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "pull",
        abstract: "Apply the other devices' changes from an S3-compatible object store.",
        discussion: """
            Downloads and imports, in order, every bundle the other devices of the sync group have pushed
            since this vault's last pull. Each bundle is verified whole before anything changes. A damaged
            one, or one sealed in a key epoch this vault does not hold yet, is passed over with a note naming
            it, and its device's later changes wait (the other devices' are applied; exit status 3). Pulling
            again is harmless.
            """,
        examples: [
            "coffer pull s3://bucket/group",
            "coffer pull s3://bucket/group --endpoint http://127.0.0.1:8333",
        ],
        exitStatuses: ExitStatus.standard(adding: .incompleteImport)
    )

    var target = RemoteTarget()

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let store = try target.store(context)
        // Who is in and who is out, and how long the log is, to say what a pull changed.
        let before = try? vault.members()
        let entriesBefore = try? vault.membershipLogEntryCount()
        let bar = context.progressBar("pull", total: nil)
        let summary = try vault.pull(from: store, progress: bar.report)
        bar.finish()
        let changes = before.flatMap { before in (try? vault.members()).map { MembershipChanges(from: before, to: $0) }
        }
        let added = (try? vault.membershipLogEntryCount()).flatMap { after in entriesBefore.map { after - $0 } } ?? 0
        try context.output.result(summary) {
            // "Nothing new" would be untrue when the logs pulled changed the group, or its log.
            guard summary.bundles.isEmpty, summary.checkpoints.isEmpty else { return Self.describe(summary) }
            if let changes, !changes.isEmpty {
                return "No records from \(summary.remote); the membership logs pulled changed the sync group."
            }
            if added > 0 {
                return
                    "No records from \(summary.remote); the membership logs pulled added \(added) entr\(added == 1 ? "y" : "ies") to this device's log, changing no device's membership."
            }
            return Self.describe(summary)
        }
        if let changes { ImportCommand.note(changes, context) }
        if context.output.mode != .json, (try? vault.syncGroupIsFrozen()) == true {
            context.output.warning(
                "warning: the sync group is frozen (its membership log is full, or a member's log would overflow it). \(ExportCommand.frozen)"
            )
        }
        try Self.finish(summary, context)
    }

    // MARK: Shared with init --join

    /// The line that says what a pull did.
    static func describe(_ summary: PullSummary) -> String {
        let devices = "\(summary.devices) other device\(summary.devices == 1 ? "" : "s")"
        if summary.bundles.isEmpty && summary.checkpoints.isEmpty {
            return "Nothing new at \(summary.remote) (\(devices))."
        }
        let checkpoints =
            summary.checkpoints.isEmpty
            ? "" : "\(summary.checkpoints.count) checkpoint\(summary.checkpoints.count == 1 ? "" : "s") and "
        let senders = Set(summary.bundles.map(\.imported.sourceDevice))
        // Senders may outnumber the other devices with heads: another copy of this vault, or the
        // device it was before it re-enrolled, writes under an id that is not another device's.
        let from =
            senders.isEmpty || senders.count == summary.devices
            ? devices
            : senders.count > summary.devices ? "\(senders.count) devices" : "\(senders.count) of the \(devices)"
        return "Pulled \(checkpoints)\(summary.bundles.count) bundle\(summary.bundles.count == 1 ? "" : "s") "
            + "(\(ByteCount.format(summary.bytes))) from \(from) at \(summary.remote): applied "
            + "\(ImportCommand.describe(summary.applied))."
    }

    /// Notes revoked devices left alone, then what the pulled bundles could not apply now, together
    /// (held records are a running total), as an import does.
    static func finish(_ summary: PullSummary, _ context: CommandContext) throws {
        for notice in summary.notices { context.output.note(notice) }
        for device in summary.revokedDevices {
            context.output.note(
                "note: left device \(device.uuidString.lowercased())'s objects alone: it was revoked from the group"
                    + (summary.revokedDevicesNotApplied.contains(device)
                        ? "; its bundles there hold changes this vault never applied (made before the revocation but not pulled in time, or refused then for the device's clock), and no member applies them now"
                        : "")
            )
        }
        var combined = ImportSummary(sourceDevice: summary.bundles.last?.imported.sourceDevice ?? UUID())
        combined.held = summary.bundles.last?.imported.held ?? 0
        combined.heldBySender = summary.bundles.last?.imported.heldBySender ?? []
        combined.heldFromFormerMembers = summary.bundles.last?.imported.heldFromFormerMembers ?? 0
        combined.refusedFutureRecords = summary.refusedFutureRecords
        combined.devicesAhead = summary.devicesAhead
        for bundle in summary.bundles {
            combined.refusedFutureRecords += bundle.imported.refusedFutureRecords
            combined.droppedForgedRecords += bundle.imported.droppedForgedRecords
            combined.devicesAhead.merge(bundle.imported.devicesAhead) { max($0, $1) }
            combined.renamedDeviceBoundBlobs += bundle.imported.renamedDeviceBoundBlobs
        }
        guard summary.isIncomplete else { return try ImportCommand.finish(combined, context) }
        // Changes left in the store for a later pull make the pull incomplete too (exit 3).
        var waiting: [String] = []
        if !summary.waitingDevices.isEmpty {
            let devices = summary.waitingDevices.map { $0.uuidString.lowercased() }.sorted()
            waiting.append("changes of device\(devices.count == 1 ? "" : "s") \(devices.joined(separator: ", ")) wait")
        }
        if !summary.waitingCheckpoints.isEmpty {
            waiting.append(
                "\(summary.waitingCheckpoints.count) checkpoint\(summary.waitingCheckpoints.count == 1 ? "" : "s") could not be used yet"
            )
        }
        let reason =
            "the pull is incomplete: \(waiting.joined(separator: ", and ")) (the notes above say why); a later pull applies them"
        do {
            try ImportCommand.finish(combined, context)
        } catch let incomplete as IncompleteResult {
            throw IncompleteResult("\(reason); and \(incomplete.description)")
        }
        throw IncompleteResult(reason)
    }
}

/// `coffer remote compact`: looking after a store the group pushes to.
struct RemoteCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "remote",
        abstract: "Look after an object store the sync group pushes to.",
        examples: [
            "coffer remote compact s3://bucket/group"
        ],
        subcommands: [RemoteCompactCommand.self]
    )
}

/// `coffer remote compact REMOTE`: replaces the store's history with a checkpoint.
struct RemoteCompactCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "compact",
        abstract: "Replace the store's history with a checkpoint of the group's state.",
        discussion: """
            Pulls and pushes, then uploads a checkpoint (every syncable record, in the current key
            epoch) and deletes the bundles it holds everything of, and older checkpoints it
            supersedes: the store then holds about one copy of the live data, and a new device
            joining downloads the checkpoint and what came after it. Safe while other devices push,
            pull or compact. The only command that deletes objects: its credentials need
            s3:DeleteObject, which push and pull do not (docs/SYNC.md has an AWS policy).
            """,
        examples: [
            "coffer remote compact s3://bucket/group   # one checkpoint instead of the history",
            "coffer remote compact s3://bucket/group --json",
        ]
    )

    var target = RemoteTarget()

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let store = try target.store(context)
        let bar = context.progressBar("compact", total: nil)
        let summary = try vault.compact(remote: store, progress: bar.report)
        bar.finish()
        try context.output.result(summary) {
            "Compacted \(summary.remote): checkpoint \(summary.checkpoint) (\(ByteCount.format(summary.checkpointBytes))) "
                + "replaces \(summary.deletedObjects) object\(summary.deletedObjects == 1 ? "" : "s") "
                + "(\(ByteCount.format(summary.deletedBytes))); the store went from "
                + "\(ByteCount.format(summary.storedBytesBefore)) to \(ByteCount.format(summary.storedBytesAfter))."
        }
        for notice in summary.notices { context.output.note(notice) }
    }
}

/// The store a remote command works on: `s3://BUCKET/PREFIX` and how to reach it.
struct RemoteTarget: ArgumentGroup {
    var options = RemoteOptions()

    @Argument("REMOTE", help: "s3://BUCKET/PREFIX")
    var remote: String

    func validate() throws {
        // Before the passphrase is asked for.
        _ = try S3Location(remote)
    }

    /// The store, with the options and the environment's defaults.
    func store(_ context: CommandContext) throws -> S3Remote {
        try options.remote(remote, context)
    }
}
