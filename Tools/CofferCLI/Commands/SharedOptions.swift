import Coffer
import Foundation

// The options several commands share, each group declared once. A command holds a group as a plain
// property (`var remote = RemoteOptions()`); its options then appear in that command's help and are
// bound and validated with the command's own.

/// Options every command accepts, before or after its name.
struct GlobalOptions: ArgumentGroup {
    @Option(value: "DIR", help: "The vault directory (default: $COFFER_VAULT, else ~/.local/share/coffer/default).")
    var vault: String?

    @Option(value: "FILE", help: "Read the passphrase from FILE (default: $COFFER_PASSPHRASE, else ask).")
    var passphraseFile: String?

    @Flag(help: "Print results as JSON.")
    var json: Bool

    @Flag(short: "q", help: "Print only results and errors; no progress.")
    var quiet: Bool
}

/// How `put` stores a blob: scope, protection and compression.
struct BlobWriteFlags: ArgumentGroup {
    @Flag(help: "Keep the blob on this machine: never export it.")
    var deviceOnly: Bool

    @Flag(help: "Readable only while the vault is unlocked (default: after first unlock).")
    var whenUnlocked: Bool

    var compression = CompressionOption()

    /// The library's options for the write.
    var options: BlobWriteOptions {
        BlobWriteOptions(
            scope: deviceOnly ? .deviceBound : .syncable,
            protection: whenUnlocked ? .whenUnlocked : .afterFirstUnlock,
            compressionLevel: compression.level?.value
        )
    }
}

/// `--compression LEVEL`, shared by `put` and `backup`.
struct CompressionOption: ArgumentGroup {
    @Option(
        name: "compression",
        value: "LEVEL",
        help: "zstd level for new chunks, 1 (fastest) to 19 (smallest); default 3."
    )
    var level: CompressionLevel?
}

/// A zstd level Coffer writes with: 1 to 19.
struct CompressionLevel: ArgumentValue {
    /// The level.
    let value: Int

    init?(argument text: String) {
        guard let level = Int(text), (1...19).contains(level) else { return nil }
        value = level
    }

    static var expectation: String { "a zstd level from 1 to 19" }
}

/// `--rncryptor-password-file`, for `put --from-rncryptor` and `get --to-rncryptor`.
struct RNCryptorPasswordOption: ArgumentGroup {
    @Option(value: "FILE", help: "The RNCryptor password (default: $COFFER_RNCRYPTOR_PASSWORD, else ask).")
    var rncryptorPasswordFile: String?

    /// The password, as text (RNCryptor derives its keys from the password's UTF-8).
    func password(_ context: CommandContext, confirm: Bool = false) throws -> [UInt8] {
        try SecretSource.rncryptorPassword.read(file: rncryptorPasswordFile, context, confirm: confirm)
    }
}

/// `--host HOST`: whose snapshot a name means.
struct HostOption: ArgumentGroup {
    @Option(value: "HOST", help: "Whose snapshot a name means (default: this machine's hostname).")
    var host: String?
}

/// `--new-passphrase-file`, for `passwd` and `rekey`.
struct NewPassphraseOption: ArgumentGroup {
    @Option(value: "FILE", help: "Read the new passphrase from FILE.")
    var newPassphraseFile: String?

    /// The new passphrase, asked twice on a terminal, with a warning if it is weak.
    func passphrase(_ context: CommandContext) throws -> Passphrase {
        try SecretSource.newPassphrase.passphrase(file: newPassphraseFile, context, confirm: true)
    }
}

/// Where an S3-compatible store is and how to talk to it, for `push`, `pull`, `remote compact` and
/// `init --join s3://…`.
struct RemoteOptions: ArgumentGroup {
    @Option(
        value: "URL",
        help: "The object store's URL, for MinIO, Ceph, SeaweedFS... (default: $AWS_ENDPOINT_URL, else AWS S3)."
    )
    var endpoint: String?

    @Option(value: "REGION", help: "The signing region (default: $AWS_REGION, else us-east-1).")
    var region: String?

    @Option(value: "KIB", help: "Send at most KIB KiB/s (averaged over each part).")
    var limitUpload: KiBPerSecond?

    @Option(value: "KIB", help: "Receive at most KIB KiB/s (averaged over each range read).")
    var limitDownload: KiBPerSecond?

    @Option(
        value: "FILE",
        help: "Read keys from an AWS credentials file (profile $AWS_PROFILE or default) instead of "
            + "$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY."
    )
    var credentialsFile: String?

    /// The store at `url` (`s3://BUCKET/PREFIX`), with these options and the environment's defaults.
    func remote(_ url: String, _ context: CommandContext) throws -> S3Remote {
        let location = try S3Location(url)
        let environment = context.environment
        let credentials =
            try credentialsFile.map { try S3Credentials.load(file: URL(fileURLWithPath: $0)) }
            ?? S3Credentials.fromEnvironment(environment)
        var endpointURL: URL?
        if let text = endpoint ?? environment["AWS_ENDPOINT_URL"], !text.isEmpty {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw context.usageError(
                    "'\(text)' is not an endpoint URL; give one like http://127.0.0.1:8333 or https://minio.example.com"
                )
            }
            endpointURL = url
        }
        let region = self.region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"]
        var remote = S3Remote(location, credentials: credentials, endpoint: endpointURL, region: region)
        remote.uploadLimit = limitUpload?.bytesPerSecond
        remote.downloadLimit = limitDownload?.bytesPerSecond
        return remote
    }
}

/// A transfer limit given in KiB per second.
struct KiBPerSecond: ArgumentValue {
    /// The limit in bytes per second.
    let bytesPerSecond: Int

    init?(argument text: String) {
        guard let kib = Int(text), kib > 0, kib <= Int.max / 1024 else { return nil }
        bytesPerSecond = kib * 1024
    }

    static var expectation: String { "a whole number of KiB per second, like 512" }
}

extension GroupJoinPolicy: ArgumentValue {}
