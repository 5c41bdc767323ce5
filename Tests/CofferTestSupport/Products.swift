public import Foundation

/// Finds the executables the package built (`coffer`, `coffer-test-fixture`) and the scripts in
/// `Tools`, and runs them.
public enum Products {
    /// The package's folder, found from this source file's place in it.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The script `Tools/name`.
    public static func tool(_ name: String) -> URL { packageRoot.appendingPathComponent("Tools/\(name)") }

    /// The build products directory the executables are run from: `$COFFER_BUILD_DIR` (to run the
    /// end-to-end tests against another build, such as release), else ``testBuildDirectory``.
    public static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["COFFER_BUILD_DIR"] {
            return URL(fileURLWithPath: override)
        }
        return testBuildDirectory
    }

    /// The directory of the running test binary: the build the tests were compiled in (debug, from
    /// `swift test`).
    public static var testBuildDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// The path of a built executable.
    ///
    /// - Throws: If it is not there (build with `swift build` before `swift test`).
    public static func executable(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw ProductError(
                description: "\(url.path) is missing; run 'swift build' before 'swift test' (Tools/test does)"
            )
        }
        return url
    }

    /// A fresh handle on `/dev/null` for a child's output that nobody reads. Never a child's input:
    /// on some sandboxes `/dev/null` is an ordinary file holding what others wrote to it (a full-suite
    /// run read strace's trace back from it as an item's value).
    public static func nullDevice() -> FileHandle {
        FileHandle(forUpdatingAtPath: "/dev/null") ?? FileHandle.nullDevice
    }

    /// Runs `executable` with `arguments` in exactly `environment`, killing it with SIGKILL after
    /// `delay` seconds if it is still running (standard input empty, output discarded): the crash
    /// loops' way to end a write at a random moment.
    ///
    /// - Returns: Whether it was killed.
    /// - Throws: ``ProductError`` if it failed by itself.
    public static func runKilled(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String],
        after delay: Double
    ) throws -> Bool {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = nullDevice()
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(delay)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal { return true }
        guard process.terminationStatus == 0 else {
            throw ProductError(
                description:
                    "\(executable.lastPathComponent) \(arguments.joined(separator: " ")) failed by itself: \(message)"
            )
        }
        return false
    }

    /// What a finished process left.
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
        public let error: String
    }

    /// What every `coffer` the tests run is given: `coffer init` then makes vaults with the fast
    /// scrypt cost of tests (``KDFParameters/insecureFastForTesting``, as ``CLIHarness`` does through
    /// the library). Every command that unlocks a vault derives its key from the passphrase, and at
    /// the standard cost that was a tenth of a second of CPU each time, thousands of times a run. A
    /// test of the standard cost passes the name with an empty value.
    public static let weakenKDF = (name: "COFFER_TESTONLY_WEAKEN_KDF", value: "1")

    /// Runs `executable` with `arguments` and `environment` (added to a minimal one), waits for it, and
    /// returns its exit status and output. Standard input holds `input` (at most a pipe's buffer, 64
    /// KiB), or nothing, as in CI. While it runs, this process's ``Watchdog`` guards it.
    public static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String] = [:],
        currentDirectory: URL? = nil,
        input text: String? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var base = [
            "PATH": "/usr/bin:/bin", "HOME": ProcessInfo.processInfo.environment["HOME"] ?? "/tmp",
            Self.weakenKDF.name: Self.weakenKDF.value,
        ]
        base.merge(environment) { _, new in new }
        process.environment = base
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        // Standard input ends at once: a pipe closed at our end (not /dev/null, which is an ordinary
        // file on some sandboxes, holding whatever anything wrote to it).
        let input = Pipe()
        process.standardInput = input
        try process.run()
        let guarded = Watchdog.guardProcess(process)
        defer { guarded?.release() }
        if let text { try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8)) }
        try? input.fileHandleForWriting.close()
        // Drain standard error on another thread while this one drains standard output, so a chatty
        // child never blocks on a full pipe.
        let errorData = ErrorCollector()
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errorData.data = error.fileHandleForReading.readDataToEndOfFile()
            drained.signal()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            output: String(decoding: outputData, as: UTF8.self),
            error: String(decoding: errorData.data, as: UTF8.self)
        )
    }
}

/// A product that should have been built is missing.
public struct ProductError: Error, CustomStringConvertible {
    public let description: String

    /// An error saying `description`.
    public init(description: String) { self.description = description }
}

/// Holds what the draining thread read; the semaphore orders the write before the read.
private final class ErrorCollector: @unchecked Sendable {
    var data = Data()
}
