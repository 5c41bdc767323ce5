import Coffer
import Foundation

/// `coffer init`: creates a vault.
enum InitCommand {
    static let spec = CommandSpec(
        name: "init",
        abstract: "Create a new vault.",
        discussion: """
            Creates an empty vault in the --vault directory (which must be absent or empty), protected by
            the passphrase. Afterwards, run 'coffer key export' and keep the recovery key offline: it is
            the only way in if the passphrase is lost.

            With --join BUNDLE the new vault joins the sync group of the vault that exported the bundle
            and imports it: give that vault's passphrase, which then protects this vault too. The new
            vault has its own device key, device id and recovery key. With --join s3://BUCKET/PREFIX it
            joins the group whose vaults push there and pulls everything they pushed (give the passphrase
            of one of them; --endpoint, --region and --credentials-file as for 'coffer pull').

            With --request-join FILE the new vault asks to join a group by approval instead: it writes a
            join request (its device id, name and public keys; no secret) to FILE ('-' for standard
            output) and shows its fingerprint. Give the file to a member, who runs 'coffer device approve
            FILE'; then import any bundle that member exports afterwards (or pull from the group's remote)
            and this vault joins. Until then it holds device-bound records only. --name sets the name the
            device joins with (default: the host name).
            """,
        options: [
            .option(
                "kdf",
                value: "COST",
                help: "Passphrase key-derivation cost: standard (default, ~0.15 s) or strong (~0.6 s)."
            ),
            .option(
                "join",
                value: "BUNDLE|s3://BUCKET/PREFIX",
                help: "Join the sync group of a bundle's vault, or of the vaults pushing to an S3 location."
            ),
            .option(
                "request-join",
                value: "FILE",
                help: "Ask to join a sync group by approval: write a join request to FILE (- for stdout)."
            ),
            .option("name", value: "NAME", help: "The device's name in its sync group (default: the host name)."),
        ] + RemoteCommands.remoteOptions,
        examples: [
            "coffer init                                  # asks for a passphrase twice",
            "coffer init --join laptop.bundle             # another vault's sync group, from a bundle",
            "coffer init --join s3://bucket/group         # or from an object store",
        ],
        run: run
    )

    static func run(_ invocation: Invocation) throws {
        var configuration = Vault.Configuration()
        switch invocation.value("kdf") ?? "standard" {
        case "standard": configuration.kdf = .standard
        case "strong": configuration.kdf = .strong
        case let other:
            throw UsageError(
                message: "unknown --kdf '\(other)'; use standard or strong",
                commandPath: invocation.commandPath
            )
        }
        let directory = try CofferCommand.vaultDirectory(invocation)
        if let output = invocation.value("request-join") {
            guard invocation.value("join") == nil else {
                throw UsageError(
                    message:
                        "--join and --request-join exclude each other: join with the passphrase, or ask for approval",
                    commandPath: invocation.commandPath
                )
            }
            try requestJoin(output, at: directory, configuration: configuration, invocation: invocation)
            return
        }
        if let source = invocation.value("join") {
            if source.hasPrefix("s3://") {
                try joinRemote(source, at: directory, configuration: configuration, invocation: invocation)
            } else {
                try join(source, at: directory, configuration: configuration, invocation: invocation)
            }
            return
        }
        let passphrase = try SecretSource.passphrase.passphrase(invocation, confirm: true)
        let vault = try Vault.create(at: directory, passphrase: passphrase, configuration: configuration)
        defer { vault.close() }
        let summary = Summary(vault, at: directory)
        if invocation.flag("json") {
            try invocation.console.printJSON(summary)
        } else {
            invocation.console.print("Created vault \(vault.id.uuidString) at \(directory.path)")
            if !invocation.flag("quiet") {
                invocation.console.message("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
            }
        }
    }

    /// `init --request-join FILE`: a new vault that asks to join a group by approval.
    static func requestJoin(
        _ output: String,
        at directory: URL,
        configuration: Vault.Configuration,
        invocation: Invocation
    ) throws {
        if output != "-" {
            let parent = URL(fileURLWithPath: output).deletingLastPathComponent().path
            guard FileManager.default.isWritableFile(atPath: parent.isEmpty ? "." : parent) else {
                throw CLIFailure("cannot write the join request to \(output): its directory is missing or not writable")
            }
        }
        let passphrase = try SecretSource.passphrase.passphrase(invocation, confirm: true)
        let (vault, request) = try Vault.requestJoin(
            at: directory,
            passphrase: passphrase,
            name: invocation.value("name"),
            configuration: configuration
        )
        defer { vault.close() }
        if output == "-" {
            invocation.console.print(request.text)
        } else {
            do {
                try Data(request.text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                throw CLIFailure(
                    "the vault was created at \(directory.path), but the join request could not be written to \(output): \(error.localizedDescription); 'coffer device show' gives its id and fingerprint"
                )
            }
        }
        if invocation.flag("json") {
            try invocation.console.printJSON(Summary(vault, at: directory))
            return
        }
        let target = output == "-" ? "the request above" : output
        invocation.console.message(
            "Created vault \(vault.id.uuidString) at \(directory.path), waiting to join a sync group.\n"
                + "Fingerprint: \(request.identity.fingerprint)\n"
                + "Next: give \(target) to a member, who runs 'coffer device approve' and compares this "
                + "fingerprint; then import a bundle that member exports (or pull from the group's remote)."
        )
    }

    /// `init --join BUNDLE`: a new vault in the bundle's sync group, with the bundle imported.
    static func join(
        _ bundle: String,
        at directory: URL,
        configuration: Vault.Configuration,
        invocation: Invocation
    ) throws {
        let passphrase = try SecretSource.bundlePassphrase.passphrase(invocation)
        let (bar, progress) = SyncCommands.joinProgress(bundle, invocation: invocation)
        let (vault, summary) = try Vault.join(
            bundle: URL(fileURLWithPath: bundle),
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            progress: progress
        )
        defer { vault.close() }
        bar.finish()
        if invocation.flag("json") {
            try invocation.console.printJSON(
                JoinSummary(
                    vault: Summary(vault, at: directory),
                    imported: summary
                )
            )
            return
        }
        invocation.console.print(
            "Created vault \(vault.id.uuidString) at \(directory.path) in sync group "
                + vault.syncGroupID.uuidString.lowercased()
        )
        try SyncCommands.report(summary, path: bundle, invocation: invocation)
        if !invocation.flag("quiet") {
            invocation.console.message("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
        }
    }

    /// `init --join s3://...`: a new vault in the group pushing there, with everything pulled.
    static func joinRemote(
        _ url: String,
        at directory: URL,
        configuration: Vault.Configuration,
        invocation: Invocation
    ) throws {
        let remote = try RemoteCommands.remote(url, invocation: invocation)
        let passphrase = try SecretSource.groupPassphrase.passphrase(invocation)
        let bar = ProgressBar(label: "pull", total: nil, for: invocation)
        let (vault, summary) = try Vault.join(
            remote: remote,
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            progress: { bar.update(completed: $0) }
        )
        defer { vault.close() }
        bar.finish()
        let created = Summary(vault, at: directory)
        if invocation.flag("json") {
            try invocation.console.printJSON(RemoteJoinSummary(vault: created, pulled: summary))
            return
        }
        invocation.console.print(
            "Created vault \(vault.id.uuidString) at \(directory.path) in sync group "
                + vault.syncGroupID.uuidString.lowercased()
        )
        try RemoteCommands.report(summary, invocation: invocation)
        if !invocation.flag("quiet") {
            invocation.console.message("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
        }
    }

    struct RemoteJoinSummary: Encodable {
        let vault: Summary
        let pulled: PullSummary
    }

    struct JoinSummary: Encodable {
        let vault: Summary
        let imported: ImportSummary
    }

    struct Summary: Encodable {
        let path: String
        let vaultID: UUID
        let deviceID: UUID
        let syncGroupID: UUID
        let formatVersion: Int

        init(_ vault: Vault, at directory: URL) {
            path = directory.path
            vaultID = vault.id
            deviceID = vault.deviceID
            syncGroupID = vault.syncGroupID
            formatVersion = vault.formatVersion
        }
    }
}
