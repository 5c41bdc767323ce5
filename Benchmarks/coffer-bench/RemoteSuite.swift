import Coffer
import Foundation

/// Sync through an S3-compatible store: a full push (the export streamed up in parts) and a new vault
/// joining from the store (importing while it downloads), against a real SeaweedFS on loopback
/// started by `Tools/seaweedfs`, each beside the store's own speed for the same bytes in the same run:
/// the bundle uploaded, and downloaded, as plain bytes by the same client with no Coffer crypto. And
/// two size ratios after a compaction of five devices' edits (``CompactedGroup``).
enum RemoteSuite {
    static let plainUpload = "remote/plain upload of the bundle's bytes (no crypto)"
    static let plainDownload = "remote/plain download of the bundle's bytes (no crypto)"

    /// `Tools/seaweedfs`, found from the executable's place in `.build`.
    static var script: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<4 { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("Tools/seaweedfs")
    }

    /// SeaweedFS counts as installed when the script's virtual environment has it.
    static var isInstalled: Bool {
        let weed = script.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/seaweedfs/venv/bin/weed")
        return FileManager.default.isExecutableFile(atPath: weed.path)
    }

    static func skipped(quick: Bool) -> [String] {
        if quick { return ["remote (SeaweedFS): left out of --quick; run without --quick"] }
        return isInstalled ? [] : ["remote (SeaweedFS): not installed; run Tools/seaweedfs install"]
    }

    static func benchmarks(quick: Bool, corpusDirectory: String?) -> [any Benchmark] {
        guard !quick, isInstalled else { return [] }
        let fixture = Fixture(
            sync: SyncSuite.Fixture(
                corpus: BlobSuite.Corpus(directory: corpusDirectory, partSize: 48 << 20),
                items: 2_000
            )
        )
        return [
            PlainUpload(fixture: fixture), Push(fixture: fixture), PlainDownload(fixture: fixture),
            Join(fixture: fixture, thin: false), Join(fixture: fixture, thin: true), OffloadedRead(fixture: fixture),
            CompactedGroup(fixture: fixture, measuring: .history),
            CompactedGroup(fixture: fixture, measuring: .store), CompactedGroup(fixture: fixture, measuring: .join),
        ]
    }

    /// The server, a vault and its bundle, and a prefix holding one completed push.
    final class Fixture: SharedFixture {
        let sync: SyncSuite.Fixture
        private let serverDirectory = scratchDirectory()
        private var users = 0
        private(set) var remote: S3Remote?
        private var runs = 0

        init(sync: SyncSuite.Fixture) { self.sync = sync }

        var bundleSize: Int { sync.bundleSize }
        var bundle: URL { sync.bundle! }

        /// A remote in the benchmark bucket under `prefix`.
        func remote(prefix: String) throws -> S3Remote {
            var remote = remote!
            remote.location = try S3Location(bucket: remote.location.bucket, prefix: prefix)
            return remote
        }

        /// A prefix never used before.
        func freshPrefix() -> String {
            runs += 1
            return "run-\(runs)"
        }

        func prepare() throws {
            users += 1
            try sync.prepare()
            guard remote == nil else { return }
            let settings = try startServer()
            guard let endpoint = settings["AWS_ENDPOINT_URL"].flatMap({ URL(string: $0) }),
                let access = settings["AWS_ACCESS_KEY_ID"], let secret = settings["AWS_SECRET_ACCESS_KEY"]
            else { throw BenchmarkError("Tools/seaweedfs start printed no settings") }
            let remote = S3Remote(
                try S3Location("s3://coffer-bench/joined"),
                credentials: try S3Credentials(accessKeyID: access, secretAccessKey: secret),
                endpoint: endpoint,
                region: "us-east-1"
            )
            try remote.createBucketIfMissing()
            try sync.vault.push(to: remote)
            self.remote = remote
        }

        func release() {
            users -= 1
            sync.release()
            guard users == 0, remote != nil else { return }
            try? runPeer([RemoteSuite.script.path, "stop", serverDirectory.path])
            try? FileManager.default.removeItem(at: serverDirectory)
            remote = nil
        }

        /// Starts the server with this process as its owner: its watchdog (`Tools/watchdog`) stops it
        /// if the benchmark ends before ``release()``, however it ends (a failure, Ctrl-C, SIGKILL).
        private func startServer() throws -> [String: String] {
            let process = Process()
            process.executableURL = RemoteSuite.script
            process.arguments = ["start", serverDirectory.path, "\(getpid())"]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchmarkError("Tools/seaweedfs start failed; see \(serverDirectory.path)/seaweedfs.log")
            }
            var settings: [String: String] = [:]
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { settings[parts[0]] = parts[1] }
            }
            return settings
        }
    }

    struct PlainUpload: Benchmark {
        let fixture: Fixture
        var name: String { RemoteSuite.plainUpload }
        var bytesPerRun: Int { fixture.bundleSize }

        mutating func setUp() throws { try fixture.prepare() }
        mutating func tearDown() throws { fixture.release() }
        mutating func run() throws {
            let client = S3Client(try fixture.remote(prefix: "plain"))
            try client.upload(file: fixture.bundle.path, to: "plain/" + fixture.freshPrefix())
        }
    }

    struct Push: Benchmark {
        let fixture: Fixture
        var name: String { "remote/push (full: export streamed up in parts)" }
        var bytesPerRun: Int { fixture.bundleSize }
        var reference: String? { RemoteSuite.plainUpload }

        mutating func setUp() throws { try fixture.prepare() }
        mutating func tearDown() throws { fixture.release() }
        mutating func run() throws {
            let summary = try fixture.sync.vault.push(to: try fixture.remote(prefix: fixture.freshPrefix()))
            guard summary.object != nil, !summary.export.isIncremental else {
                throw BenchmarkError("the push did not upload a full bundle")
            }
        }
    }

    struct PlainDownload: Benchmark {
        let fixture: Fixture
        private let target = scratchDirectory()
        var name: String { RemoteSuite.plainDownload }
        var bytesPerRun: Int { fixture.bundleSize }

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func setUp() throws {
            try fixture.prepare()
            try S3Client(try fixture.remote(prefix: "plain")).upload(file: fixture.bundle.path, to: "plain/download")
        }

        mutating func tearDown() throws {
            try? FileManager.default.removeItem(at: target)
            fixture.release()
        }

        mutating func run() throws {
            try S3Client(try fixture.remote(prefix: "plain")).download("plain/download", to: target.path)
        }
    }

    /// A new vault joins from the store: whole (it imports the bundle while downloading it), or thin
    /// (`init --join --thin`: it reads the bundle's records object, not the bundle, and keeps no
    /// content). The thin figure's bytes are the bundle's too, so it reads as how fast a vault of that
    /// size is joined, beside the plain download of those bytes.
    struct Join: JoiningBenchmark {
        let fixture: Fixture
        let thin: Bool
        var joined = SyncSuite.JoinedVaultDirectory()
        var name: String {
            thin
                ? "remote/thin join (records only, content left in the store)"
                : "remote/pull (a new vault joins: import while downloading)"
        }
        var bytesPerRun: Int { fixture.bundleSize }
        var reference: String? { RemoteSuite.plainDownload }

        init(fixture: Fixture, thin: Bool) {
            self.fixture = fixture
            self.thin = thin
        }

        mutating func run() throws {
            let (vault, summary) = try Vault.join(
                remote: try fixture.remote(prefix: "joined"),
                at: joined.next(),
                passphrase: "bench",
                configuration: SyncSuite.joiningConfiguration,
                content: thin ? .thin(keep: 0) : .whole
            )
            vault.close()
            guard summary.bundles.count == 1 else {
                throw BenchmarkError("the join pulled \(summary.bundles.count) bundles")
            }
            guard !thin || summary.bytes * 8 < fixture.bundleSize else {
                throw BenchmarkError("the thin join read \(summary.bytes) bytes of a \(fixture.bundleSize)-byte bundle")
            }
        }
    }

    /// Every blob of a vault that offloaded all its content (`coffer offload --keep 0`) read back,
    /// each chunk fetched from the store with a ranged GET, opened and checked: beside the plain
    /// download of the same bundle's bytes. The cache budget is none, so every run fetches it all.
    struct OffloadedRead: Benchmark {
        let fixture: Fixture
        private let directory = scratchDirectory()
        private var vault: Vault?
        var name: String { "remote/read every blob of an offloaded vault (fetched from the store)" }
        var bytesPerRun: Int { fixture.bundleSize }
        var reference: String? { RemoteSuite.plainDownload }

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func setUp() throws {
            try fixture.prepare()
            let remote = try fixture.remote(prefix: "joined")
            let (joined, _) = try Vault.join(
                remote: remote,
                at: directory.appendingPathComponent("offloaded"),
                passphrase: "bench",
                configuration: SyncSuite.joiningConfiguration
            )
            let summary = try joined.offloadContent(to: remote)
            guard summary.offloadedChunks > 0 else { throw BenchmarkError("nothing was offloaded") }
            vault = joined
        }

        mutating func tearDown() throws {
            vault?.close()
            vault = nil
            try? FileManager.default.removeItem(at: directory)
            fixture.release()
        }

        mutating func run() throws {
            guard let vault else { return }
            let null = open("/dev/null", O_WRONLY)
            defer { close(null) }
            for blob in try vault.blobs.list() { try vault.blobs.read(blob.name, toFileDescriptor: null) }
        }
    }

    /// Five devices of one group edit in rounds through one store (each round: five items and a
    /// 256 KiB blob per device, pushed, then everyone pulls), then one compacts. The figure is a size
    /// ratio, the lower the better: the bytes the store holds after the compaction, or the bytes a
    /// new device downloads to join, over the live syncable data (the checkpoint's size).
    struct CompactedGroup: Benchmark {
        enum Measure { case history, store, join }
        let fixture: Fixture
        let measuring: Measure
        var lastValue: Double?
        var valueUnit: String? { "×" }
        var name: String {
            switch measuring {
            case .history: return "remote/bytes stored before compaction, 5 devices, 4 rounds (× live data)"
            case .store: return "remote/bytes stored after compaction, 5 devices, 4 rounds (× live data)"
            case .join: return "remote/bytes a new device downloads to join after it (× live data)"
            }
        }
        var operationsPerRun: Int { 1 }

        init(fixture: Fixture, measuring: Measure) {
            self.fixture = fixture
            self.measuring = measuring
        }

        mutating func setUp() throws { try fixture.prepare() }
        mutating func tearDown() throws { fixture.release() }

        mutating func run() throws {
            let remote = try fixture.remote(prefix: fixture.freshPrefix())
            let directory = scratchDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let first = try Vault.create(
                at: directory.appendingPathComponent("0"),
                passphrase: "bench",
                configuration: SyncSuite.joiningConfiguration
            )
            var devices = [first]
            defer { for device in devices { device.close() } }
            try first.push(to: remote)
            for index in 1..<5 {
                devices.append(
                    try Vault.join(
                        remote: remote,
                        at: directory.appendingPathComponent("\(index)"),
                        passphrase: "bench",
                        configuration: SyncSuite.joiningConfiguration
                    ).vault
                )
            }
            var generator = SystemRandomNumberGenerator()
            for round in 0..<4 {
                for device in devices {
                    for item in 0..<5 {
                        try device.keychain.setPassword(
                            "round \(round)",
                            service: "service-\(Int.random(in: 0..<40, using: &generator))",
                            account: "item-\(item)",
                            scope: .syncable
                        )
                    }
                    try device.blobs.write(
                        "blob-\(Int.random(in: 0..<10, using: &generator))",
                        data: BlobSuite.Corpus.random(256 << 10)
                    )
                    try device.push(to: remote)
                }
                for device in devices { try device.pull(from: remote) }
            }
            let summary = try first.compact(remote: remote)
            let live = Double(summary.checkpointBytes)
            switch measuring {
            case .history:
                lastValue = Double(summary.storedBytesBefore) / live
            case .store:
                lastValue = Double(summary.storedBytesAfter) / live
            case .join:
                let (newcomer, pulled) = try Vault.join(
                    remote: remote,
                    at: directory.appendingPathComponent("newcomer"),
                    passphrase: "bench",
                    configuration: SyncSuite.joiningConfiguration
                )
                newcomer.close()
                lastValue = Double(pulled.bytes) / live
            }
        }
    }
}
