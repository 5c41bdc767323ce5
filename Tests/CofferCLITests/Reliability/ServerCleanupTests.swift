import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Issue 44: a test process killed at any moment leaves nothing it started running. The test binary
/// itself runs one S3-backed test (both servers, SeaweedFS and moto) as a child, which is killed
/// (mostly SIGKILL, sometimes SIGTERM or SIGINT) at a seeded random moment: before its servers
/// start, while they start, while the test uses them, or after it ended by itself. Then nothing the
/// child started may be left once its watchdogs have done their work: no process whose environment
/// carries the child's run directory (every script and server the child starts inherits it), and
/// nothing its ledgers record (`Tools/watchdog check`, the end-of-run check of `Tools/test`). Both
/// servers, once used, ignore SIGTERM for longer than the grace period (moto for good), so a watchdog
/// that only sent SIGTERM fails this test.
@Suite("S3 servers and watchdogs do not outlive a test process killed at random moments", .serialized)
struct ServerCleanupTests {
    /// The S3-backed test the child runs: it starts both servers, and takes ten to twenty seconds.
    static let filter = "CofferTests.RemoteSyncTests/onceInTheStore"

    /// `COFFER_SERVER_KILL_ROUNDS`, else 4.
    static var rounds: Int {
        ProcessInfo.processInfo.environment["COFFER_SERVER_KILL_ROUNDS"].flatMap { Int($0) } ?? 4
    }

    @Test("killed at random moments of an S3-backed test, the test process leaves no server or watchdog behind")
    func killedAtRandomMoments() throws {
        let seed =
            ProcessInfo.processInfo.environment["COFFER_SERVER_KILL_SEED"].flatMap { UInt64($0) }
            ?? .random(in: 1...99_999)
        var generator = SplitMix64(seed: seed)
        let scratch = try TemporaryDirectory()
        let base =
            ProcessInfo.processInfo.environment["COFFER_RUN_DIR"].map { URL(fileURLWithPath: $0) } ?? scratch.url
        var serversSeen = 0
        for round in 0..<Self.rounds {
            let run = base.appendingPathComponent("server-kill-\(seed)-\(round)")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            // Even rounds count the delay from the moment both servers are recorded, so that some kills
            // surely land while the test uses them; odd ones from the child's start (its servers may
            // not be up yet, or the child may end by itself first).
            let afterServers = round % 2 == 0
            let delay = Double(generator.next() % (afterServers ? 8_000 : 20_000)) / 1000
            let signal = [SIGKILL, SIGKILL, SIGTERM, SIGINT][Int(generator.next() % 4)]
            let moment = "\(afterServers ? "after both servers started" : "after the child started") + \(delay) s"
            let replay = "seed \(seed), round \(round) (replay: COFFER_SERVER_KILL_SEED=\(seed))"

            let child = try Self.startChild(run: run)
            let guarded = Watchdog.guardProcess(child)
            if afterServers {
                let started = Self.wait(upTo: 120) { !child.isRunning || Self.serversRecorded(in: run).count == 2 }
                #expect(started && child.isRunning, "\(replay): the servers did not both start; see \(run.path)")
            }
            _ = Self.wait(upTo: delay) { !child.isRunning }
            let killed = child.isRunning
            if killed { kill(child.processIdentifier, signal) }
            child.waitUntilExit()
            guarded?.release()
            if !Self.serversRecorded(in: run).isEmpty { serversSeen += 1 }

            let how =
                killed ? "was killed by signal \(signal) \(moment)" : "ended by itself before the kill due \(moment)"
            var left: [String] = []
            _ = Self.wait(upTo: 60) {
                left = Self.carrying(run)
                return left.isEmpty
            }
            #expect(left.isEmpty, "\(replay): the child \(how); still running: \(left)")
            for line in left { if let pid = Int32(line.prefix { $0 != " " }) { kill(pid, SIGKILL) } }
            let check = try Products.run(
                Products.tool("watchdog"),
                ["check", run.path, "--wait", "0"],
                environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
            )
            #expect(check.status == 0, "\(replay): the child \(how); Tools/watchdog check: \(check.error)")
        }
        #expect(serversSeen > 0, "seed \(seed): no round got as far as a server; the test proved nothing")
        print("server cleanup: \(Self.rounds) rounds (seed \(seed)), \(serversSeen) with servers, nothing left")
    }

    /// The test binary running ``filter``, with `COFFER_RUN_DIR` set to `run` and its output in
    /// `run/child.log`.
    static func startChild(run: URL) throws -> Process {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", filter]
        child.environment = ProcessInfo.processInfo.environment.merging(["COFFER_RUN_DIR": run.path]) { _, new in new }
        let log = run.appendingPathComponent("child.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        child.standardOutput = handle
        child.standardError = handle
        child.standardInput = Pipe()
        try child.run()
        try handle.close()
        return child
    }

    /// The servers whose watchdogs have recorded them under `run` (`Tools/s3-servers` puts each
    /// server's ledger there, named after the server).
    static func serversRecorded(in run: URL) -> Set<String> {
        Set(
            TemporaryDirectory.listing(run).compactMap { ledger in
                let server = String(ledger.prefix { $0 != "." })
                guard ["seaweedfs", "moto"].contains(server) else { return nil }
                let records = TemporaryDirectory.listing(run.appendingPathComponent(ledger))
                return records.contains { $0.hasPrefix("process-") && $0.hasSuffix(".record") } ? server : nil
            }
        )
    }

    /// Every process whose environment holds `COFFER_RUN_DIR=run`: what the child started, recorded or
    /// not, each as "PID: command line".
    static func carrying(_ run: URL) -> [String] {
        let marker = Array("COFFER_RUN_DIR=\(run.path)".utf8)
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
        return pids.compactMap { pid in
            guard pid != getpid(), let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                environment.split(separator: 0).contains(where: { $0.elementsEqual(marker) })
            else { return nil }
            let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map {
                String(decoding: $0.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            }
            return "\(pid): \(command?.prefix(160) ?? "?")"
        }
    }

    /// Polls `done` every 0.1 s for up to `seconds`; whether it came true.
    static func wait(upTo seconds: Double, until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !done() {
            if Date() >= deadline { return false }
            usleep(100_000)
        }
        return true
    }
}
