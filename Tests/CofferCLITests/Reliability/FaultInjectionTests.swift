import CofferTestSupport
import Foundation
import Testing

/// Faults injected into a real `coffer` process with strace (issue 8): SIGKILL at the k-th
/// `fdatasync` for every k, and full disk or I/O errors at writes and syncs. Every case ends with the
/// vault opening, `verify --read-data` clean, and what it held before unchanged.
/// strace, which injects the faults.
enum Strace {
    static let executable = URL(fileURLWithPath: "/usr/bin/strace")

    /// Whether strace is installed and may trace a child here (containers can forbid ptrace).
    static var canTrace: Bool {
        let trace = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-strace-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: trace) }
        return (try? run(["-f", "-qq", "-o", trace.path, "/bin/true"]).status) == 0
    }

    /// Runs strace with `arguments` after closing every descriptor above 2 it would inherit: children
    /// spawned at the same moment by other tests leave pipe ends open in this process, and a strace
    /// holding one wrote its trace into another child's output (seen in full-suite runs).
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Products.Result {
        let closeInherited =
            "for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ \"$n\" -gt 2 ]; then eval \"exec $n>&-\"; fi; done; "
            + "exec \"$@\""
        return try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", closeInherited, "strace", executable.path] + arguments,
            environment: environment
        )
    }
}

@Suite(
    "Faults: killed at each sync, full disk and I/O errors; the vault stays consistent",
    .enabled(if: Strace.canTrace, "strace cannot trace here (ptrace not permitted)")
)
struct FaultInjectionTests {
    let cli: CLIHarness
    let scratch: URL

    init() throws {
        cli = try CLIHarness()
        scratch = cli.directory.path("scratch")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    /// Runs `coffer arguments` under strace with `options` (threads followed, trace output dropped).
    func traced(_ options: [String], _ arguments: [String]) throws -> Products.Result {
        try Strace.run(
            ["-f", "-qq", "-o", scratch.appendingPathComponent("strace.txt").path] + options + [cli.coffer.path]
                + arguments,
            environment: cli.environment
        )
    }

    /// What the vault shows of itself: its blobs and items, for "nothing changed" checks.
    func visibleState() throws -> String {
        let blobs = try cli.run(["ls", "--json"])
        let items = try cli.run(["item", "find", "--json"])
        let snapshots = try cli.run(["snapshots", "--json"])
        return blobs.output + items.output + snapshots.output
    }

    func expectClean(_ context: String) throws {
        let verify = try cli.run(["verify", "--read-data"])
        #expect(verify.status == 0, "\(context): verify says \(verify.output) \(verify.error)")
    }

    @Test("SIGKILL at the k-th fdatasync, for every k, of a blob put, an item add and a backup")
    func killAtEverySync() throws {
        let writes = [
            try LoggedWrite.blob(1, size: 12 << 20, seed: 1, in: scratch), LoggedWrite.item(2, seed: 2),
            try LoggedWrite.snapshot(3, seed: 3, in: scratch),
        ]
        var kills = 0
        for write in writes {
            for k in 1...200 {
                let result = try traced(
                    ["-e", "trace=fdatasync", "-e", "inject=fdatasync:signal=KILL:when=\(k)"],
                    write.arguments
                )
                try expectClean("\(write), killed at fdatasync \(k)")
                let presence = try write.presence(in: cli, scratch: scratch)
                if result.status == 0 {
                    #expect(presence == .intact, "\(write) after all its syncs")
                    break
                }
                kills += 1
                #expect(presence == .absent || presence == .intact, "\(write), killed at fdatasync \(k): \(presence)")
                if presence == .intact { break }
            }
            #expect(try write.presence(in: cli, scratch: scratch) == .intact || write.arguments[0] == "item")
        }
        #expect(kills >= writes.count)
        print(
            "reliability: \(kills) kills at the k-th fdatasync (every k of a put, an item add, a backup), all survived"
        )
    }

    @Test("Full disk and I/O errors at writes and syncs fail with a clear message and change nothing")
    func injectedErrors() throws {
        #expect(
            try cli.run(["item", "add", "--service", "kept", "--account", "a", "--value", "v", "--sync"]).status == 0
        )
        let kept = try LoggedWrite.blob(0, size: 3 << 20, seed: 9, in: scratch)
        #expect(try cli.run(kept.arguments).status == 0)
        let before = try visibleState()

        // (what, strace options, the write, what the message must say)
        let cases: [(String, [String], LoggedWrite, String)] = [
            (
                "EIO at the first fdatasync of a put",
                ["-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO:when=1"],
                try .blob(10, size: 5 << 20, seed: 10, in: scratch), "input/output error"
            ),
            (
                "EIO at the third fdatasync of a put",
                ["-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO:when=3"],
                try .blob(11, size: 24 << 20, seed: 11, in: scratch), "input/output error"
            ),
            (
                "ENOSPC at the fifth multi-page write of a put",
                ["-e", "trace=writev", "-e", "inject=writev:error=ENOSPC:when=5"],
                try .blob(15, size: 12 << 20, seed: 15, in: scratch), "disk is full"
            ),
            (
                "ENOSPC at the first page write of a put",
                ["-e", "trace=pwrite64", "-e", "inject=pwrite64:error=ENOSPC:when=1"],
                try .blob(12, size: 5 << 20, seed: 12, in: scratch), "disk is full"
            ),
            (
                "ENOSPC at the first page write of an item add",
                ["-e", "trace=pwrite64", "-e", "inject=pwrite64:error=ENOSPC:when=1"],
                .item(13, seed: 13), "disk is full"
            ),
            (
                "EIO at the first fdatasync of a backup",
                ["-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO:when=1"],
                try .snapshot(14, seed: 14, in: scratch), "input/output error"
            ),
        ]
        var injected = 0
        for (what, options, write, message) in cases {
            let result = try traced(options, write.arguments)
            #expect(result.status == 1, "\(what): status \(result.status)")
            #expect(result.error.contains(message), "\(what): \(result.error)")
            #expect(try write.presence(in: cli, scratch: scratch) == .absent, "\(what)")
            #expect(try visibleState() == before, "\(what)")
            try expectClean(what)
            injected += 1
        }

        // Exports: the bundle file is written under a temporary name; a failure leaves no file at all.
        let exports = cli.directory.path("exports")
        try FileManager.default.createDirectory(at: exports, withIntermediateDirectories: true)
        let bundle = exports.appendingPathComponent("out.bundle").path
        let exportCases: [(String, [String], String)] = [
            (
                // The bundle is written in pieces with pwrite (WriteBehindFile).
                "ENOSPC at the first piece of an export",
                ["-e", "trace=pwrite64", "-e", "inject=pwrite64:error=ENOSPC:when=1"], "disk is full"
            ),
            (
                "EIO at the fsync of an export", ["-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=1"],
                "input/output error"
            ),
        ]
        for (what, options, message) in exportCases {
            let result = try traced(options, ["export", "--out", bundle])
            #expect(result.status == 1, "\(what): status \(result.status)")
            #expect(result.error.lowercased().contains(message), "\(what): \(result.error)")
            #expect(TemporaryDirectory.listing(exports).isEmpty, "\(what): left \(TemporaryDirectory.listing(exports))")
            #expect(try visibleState() == before, "\(what)")
            injected += 1
        }
        #expect(try cli.run(["export", "--out", bundle]).status == 0)
        print("reliability: \(injected) injected errors (ENOSPC, EIO at writes and syncs), each refused cleanly")
    }
}
