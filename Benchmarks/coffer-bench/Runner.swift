import Foundation

/// Runs the selected benchmarks, prints the table, and writes JSON if asked. Release builds only.
/// `filters`: only figures whose name contains one of them (and their references); all when empty.
func runBenchmarks(quick: Bool, runs: Int?, filters: [String], corpus: String?, tree: String?, outputs: Outputs) {
    let harness = Harness(runs: runs ?? (quick ? 3 : 5))
    var benchmarks: [any Benchmark] =
        CryptoSuite.benchmarks(quick: quick) + AllCoresSuite.benchmarks(quick: quick)
        + StorageSuite.benchmarks(quick: quick)
        + KeychainSuite.benchmarks(quick: quick) + BlobSuite.benchmarks(quick: quick, corpusDirectory: corpus)
        + SnapshotSuite.benchmarks(quick: quick, corpusDirectory: corpus, realTree: tree)
        + SyncSuite.benchmarks(quick: quick, corpusDirectory: corpus)
        + RemoteSuite.benchmarks(quick: quick, corpusDirectory: corpus) + PeersSuite.benchmarks(quick: quick)
    if !filters.isEmpty {
        // A figure keeps its references, so every ratio is still measured in the same run.
        func selected(_ benchmark: any Benchmark) -> Bool { filters.contains { benchmark.name.contains($0) } }
        let references = Set(benchmarks.filter(selected).flatMap(\.references))
        benchmarks = benchmarks.filter { selected($0) || references.contains($0.name) }
    }

    let machine = MachineDescription.current
    print("coffer-bench on \(machine.summary); median of \(harness.runs) interleaved runs after a warm-up")
    print("(figures use one core unless named \"all N cores\"; blobs and snapshots use all cores)")
    if let pinned = pinnedCores { print("pinned to \(pinned) core\(pinned == 1 ? "" : "s") (--cores)") }
    let skipped =
        (benchmarks.contains(where: { $0.name.hasPrefix("snapshots/") })
            ? SnapshotSuite.skippedPeers(quick: quick) : [])
        + PeersSuite.skippedPeers(quick: quick)
        + ((filters.isEmpty || filters.contains { "remote/".hasPrefix($0) || $0.hasPrefix("remote") })
            ? RemoteSuite.skipped(quick: quick) : [])
    for peer in skipped { print("skipped peer: \(peer)") }
    print("")
    let results: [Measurement]
    do {
        results = try harness.measure(benchmarks)
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: \(error)\n".utf8))
        exit(1)
    }

    let nameWidth = max(results.map(\.name.count).max() ?? 0, 6)
    func cell(_ value: Double) -> String { String(format: value < 10 ? "%12.2f" : "%12.1f", value) }
    print(
        "figure".padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            + "       median          min          max   vs reference"
    )
    for result in results {
        let ratio = result.comparisons.map { String(format: "%.2fx of %@", $0.ratio, $0.reference) }
            .joined(separator: "; ")
        print(
            result.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + " "
                + result.unit.padding(toLength: 5, withPad: " ", startingAt: 0)
                + cell(result.median) + " " + cell(result.min) + " " + cell(result.max) + "   " + ratio
        )
    }
    let report = Report(
        machine: machine,
        date: Date(),
        command: (["coffer-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "),
        runs: harness.runs,
        skippedPeers: skipped,
        results: results
    )
    do {
        if let path = outputs.json { try report.json().write(to: URL(fileURLWithPath: path)) }
        if let path = outputs.markdown { try Data(report.markdown().utf8).write(to: URL(fileURLWithPath: path)) }
        if let path = outputs.svg { try Data(report.svg().utf8).write(to: URL(fileURLWithPath: path)) }
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: cannot write a report file: \(error)\n".utf8))
        exit(1)
    }
}

/// Where to write the report besides the table.
struct Outputs {
    var json: String?
    var markdown: String?
    var svg: String?
}
