import Foundation

/// One measured operation. `setUp` runs once before the warm-up, `run` once per measured run,
/// `tearDown` once at the end. `bytesPerRun` or `operationsPerRun` turns a time into a throughput.
protocol Benchmark {
    /// The figure's name, e.g. `crypto/aes-256-gcm seal 64 KiB`.
    var name: String { get }
    /// What a run processes, for MB/s.
    var bytesPerRun: Int { get }
    /// How many operations one run performs, for ops/s.
    var operationsPerRun: Int { get }
    /// The name of the benchmark this one is compared with, if any.
    var reference: String? { get }
    /// Every benchmark this one is compared with, the main one (``reference``) first: a peer doing
    /// the same job, and the physical bound of the job (compression alone, the file system's copy).
    var references: [String] { get }
    /// For a figure that is not a rate (a size ratio, say): its unit, and the value the last run
    /// measured, which the harness takes instead of a rate.
    var valueUnit: String? { get }
    var lastValue: Double? { get }

    mutating func setUp() throws
    /// Untimed work before each run (restocking what the run consumes, say).
    mutating func prepareRun() throws
    mutating func run() throws
    mutating func tearDown() throws
}

extension Benchmark {
    var bytesPerRun: Int { 0 }
    var operationsPerRun: Int { 1 }
    var reference: String? { nil }
    var references: [String] { reference.map { [$0] } ?? [] }
    var valueUnit: String? { nil }
    var lastValue: Double? { nil }
    mutating func setUp() throws {}
    mutating func prepareRun() throws {}
    mutating func tearDown() throws {}
}

/// Data several benchmarks share: prepared by the first that needs it, released by the last.
protocol SharedFixture: AnyObject {
    func prepare() throws
    func release()
}

/// A benchmark that joins a new vault from a shared fixture in every run: the same lifecycle whatever
/// it joins from (a bundle, an object store), with a fresh directory per run.
protocol JoiningBenchmark: Benchmark {
    associatedtype Shared: SharedFixture
    var fixture: Shared { get }
    var joined: SyncSuite.JoinedVaultDirectory { get set }
}

extension JoiningBenchmark {
    mutating func setUp() throws { try fixture.prepare() }
    mutating func prepareRun() throws { joined.remove() }
    mutating func tearDown() throws {
        joined.remove()
        fixture.release()
    }
}

/// The measured result of one benchmark.
struct Measurement: Codable {
    let name: String
    /// The suite: the name up to its first "/" (crypto, storage, keychain, blobs, snapshots, sync).
    let suite: String
    let unit: String
    let median: Double
    let min: Double
    let max: Double
    let runs: Int
    let reference: String?
    /// median / reference median, when there is a reference in the same run.
    var ratio: Double?
    /// The figure beside each of its references measured in the same run, the main one first.
    var comparisons: [Comparison] = []

    /// This figure's median over one reference's.
    struct Comparison: Codable {
        let reference: String
        let ratio: Double
    }
}

/// Runs benchmarks: each is set up and warmed up once, then the measured runs go round-robin (one
/// run of every benchmark per round), so drift on a shared, noisy machine touches a figure and its
/// reference alike and their ratio stays meaningful.
struct Harness {
    let runs: Int

    func measure(_ benchmarks: [any Benchmark]) throws -> [Measurement] {
        var benchmarks = benchmarks
        var rates = [[Double]](repeating: [], count: benchmarks.count)
        defer {
            for index in benchmarks.indices { try? benchmarks[index].tearDown() }
        }
        for index in benchmarks.indices {
            try benchmarks[index].setUp()
            try benchmarks[index].prepareRun()
            try benchmarks[index].run()
        }
        for _ in 0..<runs {
            for index in benchmarks.indices {
                try benchmarks[index].prepareRun()
                let start = DispatchTime.now().uptimeNanoseconds
                try benchmarks[index].run()
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                let benchmark = benchmarks[index]
                if benchmark.valueUnit != nil, let value = benchmark.lastValue {
                    rates[index].append(value)
                    continue
                }
                rates[index].append(
                    benchmark.bytesPerRun > 0
                        ? Double(benchmark.bytesPerRun) / seconds / 1e6 : Double(benchmark.operationsPerRun) / seconds
                )
            }
        }
        var results = zip(benchmarks, rates).map { benchmark, rates in
            let sorted = rates.sorted()
            return Measurement(
                name: benchmark.name,
                suite: String(benchmark.name.prefix { $0 != "/" }),
                unit: benchmark.valueUnit ?? (benchmark.bytesPerRun > 0 ? "MB/s" : "ops/s"),
                median: sorted[sorted.count / 2],
                min: sorted[0],
                max: sorted[sorted.count - 1],
                runs: runs,
                reference: benchmark.references.first,
                ratio: nil
            )
        }
        for (index, benchmark) in benchmarks.enumerated() {
            results[index].comparisons = benchmark.references.compactMap { reference in
                results.first { $0.name == reference }.map {
                    Measurement.Comparison(reference: reference, ratio: results[index].median / $0.median)
                }
            }
            if let main = results[index].comparisons.first, main.reference == results[index].reference {
                results[index].ratio = main.ratio
            }
        }
        return results
    }
}

/// A new path under the system temporary directory for one benchmark's files (not created).
func scratchDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-\(UUID().uuidString)")
}

/// Prints the machine the figures come from.

/// Runs a peer's command (`arguments[0]`, found in the usual directories) to its end, feeding it
/// `input` on standard input; throws with its error output when it fails or writes to standard error
/// with `strict`.
func runPeer(
    _ arguments: [String],
    environment: [String: String]? = nil,
    directory: URL? = nil,
    input: Data? = nil,
    strict: Bool = false
) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: SnapshotSuite.Peer.find(arguments[0]) ?? arguments[0])
    process.arguments = Array(arguments.dropFirst())
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = directory }
    process.standardOutput = FileHandle.nullDevice
    let errors = Pipe()
    process.standardError = errors
    let feed = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : feed
    try process.run()
    // Fed from another thread while this one drains standard error, so neither pipe can fill and stall.
    let fed = DispatchSemaphore(value: 0)
    if let input {
        let writer = feed.fileHandleForWriting
        DispatchQueue.global().async {
            // A peer that exits early closes the pipe; its status says why, so the write error is moot.
            try? writer.write(contentsOf: input)
            try? writer.close()
            fed.signal()
        }
    } else {
        fed.signal()
    }
    let message = errors.fileHandleForReading.readDataToEndOfFile()
    fed.wait()
    process.waitUntilExit()
    guard process.terminationStatus == 0, !strict || message.isEmpty else {
        throw BenchmarkError(
            "\(arguments.prefix(3).joined(separator: " ")) failed: \(String(decoding: message, as: UTF8.self))"
        )
    }
}
