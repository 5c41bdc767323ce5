import Coffer
import Foundation

/// `coffer push|pull s3://BUCKET/PREFIX`, and the remote side of `coffer init --join`: sync through an
/// S3-compatible object store.
enum RemoteCommands {
    /// Options every remote command takes.
    static let remoteOptions: [OptionSpec] = [
        .option(
            "endpoint",
            value: "URL",
            help: "The object store's URL, for MinIO, Ceph, SeaweedFS... (default: $AWS_ENDPOINT_URL, else AWS S3)."
        ),
        .option("region", value: "REGION", help: "The signing region (default: $AWS_REGION, else us-east-1)."),
        .option("limit-upload", value: "KIB", help: "Send at most KIB KiB/s (averaged over each part)."),
        .option("limit-download", value: "KIB", help: "Receive at most KIB KiB/s (averaged over each range read)."),
        .option(
            "credentials-file",
            value: "FILE",
            help: "Read keys from an AWS credentials file (profile $AWS_PROFILE or default) instead of "
                + "$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY."
        ),
    ]

    static let push = CommandSpec(
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
        options: remoteOptions + [.flag("create-bucket", help: "Create the bucket if it does not exist.")],
        arguments: [ArgumentSpec("REMOTE", help: "s3://BUCKET/PREFIX")],
        examples: [
            "coffer push s3://bucket/group --create-bucket   # the first time",
            "coffer push s3://bucket/group --limit-upload 2048",
        ],
        run: runPush
    )

    static let pull = CommandSpec(
        name: "pull",
        abstract: "Apply the other devices' changes from an S3-compatible object store.",
        discussion: """
            Downloads and imports, in order, every bundle the other devices of the sync group have pushed
            since this vault's last pull. Each bundle is verified whole before anything changes; a damaged
            one is refused (bundles before it stay applied) and the error names its object. Pulling again is
            harmless.
            """,
        options: remoteOptions,
        arguments: [ArgumentSpec("REMOTE", help: "s3://BUCKET/PREFIX")],
        examples: [
            "coffer pull s3://bucket/group",
            "coffer pull s3://bucket/group --endpoint http://127.0.0.1:8333",
        ],
        run: runPull
    )

    static let remoteGroup = CommandSpec(
        name: "remote",
        abstract: "Look after an object store the sync group pushes to.",
        subcommands: [
            CommandSpec(
                name: "compact",
                abstract: "Replace the store's history with a checkpoint of the group's state.",
                discussion: """
                    Pulls and pushes, then uploads a checkpoint (every syncable record, in the current key
                    epoch) and deletes the bundles it holds everything of, and older checkpoints it
                    supersedes: the store then holds about one copy of the live data, and a new device
                    joining downloads the checkpoint and what came after it. Safe while other devices push,
                    pull or compact. The only command that deletes objects: its credentials need
                    s3:DeleteObject, which push and pull do not (see the README for an AWS policy).
                    """,
                options: remoteOptions,
                arguments: [ArgumentSpec("REMOTE", help: "s3://BUCKET/PREFIX")],
                examples: [
                    "coffer remote compact s3://bucket/group   # one checkpoint instead of the history",
                    "coffer remote compact s3://bucket/group --json",
                ],
                run: runCompact
            )
        ],
        examples: [
            "coffer remote compact s3://bucket/group"
        ]
    )

    // MARK: Commands

    static func runCompact(_ invocation: Invocation) throws {
        let remote = try remote(invocation.arguments[0], invocation: invocation)
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let bar = ProgressBar(label: "compact", total: nil, for: invocation)
        let summary = try vault.compact(remote: remote, progress: { bar.update(completed: $0) })
        bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(summary)
            return
        }
        invocation.console.print(
            "Compacted \(summary.remote): checkpoint \(summary.checkpoint) (\(ByteCount.format(summary.checkpointBytes))) "
                + "replaces \(summary.deletedObjects) object\(summary.deletedObjects == 1 ? "" : "s") "
                + "(\(ByteCount.format(summary.deletedBytes))); the store went from "
                + "\(ByteCount.format(summary.storedBytesBefore)) to \(ByteCount.format(summary.storedBytesAfter))."
        )
    }

    static func runPush(_ invocation: Invocation) throws {
        let remote = try remote(invocation.arguments[0], invocation: invocation)
        if invocation.flag("create-bucket") { try remote.createBucketIfMissing() }
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let bar = ProgressBar(label: "push", total: nil, for: invocation)
        let summary = try vault.push(to: remote, progress: { bar.update(completed: $0) })
        bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(summary)
            return
        }
        let alreadyThere =
            summary.export.alreadyInStore > 0
            ? " (\(summary.export.alreadyInStore) record\(summary.export.alreadyInStore == 1 ? "" : "s") pulled from there left out: the store has them)"
            : ""
        guard let object = summary.object else {
            invocation.console.print(
                "Nothing to push to \(summary.remote): no changes since the last push\(alreadyThere)."
            )
            return
        }
        let export = summary.export
        let scope =
            export.isIncremental ? "changes \(export.firstSequence)-\(export.lastSequence)" : "everything syncable"
        invocation.console.print(
            "Pushed \(SyncCommands.describe(export.records)) and \(export.chunks) chunks to \(summary.remote) "
                + "as \(object) (\(ByteCount.format(export.bytes)), \(scope))\(alreadyThere)."
        )
        if summary.resumedParts > 0, !invocation.flag("quiet") {
            invocation.console.message(
                "Resumed an interrupted push: \(summary.resumedParts) part\(summary.resumedParts == 1 ? "" : "s") already sent were kept."
            )
        }
        if export.resentFromRevoked > 0, !invocation.flag("quiet") {
            invocation.console.message(
                "Sent \(export.resentFromRevoked) record(s) again that came from revoked devices, whose own bundles the group refuses."
            )
        }
    }

    static func runPull(_ invocation: Invocation) throws {
        let remote = try remote(invocation.arguments[0], invocation: invocation)
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let bar = ProgressBar(label: "pull", total: nil, for: invocation)
        let summary = try vault.pull(from: remote, progress: { bar.update(completed: $0) })
        bar.finish()
        try report(summary, invocation: invocation)
    }

    // MARK: Shared with init --join

    /// Prints what a pull did, as text or JSON.
    static func report(_ summary: PullSummary, invocation: Invocation) throws {
        // What the pulled bundles could not apply now, together: held records are a running total.
        var combined = ImportSummary(sourceDevice: summary.bundles.last?.imported.sourceDevice ?? UUID())
        combined.held = summary.bundles.last?.imported.held ?? 0
        for bundle in summary.bundles {
            combined.refusedFutureRecords += bundle.imported.refusedFutureRecords
            combined.devicesAhead.merge(bundle.imported.devicesAhead) { max($0, $1) }
            combined.renamedDeviceBoundBlobs += bundle.imported.renamedDeviceBoundBlobs
        }
        if invocation.flag("json") {
            try invocation.console.printJSON(summary)
            try SyncCommands.reportIncomplete(combined, invocation, quietly: true)
            return
        }
        let devices = "\(summary.devices) other device\(summary.devices == 1 ? "" : "s")"
        if !invocation.flag("quiet") {
            for device in summary.revokedDevices {
                invocation.console.message(
                    "note: left device \(device.uuidString.lowercased())'s objects alone: it was revoked from the group"
                )
            }
        }
        if summary.bundles.isEmpty && summary.checkpoints.isEmpty {
            invocation.console.print("Nothing new at \(summary.remote) (\(devices)).")
            return
        }
        let checkpoints =
            summary.checkpoints.isEmpty
            ? "" : "\(summary.checkpoints.count) checkpoint\(summary.checkpoints.count == 1 ? "" : "s") and "
        let senders = Set(summary.bundles.map(\.imported.sourceDevice))
        let from =
            senders.isEmpty || senders.count == summary.devices
            ? devices : "\(senders.count) of the \(devices)"
        invocation.console.print(
            "Pulled \(checkpoints)\(summary.bundles.count) bundle\(summary.bundles.count == 1 ? "" : "s") "
                + "(\(ByteCount.format(summary.bytes))) from \(from) at \(summary.remote): applied "
                + "\(SyncCommands.describe(summary.applied))."
        )
        try SyncCommands.reportIncomplete(combined, invocation)
    }

    /// The remote a command names, with the invocation's endpoint, region and credentials.
    static func remote(_ url: String, invocation: Invocation) throws -> S3Remote {
        let location = try S3Location(url)
        let environment = invocation.environment
        let credentials =
            try invocation.value("credentials-file").map { try S3Credentials.load(file: URL(fileURLWithPath: $0)) }
            ?? S3Credentials.fromEnvironment(environment)
        var endpoint: URL?
        if let text = invocation.value("endpoint") ?? environment["AWS_ENDPOINT_URL"], !text.isEmpty {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw UsageError(
                    message:
                        "'\(text)' is not an endpoint URL; give one like http://127.0.0.1:8333 or https://minio.example.com",
                    commandPath: invocation.commandPath
                )
            }
            endpoint = url
        }
        let region = invocation.value("region") ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"]
        var remote = S3Remote(location, credentials: credentials, endpoint: endpoint, region: region)
        remote.uploadLimit = try limit("limit-upload", invocation)
        remote.downloadLimit = try limit("limit-download", invocation)
        return remote
    }

    /// A `--limit-…` option in KiB/s, as bytes per second.
    private static func limit(_ option: String, _ invocation: Invocation) throws -> Int? {
        guard let text = invocation.value(option) else { return nil }
        guard let kib = Int(text), kib > 0, kib <= Int.max / 1024 else {
            throw UsageError(
                message: "--\(option) takes a whole number of KiB per second, like 512; '\(text)' is not one",
                commandPath: invocation.commandPath
            )
        }
        return kib * 1024
    }
}
