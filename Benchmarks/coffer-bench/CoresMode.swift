import Foundation

/// The core count this process was pinned to by a `--cores` run (which sets it in each child's
/// environment), or `nil`: the references then use that many threads, as they would on a machine
/// with that many cores.
let pinnedCores: Int? = ProcessInfo.processInfo.environment[CoresMode.pinnedVariable].flatMap { Int($0) }

/// `--cores LIST`: the backup and blob figures, with their references, measured pinned to each core
/// count in turn, and the speed-up curve and serial fraction (Amdahl) they imply.
///
/// Each count runs this program again under `taskset -c 0-(n-1)` (the CPU affinity every thread it
/// starts inherits, as a user's `taskset` gives it), with the same options, so a figure and its
/// references are measured side by side at that count. The parent collects the children's JSON.
enum CoresMode {
    /// The environment variable that tells a child the count it is pinned to.
    static let pinnedVariable = "COFFER_BENCH_PINNED_CORES"

    /// The figures `--cores` measures (by name), each with its references.
    static let filters = [
        "coffer backup", "blobs/put of incompressible data", "blobs/get of one large blob to a file",
    ]

    /// One figure across the core counts.
    struct Curve: Codable {
        let name: String
        let unit: String
        /// The core counts, ascending, and the figure's median at each.
        let cores: [Int]
        let medians: [Double]
        /// Each median over the one at the smallest count (time at the smallest over time at each).
        let speedUps: [Double]
        /// Amdahl's serial fraction s, fitted by least squares to T(n) = T(1)·(s + (1−s)/n);
        /// `nil` with fewer than two counts.
        let serialFraction: Double?
        /// The speed-up over one core that s predicts at 4, 8 and 16 cores.
        let predicted: [String: Double]
    }

    /// What `--cores --json FILE` writes: the curves, and each count's report as its child wrote it.
    struct ScalingReport: Encodable {
        /// Bumped when a field changes meaning or goes away.
        let schemaVersion = 1
        let machine: MachineDescription
        let date: Date
        let command: String
        let curves: [Curve]
        let reports: [ChildReport]
    }

    /// The part of a child's report read back.
    struct ChildReport: Codable {
        var cores: Int?
        let results: [Measurement]
    }

    /// Parses `1,2` or `1-4` or a mix into ascending, distinct counts.
    static func parse(_ text: String) -> [Int]? {
        var counts: Set<Int> = []
        for part in text.split(separator: ",") {
            let bounds = part.split(separator: "-", maxSplits: 1).map { Int($0) }
            guard let low = bounds.first ?? nil, let high = bounds.last ?? nil, low >= 1, low <= high else {
                return nil
            }
            counts.formUnion(low...high)
        }
        return counts.isEmpty ? nil : counts.sorted()
    }

    /// The CPUs this process may run on (`/proc/self/status`, `Cpus_allowed_list`), in order.
    static func allowedCPUs() -> [Int] {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }),
            let list = line.split(separator: ":", maxSplits: 1).last
        else { return Array(0..<ProcessInfo.processInfo.activeProcessorCount) }
        var cpus: [Int] = []
        for part in list.trimmingCharacters(in: .whitespaces).split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { Int($0) }
            if let low = bounds.first, let high = bounds.last, low <= high { cpus += Array(low...high) }
        }
        return cpus
    }

    /// Runs each count's child `passes` times and prints (and, with `jsonPath`, writes) the curves.
    static func run(cores: [Int], passes: Int, childArguments: [String], jsonPath: String?) throws {
        let cpus = allowedCPUs()
        guard let largest = cores.last, largest <= cpus.count else {
            throw BenchmarkError("--cores asks for \(cores.last ?? 0) cores; this process may use \(cpus.count)")
        }
        guard let taskset = SnapshotSuite.Peer.find("taskset") else {
            throw BenchmarkError("--cores needs taskset (apt-get install util-linux)")
        }
        var reports: [ChildReport] = []
        // Passes alternate the order of the counts, so drift on a shared machine (another job
        // starting) falls on every count alike; each count's figure is the median over the passes.
        for pass in 0..<passes {
            for count in pass % 2 == 0 ? cores : cores.reversed() {
                reports.append(try runChild(count: count, cpus: cpus, taskset: taskset, childArguments: childArguments))
            }
        }
        let curves = Self.curves(cores: cores, reports: reports)
        printCurves(curves)
        if let jsonPath {
            let report = ScalingReport(
                machine: .current,
                date: Date(),
                command: (["coffer-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "),
                curves: curves,
                reports: reports
            )
            try reportJSON(report).write(to: URL(fileURLWithPath: jsonPath))
        }
    }

    /// Runs this program pinned to the first `count` of `cpus` and reads back its report.
    static func runChild(count: Int, cpus: [Int], taskset: String, childArguments: [String]) throws -> ChildReport {
        let output = scratchDirectory().path + ".json"
        defer { unlink(output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: taskset)
        let list = cpus.prefix(count).map(String.init).joined(separator: ",")
        process.arguments =
            ["-c", list, CommandLine.arguments[0]] + childArguments
            + filters.flatMap { ["--filter", $0] } + ["--json", output]
        var environment = ProcessInfo.processInfo.environment
        environment[pinnedVariable] = "\(count)"
        process.environment = environment
        print("== pinned to \(count) core\(count == 1 ? "" : "s"): taskset -c \(list)")
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("the run pinned to \(count) cores failed (status \(process.terminationStatus))")
        }
        var report = try JSONDecoder().decode(ChildReport.self, from: Data(contentsOf: URL(fileURLWithPath: output)))
        report.cores = count
        print("")
        return report
    }

    /// A curve for every figure measured at every count, in the first report's order; a count
    /// measured in several passes counts with the median of its passes' medians.
    static func curves(cores: [Int], reports: [ChildReport]) -> [Curve] {
        guard let first = reports.first else { return [] }
        return first.results.compactMap { result in
            let medians = cores.compactMap { count -> Double? in
                let values = reports.filter { $0.cores == count }
                    .compactMap { report in report.results.first { $0.name == result.name }?.median }.sorted()
                return values.isEmpty ? nil : values[values.count / 2]
            }
            guard medians.count == cores.count, medians.allSatisfy({ $0 > 0 }) else { return nil }
            // Rates: the time of a run is proportional to 1 / rate.
            let times = medians.map { 1 / $0 }
            let fraction = cores.count >= 2 ? serialFraction(cores: cores, times: times) : nil
            var predicted: [String: Double] = [:]
            if let fraction {
                for count in [4, 8, 16] { predicted["\(count)"] = 1 / (fraction + (1 - fraction) / Double(count)) }
            }
            return Curve(
                name: result.name,
                unit: result.unit,
                cores: cores,
                medians: medians,
                speedUps: times.map { times[0] / $0 },
                serialFraction: fraction,
                predicted: predicted
            )
        }
    }

    /// Amdahl's serial fraction s that best fits `times` at `cores` (least squares on the times
    /// relative to the smallest count, whose T(1) is unknown when 1 is not among them), in [0, 1].
    static func serialFraction(cores: [Int], times: [Double]) -> Double {
        func model(_ s: Double, _ n: Int) -> Double { s + (1 - s) / Double(n) }
        func error(_ s: Double) -> Double {
            zip(cores, times).reduce(0) { sum, point in
                let predicted = model(s, point.0) / model(s, cores[0]) * times[0]
                let difference = (predicted - point.1) / times[0]
                return sum + difference * difference
            }
        }
        // The error is smooth and has one minimum in [0, 1]: a fine grid, then a finer one around it.
        var best = 0.0
        for step in 0...1000 where error(Double(step) / 1000) < error(best) { best = Double(step) / 1000 }
        let low = max(best - 0.001, 0)
        for step in 0...200 {
            let s = low + Double(step) * 0.00001
            if s <= 1, error(s) < error(best) { best = s }
        }
        return best
    }

    static func printCurves(_ curves: [Curve]) {
        guard let cores = curves.first?.cores else {
            print("no figure was measured at every core count")
            return
        }
        let width = max(curves.map(\.name.count).max() ?? 0, 6)
        print("speed-up with cores (median rates, each count's run pinned with taskset; Amdahl fit)")
        print(
            "figure".padding(toLength: width, withPad: " ", startingAt: 0)
                + cores.map { count -> String in
                    let label = "\(count) core\(count == 1 ? "" : "s")"
                    return String(repeating: " ", count: max(10 - label.count, 1)) + label
                }.joined()
                + "  speed-up  serial s    ×4    ×8   ×16 (predicted)"
        )
        for curve in curves {
            let predicted = ["4", "8", "16"].map { curve.predicted[$0].map { String(format: "%6.2f", $0) } ?? "     -" }
            print(
                curve.name.padding(toLength: width, withPad: " ", startingAt: 0)
                    + curve.medians.map { String(format: "%10.1f", $0) }.joined()
                    + String(format: "  %7.2fx", curve.speedUps.last ?? 1)
                    + (curve.serialFraction.map { String(format: "  %8.3f", $0) } ?? "         -")
                    + predicted.joined()
            )
        }
        print("(rates in each figure's unit; speed-up: the largest count over the smallest)")
    }
}
