import CofferTestSupport
import Foundation
import Testing

/// Core dumps (issue 8): a `coffer` process that crashes while it holds a vault's keys and decrypted
/// data leaves no core file, because it turns core dumps off before it reads a passphrase. A control
/// process crashed the same way shows that this machine would otherwise have written one.
@Suite("Core dumps: a coffer process crashing with secrets in memory leaves no core file")
struct CoreDumpTests {
    /// What became of one process crashed with SIGSEGV in the middle of writing to a pipe.
    struct Crash {
        /// The process's core file size limit, as `/proc/PID/limits` showed it before the crash.
        let coreLimit: String
        /// The signal that ended the process (0 if it exited).
        let signal: Int32
        /// Files named `core*` in its working directory afterwards.
        let coreFiles: [String]
    }

    /// Whether the kernel writes cores as files in the crashing process's working directory, so a
    /// missing core file means something (`core_pattern` a relative name, not a pipe to a collector).
    static var coresLandInWorkingDirectory: Bool {
        guard let pattern = try? String(contentsOfFile: "/proc/sys/kernel/core_pattern", encoding: .utf8) else {
            return false
        }
        let trimmed = pattern.trimmingCharacters(in: .whitespacesAndNewlines)
        return !trimmed.hasPrefix("|") && !trimmed.contains("/") && !trimmed.isEmpty
    }

    /// Starts `executable arguments` with core dumps allowed (`ulimit -c unlimited`) in `directory`,
    /// waits until it has written some output (so it is busy mid-task), crashes it with SIGSEGV and
    /// reports what it left.
    static func crash(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String],
        in directory: URL
    ) throws -> Crash {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "ulimit -c unlimited && exec \"$@\"", "bash", executable.path] + arguments
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { _, new in new }
        process.currentDirectoryURL = directory
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = Products.nullDevice()
        try process.run()
        try? input.fileHandleForWriting.close()
        // The first bytes show it is at work; then nobody reads, so it blocks on a full pipe.
        let first = output.fileHandleForReading.readData(ofLength: 4096)
        #expect(!first.isEmpty, "\(executable.lastPathComponent) wrote nothing before the crash")
        let limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
        let coreLimit =
            limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map {
                $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2).joined(separator: " ")
            } ?? "unknown"
        kill(process.processIdentifier, SIGSEGV)
        // A crash handler that blocks (the Swift backtracer writing to the full pipe) would keep it alive.
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        #expect(!process.isRunning, "\(executable.lastPathComponent) was still running 20 s after SIGSEGV")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? output.fileHandleForReading.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("core") }
        return Crash(
            coreLimit: coreLimit,
            signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : 0,
            coreFiles: files
        )
    }

    @Test("coffer get, crashed while streaming a blob of canary text, writes no core; yes, crashed alike, does")
    func noCoreFile() throws {
        let cli = try CLIHarness()
        let canary = "CANARY-core-dump-5e1d"
        let content = Data(String(repeating: canary + "\n", count: 200_000).utf8)
        let file = cli.directory.path("secret.txt")
        try content.write(to: file)
        let stored = try cli.run(["put", "secret", file.path])
        try #require(stored.status == 0, "coffer put: \(stored.error)")

        let cofferDirectory = cli.directory.path("coffer-cwd")
        let controlDirectory = cli.directory.path("control-cwd")
        for directory in [cofferDirectory, controlDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let coffer = try Self.crash(cli.coffer, ["get", "secret"], environment: cli.environment, in: cofferDirectory)
        #expect(coffer.signal == SIGSEGV)
        #expect(coffer.coreLimit == "0 0", "coffer ran with a core size limit of \(coffer.coreLimit)")
        #expect(coffer.coreFiles.isEmpty, "coffer left \(coffer.coreFiles)")

        if Self.coresLandInWorkingDirectory {
            let control = try Self.crash(
                URL(fileURLWithPath: "/usr/bin/yes"),
                [],
                environment: [:],
                in: controlDirectory
            )
            #expect(control.signal == SIGSEGV)
            #expect(control.coreLimit == "unlimited unlimited")
            #expect(!control.coreFiles.isEmpty, "the control process left no core, so the check above proves nothing")
        }
    }
}
