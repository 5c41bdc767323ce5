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

    @Flag(
        help:
            "Readable only while the vault is unlocked, writable without any key (sealed to the vault's write key; stored in full)."
    )
    var completeUnlessOpen: Bool

    var compression = CompressionOption()

    func validate() throws {
        if whenUnlocked, completeUnlessOpen {
            throw ValidationError(
                "--when-unlocked and --complete-unless-open exclude each other: choose one protection"
            )
        }
    }

    /// The library's options for the write.
    var options: BlobWriteOptions {
        BlobWriteOptions(
            scope: deviceOnly ? .deviceBound : .syncable,
            protection: completeUnlessOpen ? .completeUnlessOpen : whenUnlocked ? .whenUnlocked : .afterFirstUnlock,
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
    @Option(
        value: "FILE",
        help:
            "Read the RNCryptor password from FILE, less one trailing newline (default: $COFFER_RNCRYPTOR_PASSWORD, else ask)."
    )
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

/// `--tag a,b`: one or more tags, split at commas (restic's tag lists). For a filter, a snapshot
/// matches a list when it has all its tags; `''` means untagged.
struct TagList: ArgumentValue {
    /// The tags, in the order given; `[""]` for `''`.
    let tags: [String]

    init?(argument text: String) {
        tags = text.isEmpty ? [""] : text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if text.isEmpty { return }
        guard tags.allSatisfy({ !$0.isEmpty }) else { return nil }
    }

    static var expectation: String { "tags separated by commas, like daily or daily,laptop ('' for untagged)" }
}

/// Which snapshots a listing or a policy considers: `--host`, `--name`, `--tag`, each repeatable.
struct SnapshotSelection: ArgumentGroup {
    @Option(value: "HOST", help: "Only snapshots taken on HOST (repeatable: any of them).")
    var host: [String]

    @Option(value: "NAME", help: "Only snapshots named NAME (repeatable: any of them).")
    var name: [String]

    @Option(
        value: "TAGS",
        help: "Only snapshots with all of TAGS, e.g. daily,laptop (repeatable: any list; '' untagged)."
    )
    var tag: [TagList]

    /// The library's filter.
    var filter: SnapshotFilter { SnapshotFilter(hosts: host, names: name, tags: tag.map(\.tags)) }
}

/// A moment as `backup --time` takes it: `2019-09-01 11:00:00` (local time, read as restic reads it:
/// ``LocalTime``) or ISO 8601 with a zone (`2019-09-01T11:00:00Z`). A local time the clocks skip
/// (a daylight saving gap) is refused, saying so.
struct SnapshotTime: ArgumentValue {
    /// The moment.
    let date: Date

    init?(argument text: String) {
        if let wall = Self.wallTime(text) {
            guard case .moment(let date) = LocalTime.read(wall, in: .current) else { return nil }
            self.date = date
            return
        }
        guard let date = ISO8601DateFormatter().date(from: text) else { return nil }
        self.date = date
    }

    /// The wall-clock time `text` names in one of the local forms, held as if it were UTC (where
    /// every wall time exists), or `nil`.
    static func wallTime(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        for format in ["yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let wall = formatter.date(from: text) { return wall }
        }
        return nil
    }

    static var expectation: String { "a time like '2019-09-01 11:00:00' (local) or 2019-09-01T11:00:00Z" }

    static func problem(with text: String) -> String? {
        guard let wall = wallTime(text), case .skipped(let from, let to) = LocalTime.read(wall, in: .current) else {
            return nil
        }
        return
            "was given '\(text)', a local time that does not exist in this time zone (\(TimeZone.current.identifier)): its clocks went from \(from) straight to \(to) that day (daylight saving time); give a time outside that gap, or one with its offset (2019-09-01T11:00:00+02:00)"
    }
}

/// A retention count: a whole number of 1 or more, or `unlimited`.
struct KeepCount: ArgumentValue {
    /// The count; ``RetentionPolicy/unlimited`` for `unlimited`.
    let value: Int

    init?(argument text: String) {
        if text == "unlimited" {
            value = RetentionPolicy.unlimited
            return
        }
        guard let count = Int(text), count >= 1 else { return nil }
        value = count
    }

    static var expectation: String { "a count of 1 or more, or unlimited" }
}

extension RetentionDuration: ArgumentValue {
    init?(argument text: String) { try? self.init(text) }

    static var expectation: String { "a duration of years, months, days and hours, like 7d, 1y6m or 2y5m7d3h" }
}

/// `--group-by host,name,tags` (or `''`: one group).
struct GroupingValue: ArgumentValue {
    /// The grouping.
    let grouping: SnapshotGrouping

    init?(argument text: String) {
        var grouping: SnapshotGrouping = []
        for part in text.split(separator: ",") {
            switch part {
            case "host": grouping.insert(.host)
            case "name", "paths": grouping.insert(.name)
            case "tags": grouping.insert(.tags)
            default: return nil
            }
        }
        self.grouping = grouping
    }

    static var expectation: String { "host, name and tags separated by commas, or '' for one group" }
}

/// A size as `--exclude-larger-than` takes it: bytes, or with a suffix `k`, `m`, `g` or `t`
/// (powers of 1024, as restic takes them; `KiB`, `MB` and the like are read the same way).
struct ByteSize: ArgumentValue {
    /// The size in bytes.
    let bytes: Int64

    init?(argument text: String) {
        let lowered = text.lowercased()
        let digits = lowered.prefix { $0.isASCII && $0.isNumber }
        guard let number = Int64(digits) else { return nil }
        let exponents: [String: Int64] = ["": 0, "b": 0, "k": 1, "m": 2, "g": 3, "t": 4]
        var suffix = String(lowered.dropFirst(digits.count))
        for unit in ["ib", "b"] where suffix.count > 1 && suffix.hasSuffix(unit) {
            suffix = String(suffix.dropLast(unit.count))
            break
        }
        guard let exponent = exponents[suffix] else { return nil }
        let (scaled, overflow) = number.multipliedReportingOverflow(by: Int64(1) << (10 * exponent))
        guard !overflow else { return nil }
        bytes = scaled
    }

    static var expectation: String { "a size like 2048, 500k, 10M or 2G (powers of 1024)" }
}

extension DataSubset: ArgumentValue {
    init?(argument text: String) { try? self.init(text) }

    static var expectation: String { "N/M (slice N of M, e.g. 1/5) or a percentage (e.g. 10%)" }
}
