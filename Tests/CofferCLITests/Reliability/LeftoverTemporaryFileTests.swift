import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Temporary files of killed reads (issue 38, finding 8): `get NAME F` and `export --out F` write
/// `.F.coffer-PID-N` and rename it into place; a SIGKILL leaves it. The next run that writes F removes
/// those whose process is gone, and nothing else.
@Suite(
    "The temporary file of a killed get or export is removed by the next run that writes the same file",
    .enabled(if: Strace.canTrace, "strace cannot trace here (ptrace not permitted)")
)
struct LeftoverTemporaryFileTests {
    /// A pid no process has: that of a child that has ended (reused only after the pid space wraps).
    static func endedProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    @Test("killed at its first piece, get and export leave a temporary file; the next run removes only dead ones")
    func leftoversRemoved() throws {
        let cli = try CLIHarness()
        let data = cli.directory.path("data")
        try RandomBytes.data(count: 9 << 20).write(to: data)
        #expect(try cli.run(["put", "data", data.path]).status == 0)
        let out = cli.directory.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)

        for (name, arguments) in [("got", ["get", "data"]), ("bundle", ["export", "--out"])] {
            let target = out.appendingPathComponent(name).path
            let killed = try Strace.run(
                ["-f", "-qq", "-o", cli.directory.path("strace.txt").path, "-e", "trace=pwrite64"]
                    + ["-e", "inject=pwrite64:signal=KILL:when=1", cli.coffer.path] + arguments + [target],
                environment: cli.environment
            )
            #expect(killed.status != 0, "\(name): the run was not killed")
            let left = TemporaryDirectory.listing(out).filter { $0.hasPrefix(".\(name).coffer-") }
            #expect(left.count == 1, "\(name): the killed run left \(left)")

            // Beside it: a living process's (this test's), another file's, a name of another shape,
            // and a symbolic link, all with the dead pid where they have one: none may go.
            let dead = try Self.endedProcessID()
            let kept = [
                ".\(name).coffer-\(getpid())-7", ".other.coffer-\(dead)-7", ".\(name).coffer-\(dead)-7x",
                ".\(name).coffer-\(dead)",
            ]
            for file in kept { try Data("x".utf8).write(to: out.appendingPathComponent(file)) }
            let link = ".\(name).coffer-\(dead)-8"
            try FileManager.default.createSymbolicLink(
                atPath: out.appendingPathComponent(link).path,
                withDestinationPath: data.path
            )
            let stale = ".\(name).coffer-\(dead)-9"
            try Data("x".utf8).write(to: out.appendingPathComponent(stale))

            let again = try cli.run(arguments + [target])
            #expect(again.status == 0, "\(name): \(again.error)")
            let after = Set(TemporaryDirectory.listing(out))
            for file in left + [stale] { #expect(!after.contains(file), "\(name): \(file) is still there") }
            for file in kept + [link] { #expect(after.contains(file), "\(name): \(file) was removed") }
            #expect(after.contains(name))
            for file in kept + [link] { try FileManager.default.removeItem(at: out.appendingPathComponent(file)) }
        }
        #expect(try Data(contentsOf: out.appendingPathComponent("got")) == Data(contentsOf: data))
    }
}
