import Foundation

/// Runs the selected benchmarks, prints the table, and writes JSON if asked. Release builds only.
func runBenchmarks(quick: Bool, runs: Int?, filter: String?, corpus: String?, jsonPath: String?) {
    let harness = Harness(runs: runs ?? (quick ? 3 : 5))
    var benchmarks: [any Benchmark] =
        CryptoSuite.benchmarks(quick: quick) + StorageSuite.benchmarks(quick: quick)
        + KeychainSuite.benchmarks(quick: quick) + BlobSuite.benchmarks(quick: quick, corpusDirectory: corpus)
        + SnapshotSuite.benchmarks(quick: quick, corpusDirectory: corpus)
        + SyncSuite.benchmarks(quick: quick, corpusDirectory: corpus)
    if let filter { benchmarks = benchmarks.filter { $0.name.contains(filter) } }

    print("coffer-bench on \(Machine.summary); median of \(harness.runs) interleaved runs after a warm-up")
    print("(crypto, storage, keychain and sync figures use one core; blobs and snapshots figures use all cores)")
    if benchmarks.contains(where: { $0.name.hasPrefix("snapshots/") }) {
        for peer in SnapshotSuite.skippedPeers(quick: quick) { print("skipped peer: \(peer)") }
    }
    print("")
    let results: [Measurement]
    do {
        results = try harness.measure(benchmarks)
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: \(error)\n".utf8))
        exit(1)
    }

    let nameWidth = max(results.map(\.name.count).max() ?? 0, 6)
    func cell(_ value: Double) -> String { String(format: "%12.1f", value) }
    print(
        "figure".padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            + "       median          min          max   vs reference"
    )
    for result in results {
        let ratio = result.ratio.map { String(format: "%.2fx of %@", $0, result.reference!) } ?? ""
        print(
            result.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + " "
                + result.unit.padding(toLength: 5, withPad: " ", startingAt: 0)
                + cell(result.median) + " " + cell(result.min) + " " + cell(result.max) + "   " + ratio
        )
    }
    if let jsonPath {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        struct Report: Encodable {
            let machine: String
            let date: Date
            let results: [Measurement]
        }
        do {
            try encoder.encode(Report(machine: Machine.summary, date: Date(), results: results)).write(
                to: URL(fileURLWithPath: jsonPath)
            )
        } catch {
            FileHandle.standardError.write(Data("coffer-bench: cannot write \(jsonPath): \(error)\n".utf8))
            exit(1)
        }
    }
}
