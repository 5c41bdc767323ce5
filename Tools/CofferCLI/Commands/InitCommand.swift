import Coffer
import Foundation

/// `coffer init`: creates a vault, alone or joining a sync group.
struct InitCommand: ParsableCommand {
    /// The environment variable that makes `init` derive a new vault's key with scrypt N = 2^10
    /// (``KDFParameters/insecureFastForTesting``) instead of the standard cost: tests only.
    static let weakenKDFForTests = "COFFER_TESTONLY_WEAKEN_KDF"

    static let configuration = CommandConfiguration(
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
            of one of them; --endpoint, --region and --credentials-file as for 'coffer pull'). With --thin
            as well, the new vault keeps the records, their chunk lists and snapshot trees, and leaves the
            content in the store: it is offloaded there from the start, as 'coffer offload' leaves a vault,
            reads fetch content on demand and keep at most --keep of it here (default none).

            With --request-join FILE --group BUNDLE the new vault asks to join, by approval, the group
            BUNDLE (any member's export) belongs to: it writes a join request (its device id, name and
            public keys, the group's id and fingerprint; no secret) to FILE ('-' for standard output) and
            shows both fingerprints. Give the file to a member, who runs 'coffer device approve FILE' and
            compares them; only a member of that group can approve it. Then import any bundle that member
            exports afterwards (or pull from the group's remote) and this vault joins that group, and no
            other. Until then it holds device-bound records only. --name sets the name the device goes by
            in its group's log, listings and 'device revoke NAME', whether it founds the group or joins
            one (default: the host name).
            """,
        examples: [
            "coffer init                                  # asks for a passphrase twice",
            "coffer init --join laptop.bundle             # another vault's sync group, from a bundle",
            "coffer init --join s3://bucket/group         # or from an object store",
            "coffer init --join s3://bucket/group --thin --keep 2G   # content stays in the store",
        ],
        exitStatuses: ExitStatus.standard(adding: .incompleteImport)
    )

    /// How much work deriving the key from the passphrase takes.
    enum KDFCost: String, CaseIterable, ArgumentValue {
        case standard, strong
    }

    @Option(value: "COST", help: "Passphrase key-derivation cost: standard (default, ~0.15 s) or strong (~0.6 s).")
    var kdf = KDFCost.standard

    @Option(
        value: "BUNDLE|s3://BUCKET/PREFIX",
        help: "Join the sync group of a bundle's vault, or of the vaults pushing to an S3 location."
    )
    var join: String?

    @Flag(
        help: "With --join s3://...: keep the content in the store, not here (a thin vault, offloaded from the start)."
    )
    var thin: Bool

    @Option(value: "SIZE", help: "With --thin: the most content to keep here (default none), like 500M or 2G.")
    var keep: ByteSize?

    @Option(value: "FILE", help: "Ask to join a sync group by approval: write a join request to FILE (- for stdout).")
    var requestJoin: String?

    @Option(value: "BUNDLE", help: "With --request-join: a bundle of the group to ask to join (names the group).")
    var group: String?

    @Option(value: "NAME", help: "The device's name in its sync group (default: the host name).")
    var name: String?

    @Flag(
        help: "Let write-only clients add backups with no passphrase ('coffer write-only enable' later does the same)."
    )
    var allowWriteOnly: Bool

    var remote = RemoteOptions()

    func validate() throws {
        if join != nil, requestJoin != nil {
            throw ValidationError(
                "--join and --request-join exclude each other: join with the passphrase, or ask for approval"
            )
        }
        if requestJoin != nil, group == nil {
            throw ValidationError(
                "--request-join needs --group BUNDLE: a bundle of the group to join (any member's 'coffer export'), so that only that group can approve the request"
            )
        }
        if requestJoin == nil, group != nil {
            throw ValidationError("--group names the group a --request-join asks to join; give --request-join FILE too")
        }
        if let group { try InputFile.checkReadable(group) }
        if thin, join?.hasPrefix("s3://") != true {
            throw ValidationError(
                "--thin joins from an object store, where the content stays: give --join s3://BUCKET/PREFIX (a vault joined from a bundle holds everything; 'coffer offload' later moves its content to a store)"
            )
        }
        if keep != nil, !thin {
            throw ValidationError("--keep sets how much content a thin vault keeps here; give --thin too")
        }
    }

    func run(_ context: CommandContext) throws {
        var configuration = Vault.Configuration()
        configuration.kdf = kdf == .strong ? .strong : .standard
        // Tests only (as BorgBackup's BORG_TESTONLY_WEAKEN_KDF): thousands of end-to-end runs each
        // derive the passphrase's key; an explicit --kdf strong is kept.
        if kdf == .standard, context.environment[Self.weakenKDFForTests] == "1" {
            configuration.kdf = .insecureFastForTesting
        }
        configuration.deviceName = name
        let directory = try context.vaultDirectory()
        if let output = requestJoin {
            return try self.requestJoin(output, at: directory, configuration: configuration, context)
        }
        if let source = join {
            if source.hasPrefix("s3://") {
                return try joinRemote(source, at: directory, configuration: configuration, context)
            }
            return try joinBundle(source, at: directory, configuration: configuration, context)
        }
        let passphrase = try context.passphrase(confirm: true)
        let vault = try Vault.create(at: directory, passphrase: passphrase, configuration: configuration)
        defer { vault.close() }
        let writeOnly = try allowingWriteOnly(vault)
        try context.output.result(Summary(vault, at: directory)) {
            "Created vault \(vault.id.uuidString.lowercased()) at \(directory.path)" + writeOnly
        }
        context.output.note("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
    }

    /// Allows write-only clients in the new `vault` when asked (`--allow-write-only`, with any way of
    /// making it); returns the line that says so, or nothing.
    private func allowingWriteOnly(_ vault: Vault) throws -> String {
        guard allowWriteOnly else { return "" }
        try vault.allowWriteOnlyClients(true)
        return "\nWrite-only clients allowed; write key \((try? vault.writeKeyFingerprint) ?? "unknown")"
    }

    /// `init --request-join FILE`: a new vault that asks to join a group by approval.
    private func requestJoin(
        _ output: String,
        at directory: URL,
        configuration: Vault.Configuration,
        _ context: CommandContext
    ) throws {
        if output != "-" {
            let parent = URL(fileURLWithPath: output).deletingLastPathComponent().path
            guard FileManager.default.isWritableFile(atPath: parent.isEmpty ? "." : parent) else {
                throw CLIFailure("cannot write the join request to \(output): its directory is missing or not writable")
            }
        }
        let reference = try GroupReference(bundle: URL(fileURLWithPath: group ?? ""))
        let passphrase = try context.passphrase(confirm: true)
        let (vault, request) = try Vault.requestJoin(
            at: directory,
            passphrase: passphrase,
            name: name,
            group: reference,
            configuration: configuration
        )
        defer { vault.close() }
        let writeOnly = try allowingWriteOnly(vault)
        if output == "-" {
            context.console.print(request.text)
        } else {
            do {
                try Data(request.text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                throw CLIFailure(
                    "the vault was created at \(directory.path), but the join request could not be written to \(output): \(error.localizedDescription); 'coffer device show' gives its id and fingerprint"
                )
            }
        }
        let target = output == "-" ? "the request above" : output
        try context.output.status(Summary(vault, at: directory)) {
            "Created vault \(vault.id.uuidString.lowercased()) at \(directory.path), waiting to join sync group "
                + "\(reference.id.uuidString.lowercased()).\n"
                + "Fingerprint: \(request.identity.fingerprint)\n"
                + "Group fingerprint: \(reference.fingerprint)\n"
                + "Next: give \(target) to a member, who runs 'coffer device approve' and compares both "
                + "fingerprints; then import a bundle that member exports (or pull from the group's remote)."
                + writeOnly
        }
    }

    /// `init --join BUNDLE`: a new vault in the bundle's sync group, with the bundle imported.
    private func joinBundle(
        _ bundle: String,
        at directory: URL,
        configuration: Vault.Configuration,
        _ context: CommandContext
    ) throws {
        let passphrase = try context.passphrase(.bundlePassphrase)
        let bar = context.progressBar("import", total: ImportCommand.fileSize(bundle))
        let (vault, summary) = try Vault.join(
            bundle: URL(fileURLWithPath: bundle),
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            progress: bar.report
        )
        defer { vault.close() }
        bar.finish()
        let writeOnly = try allowingWriteOnly(vault)
        try context.output.result(JoinSummary(vault: Summary(vault, at: directory), imported: summary)) {
            "Created vault \(vault.id.uuidString.lowercased()) at \(directory.path) in sync group "
                + vault.syncGroupID.uuidString.lowercased() + writeOnly + "\n"
                + ImportCommand.describe(summary, path: bundle)
        }
        try ImportCommand.finish(summary, context)
        context.output.note("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
    }

    /// `init --join s3://...`: a new vault in the group pushing there, with everything pulled.
    private func joinRemote(
        _ url: String,
        at directory: URL,
        configuration: Vault.Configuration,
        _ context: CommandContext
    ) throws {
        let remote = try self.remote.remote(url, context)
        let passphrase = try context.passphrase(.groupPassphrase)
        let bar = context.progressBar("pull", total: nil)
        let keepBytes = UInt64(max(0, keep?.bytes ?? 0))
        let (vault, summary) = try Vault.join(
            remote: remote,
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            content: thin ? .thin(keep: keepBytes) : .whole,
            progress: bar.report
        )
        defer { vault.close() }
        bar.finish()
        let writeOnly = try allowingWriteOnly(vault)
        let thinness = thin ? ThinSummary(remote: remote.location.description, keep: keepBytes) : nil
        try context.output.result(
            RemoteJoinSummary(vault: Summary(vault, at: directory), pulled: summary, thin: thinness)
        ) {
            "Created vault \(vault.id.uuidString.lowercased()) at \(directory.path) in sync group "
                + vault.syncGroupID.uuidString.lowercased() + writeOnly
                + (thinness.map {
                    "\nThin: content stays in \($0.remote), read on demand; at most \(ByteCount.format(Int64($0.keep))) of it kept here"
                } ?? "")
                + "\n" + PullCommand.describe(summary)
        }
        context.output.note("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
        try PullCommand.finish(summary, context)
    }

    struct RemoteJoinSummary: Encodable {
        let vault: Summary
        let pulled: PullSummary
        /// For a thin join: the store the content stays in and the cache budget.
        let thin: ThinSummary?
    }

    struct ThinSummary: Encodable {
        let remote: String
        let keep: UInt64
    }

    struct JoinSummary: Encodable {
        let vault: Summary
        let imported: ImportSummary
    }

    struct Summary: Encodable {
        let path: String
        let vaultID: String
        let deviceID: String
        let syncGroupID: String
        let formatVersion: Int

        init(_ vault: Vault, at directory: URL) {
            path = directory.path
            vaultID = vault.id.uuidString.lowercased()
            deviceID = vault.deviceID.uuidString.lowercased()
            syncGroupID = vault.syncGroupID.uuidString.lowercased()
            formatVersion = vault.formatVersion
        }
    }
}
