import Coffer
import Foundation

/// Sync through an S3-compatible store: a full push (export, then upload in parts) and a new vault
/// joining from the store (download, then import), against a real SeaweedFS on loopback started by
/// `Tools/seaweedfs`, each beside the store's own speed for the same bytes in the same run: the
/// bundle uploaded, and downloaded, as plain bytes by the same client with no Coffer crypto.
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
            Join(fixture: fixture),
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
                throw BenchmarkError("Tools/seaweedfs start failed; see \(serverDirectory.path)/weed.log")
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

    struct Join: JoiningBenchmark {
        let fixture: Fixture
        var joined = SyncSuite.JoinedVaultDirectory()
        var name: String { "remote/pull (a new vault joins: import while downloading)" }
        var bytesPerRun: Int { fixture.bundleSize }
        var reference: String? { RemoteSuite.plainDownload }

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func run() throws {
            let (vault, summary) = try Vault.join(
                remote: try fixture.remote(prefix: "joined"),
                at: joined.next(),
                passphrase: "bench",
                configuration: SyncSuite.joiningConfiguration
            )
            vault.close()
            guard summary.bundles.count == 1 else {
                throw BenchmarkError("the join pulled \(summary.bundles.count) bundles")
            }
        }
    }
}
