import CofferTestSupport
import Foundation
import Testing

/// `coffer-bench` as a user runs it: what an unoptimized build refuses, and what an optimized one
/// writes.
@Suite("coffer-bench: unoptimized builds refuse, reports follow the documented schema")
struct BenchmarkHarnessTests {
    /// Whether the tests were built with `COFFER_OPTIMIZED=1` (Tools/test), which compiles the
    /// build's `coffer-bench` optimized.
    static var optimizedBuild: Bool {
        #if COFFER_OPTIMIZED
        true
        #else
        false
        #endif
    }

    /// The `coffer-bench` that reports: the build's own when it is optimized, else the release
    /// build's (`swift build -c release`).
    static func reportingBench() throws -> URL {
        let bench =
            optimizedBuild
            ? Products.testBuildDirectory.appendingPathComponent("coffer-bench")
            : Products.testBuildDirectory.deletingLastPathComponent().appendingPathComponent("release/coffer-bench")
        guard FileManager.default.isExecutableFile(atPath: bench.path) else {
            throw ProductError(
                description: "\(bench.path) is missing; run 'swift build -c release' first, or Tools/test"
            )
        }
        return bench
    }

    @Test(
        "an unoptimized debug build refuses to report figures",
        .enabled(if: !optimizedBuild, "this build's coffer-bench is optimized (COFFER_OPTIMIZED=1)")
    )
    func debugRefuses() throws {
        let debug = Products.testBuildDirectory.appendingPathComponent("coffer-bench")
        let result = try Products.run(debug, ["--quick"])
        #expect(result.status == 1)
        #expect(result.error.contains("refusing to report figures from a debug build"))
        #expect(result.output.isEmpty)
    }

    @Test("bad options are usage errors naming the option")
    func usage() throws {
        let bench = try Self.reportingBench()
        for (arguments, text) in [
            (["--runs", "0"], "--runs"), (["--json"], "--json needs a value"), (["--nope"], "'--nope'"),
        ] {
            let result = try Products.run(bench, arguments)
            #expect(result.status == 64)
            #expect(result.error.contains(text))
        }
    }

    @Test("--json, --markdown and --svg write the report; the JSON has the documented fields")
    func reports() throws {
        let directory = try TemporaryDirectory()
        let (json, markdown, svg) = (directory.path("r.json"), directory.path("r.md"), directory.path("r.svg"))
        let result = try Products.run(
            try Self.reportingBench(),
            [
                "--filter", "(chunk id)", "--runs", "1", "--json", json.path, "--markdown", markdown.path,
                "--svg", svg.path,
            ]
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("x of crypto/sha-256 64 KiB"))

        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any])
        #expect(report["schemaVersion"] as? Int == 1)
        #expect((report["command"] as? String)?.hasPrefix("coffer-bench --filter") == true)
        #expect(report["runs"] as? Int == 1)
        #expect(report["date"] is String)
        #expect(report["skippedPeers"] is [Any])
        let machine = try #require(report["machine"] as? [String: Any])
        #expect(machine["cores"] is Int && machine["cpu"] is String && machine["memoryGiB"] is Int)
        let results = try #require(report["results"] as? [[String: Any]])
        // The filter's figures (one core and all cores) and the reference the one-core figure needs.
        let names = results.compactMap { $0["name"] as? String }
        #expect(names.first == "crypto/sha-256 64 KiB")
        #expect(names.contains("crypto/hmac-sha256 64 KiB (chunk id)"))
        #expect(names.dropFirst().allSatisfy { $0.contains("(chunk id)") })
        for figure in results {
            #expect(figure["suite"] as? String == "crypto")
            #expect(figure["unit"] as? String == "MB/s")
            #expect(figure["runs"] as? Int == 1)
            for field in ["median", "min", "max"] { #expect((figure[field] as? Double ?? 0) > 0, "\(field)") }
        }
        let hmac = try #require(results.first { $0["name"] as? String == "crypto/hmac-sha256 64 KiB (chunk id)" })
        #expect(hmac["reference"] as? String == "crypto/sha-256 64 KiB")
        #expect((hmac["ratio"] as? Double ?? 0) > 0)
        #expect(results[0]["reference"] == nil && results[0]["ratio"] == nil)

        let table = try String(contentsOf: markdown, encoding: .utf8)
        #expect(table.contains("| figure | median | min | max | vs reference in the same run |"))
        #expect(table.contains("| crypto/hmac-sha256 64 KiB (chunk id) |"))
        let chart = try String(contentsOf: svg, encoding: .utf8)
        #expect(chart.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(chart.contains("crypto/hmac-sha256 64 KiB (chunk id)"))
        #expect(chart.hasSuffix("</svg>\n"))
    }

    @Test(
        "--tree backs up and restores a given tree as the real one, each beside its bound; '|' is escaped in Markdown"
    )
    func realTree() throws {
        let directory = try TemporaryDirectory()
        let tree = directory.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        for index in 0..<20 {
            try Data(repeating: UInt8(index), count: 50_000).write(to: tree.appendingPathComponent("sub/f\(index)"))
        }
        let (json, markdown) = (directory.path("r.json"), directory.path("r.md"))
        let result = try Products.run(
            try Self.reportingBench(),
            [
                "--quick", "--filter", "(real tree)", "--runs", "1", "--tree", tree.path, "--json", json.path,
                "--markdown", markdown.path,
            ]
        )
        #expect(result.status == 0, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any])
        let results = try #require(report["results"] as? [[String: Any]])
        func figure(_ name: String) -> [String: Any]? { results.first { $0["name"] as? String == name } }
        let backup = try #require(figure("snapshots/coffer backup (real tree)"))
        let compression = "snapshots/tar | zstd -3, all cores (compression alone) (real tree)"
        let comparisons = try #require(backup["comparisons"] as? [[String: Any]])
        #expect(comparisons.map { $0["reference"] as? String } == [compression])
        #expect((comparisons.first?["ratio"] as? Double ?? 0) > 0)
        #expect(figure(compression) != nil && figure("snapshots/cp -a (the file system's copy) (real tree)") != nil)
        let restore = try #require(figure("snapshots/coffer restore (real tree)"))
        #expect(restore["reference"] as? String == "snapshots/cp -a (the file system's copy) (real tree)")
        #expect(!results.contains { ($0["name"] as? String)?.contains("(real tree)") == false })
        let table = try String(contentsOf: markdown, encoding: .utf8)
        #expect(table.contains("| snapshots/tar \\| zstd -3, all cores (compression alone) (real tree) |"))
        #expect(TemporaryDirectory.listing(tree.appendingPathComponent("sub")).count == 20, "a given tree stays")
    }

    @Test("--scale grows a vault stage by stage and reports each stage's costs")
    func scale() throws {
        let directory = try TemporaryDirectory()
        let json = directory.path("scale.json")
        let result = try Products.run(
            try Self.reportingBench(),
            ["--scale", "--scale-items", "12000", "--scale-blob-mib", "2", "--json", json.path]
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("items      get µs"))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any])
        #expect(report["mode"] as? String == "scale")
        #expect(report["blobBytes"] as? Int == 2 << 20)
        let stages = try #require(report["stages"] as? [[String: Any]])
        #expect(stages.map { $0["items"] as? Int } == [10_000, 12_000])
        for stage in stages {
            for field in [
                "getMicroseconds", "findMicroseconds", "putMicroseconds", "fullExportSeconds",
                "incrementalExportMilliseconds", "peakResidentMiB", "anonymousResidentMiB",
            ] {
                #expect((stage[field] as? Double ?? 0) > 0, "\(field)")
            }
        }
    }
}
