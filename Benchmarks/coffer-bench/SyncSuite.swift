import Coffer
import Foundation

/// Sync bundles: a full export and an import (a new vault joining from the bundle) of a vault of
/// mixed items and blobs, beside the disk's sequential write speed (the same number of bytes written
/// and fsynced in the same directory, in the same rounds); and an incremental export of one change
/// beside a full export counted in whole exports per second, so the ratio says how many incremental
/// exports fit in the time of one full one (goal: over 100).
enum SyncSuite {
    static let disk = "sync/disk sequential write (fsync, same directory)"
    static let fullExports = "sync/full export (whole exports per second)"

    /// For vaults a benchmark creates by joining: a fast KDF and room to grow without resizing.
    static var joiningConfiguration: Vault.Configuration {
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        configuration.initialMapSize = 4 << 30
        return configuration
    }

    static func benchmarks(quick: Bool, corpusDirectory: String?) -> [any Benchmark] {
        let fixture = Fixture(
            corpus: BlobSuite.Corpus(directory: corpusDirectory, partSize: quick ? 8 << 20 : 48 << 20),
            items: quick ? 500 : 5_000
        )
        return [
            DiskWrite(fixture: fixture), Export(fixture: fixture, perSecond: false),
            Export(fixture: fixture, perSecond: true), Import(fixture: fixture), IncrementalExport(fixture: fixture),
        ]
    }

    /// Vault A (items and the corpus as blobs) and its full bundle, made once for the whole suite.
    final class Fixture: SharedFixture {
        let corpus: BlobSuite.Corpus
        let items: Int
        private(set) var scratch: BlobSuite.Scratch?
        private(set) var bundle: URL?
        private(set) var bundleSize = 0
        private var users = 0

        init(corpus: BlobSuite.Corpus, items: Int) {
            self.corpus = corpus
            self.items = items
        }

        var vault: Vault { scratch!.vault }
        var directory: URL { scratch!.directory.deletingLastPathComponent() }

        func prepare() throws {
            users += 1
            guard scratch == nil else { return }
            try corpus.prepare()
            let scratch = try BlobSuite.Scratch()
            self.scratch = scratch
            var batch: [KeychainItem] = []
            for index in 0..<items {
                var item = KeychainItem(
                    .genericPassword,
                    value: Data("token-\(index)-\(UUID().uuidString)".utf8),
                    accessibility: .afterFirstUnlock,
                    scope: index % 4 == 0 ? .deviceBound : .syncable
                )
                item.attributes.service = "service-\(index)"
                item.attributes.account = "bench"
                batch.append(item)
            }
            try scratch.vault.keychain.add(contentsOf: batch)
            for file in corpus.files { try scratch.vault.blobs.write(file, contentsOf: URL(fileURLWithPath: file)) }
            let bundle = scratchDirectory().appendingPathExtension("bundle")
            bundleSize = Int(try scratch.vault.export(to: bundle).bytes)
            self.bundle = bundle
        }

        func release() {
            users -= 1
            guard users == 0 else { return }
            scratch?.remove()
            if let bundle { try? FileManager.default.removeItem(at: bundle) }
            corpus.remove()
        }
    }

    struct DiskWrite: Benchmark {
        let fixture: Fixture
        var name: String { SyncSuite.disk }
        var bytesPerRun: Int { fixture.bundleSize }
        private var block: [UInt8] = []
        private let target = scratchDirectory()

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func setUp() throws {
            try fixture.prepare()
            block = BlobSuite.Corpus.random(1 << 20)
        }

        mutating func tearDown() throws {
            try? FileManager.default.removeItem(at: target)
            fixture.release()
        }

        mutating func run() throws {
            let descriptor = open(target.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard descriptor >= 0 else { throw BenchmarkError("cannot create \(target.path)") }
            defer { close(descriptor) }
            var remaining = fixture.bundleSize
            try block.withUnsafeBytes { raw in
                while remaining > 0 {
                    let count = write(descriptor, raw.baseAddress, min(remaining, raw.count))
                    guard count > 0 else { throw BenchmarkError("writing \(target.path) failed") }
                    remaining -= count
                }
            }
            guard fsync(descriptor) == 0 else { throw BenchmarkError("fsync failed") }
        }
    }

    struct Export: Benchmark {
        let fixture: Fixture
        /// Counted in whole exports per second (the reference of the incremental export).
        let perSecond: Bool
        private let target = scratchDirectory().appendingPathExtension("bundle")
        var name: String { perSecond ? SyncSuite.fullExports : "sync/export (full bundle)" }
        var bytesPerRun: Int { perSecond ? 0 : fixture.bundleSize }
        var reference: String? { perSecond ? nil : SyncSuite.disk }

        init(fixture: Fixture, perSecond: Bool) {
            self.fixture = fixture
            self.perSecond = perSecond
        }

        mutating func setUp() throws { try fixture.prepare() }
        mutating func tearDown() throws {
            try? FileManager.default.removeItem(at: target)
            fixture.release()
        }
        mutating func run() throws { try fixture.vault.export(to: target) }
    }

    /// Where a benchmark joins a new vault each run: a fresh directory per run, removed before the next
    /// run and at the end.
    struct JoinedVaultDirectory {
        private var current: URL?

        /// A fresh directory for this run's vault.
        mutating func next() -> URL {
            let directory = scratchDirectory()
            current = directory
            return directory
        }

        /// Removes the last run's vault.
        mutating func remove() {
            if let current { try? FileManager.default.removeItem(at: current) }
            current = nil
        }
    }

    struct Import: JoiningBenchmark {
        let fixture: Fixture
        var joined = JoinedVaultDirectory()
        var name: String { "sync/import (a new vault joins from the full bundle)" }
        var bytesPerRun: Int { fixture.bundleSize }
        var reference: String? { SyncSuite.disk }

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func run() throws {
            let (vault, _) = try Vault.join(
                bundle: fixture.bundle!,
                at: joined.next(),
                passphrase: "bench",
                configuration: SyncSuite.joiningConfiguration
            )
            vault.close()
        }
    }

    struct IncrementalExport: Benchmark {
        let fixture: Fixture
        private let target = scratchDirectory().appendingPathExtension("bundle")
        private var change = 0
        var name: String { "sync/incremental export (one changed item, --peer)" }
        var reference: String? { SyncSuite.fullExports }

        init(fixture: Fixture) { self.fixture = fixture }

        mutating func setUp() throws {
            try fixture.prepare()
            try fixture.vault.export(to: target, peer: "bench-peer")
        }

        mutating func tearDown() throws {
            try? FileManager.default.removeItem(at: target)
            fixture.release()
        }

        mutating func prepareRun() throws {
            change += 1
            try fixture.vault.keychain.setPassword(
                "changed-\(change)",
                service: "service-1",
                account: "bench",
                accessibility: .afterFirstUnlock,
                scope: .syncable
            )
        }

        mutating func run() throws {
            let summary = try fixture.vault.export(to: target, peer: "bench-peer")
            guard summary.records.total == 1 else {
                throw BenchmarkError("the incremental export held \(summary.records.total) records, not 1")
            }
        }
    }
}
