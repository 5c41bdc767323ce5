import Coffer
public import Foundation
import Glibc

/// Runs the built `coffer` against one throwaway vault, as the end-to-end tests do.
public struct CLIHarness: Sendable {
    /// The test's temporary directory (the vault is `vault` inside it).
    public let directory: TemporaryDirectory
    /// The `coffer` executable.
    public let coffer: URL
    /// `COFFER_VAULT` and `COFFER_PASSPHRASE` for the vault.
    public var environment: [String: String] {
        ["COFFER_VAULT": directory.path("vault").path, "COFFER_PASSPHRASE": "pw"]
    }

    /// A new temporary directory with a vault created in it, as `coffer init` makes it but with the
    /// fast scrypt cost of tests (``KDFParameters/insecureFastForTesting``): every command that
    /// unlocks it derives its key from the passphrase, and at the standard cost that was a tenth of a
    /// second of CPU each time, thousands of times a run. The tests of `coffer init` run it.
    public init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        let vault = try Vault.create(at: directory.path("vault"), passphrase: "pw", configuration: configuration)
        vault.close()
    }

    /// Runs `coffer arguments` with the vault's environment plus `extra`.
    @discardableResult
    public func run(_ arguments: [String], extra: [String: String] = [:]) throws -> Products.Result {
        try Products.run(coffer, arguments, environment: environment.merging(extra) { _, new in new })
    }

    /// Runs `coffer arguments --json` and parses its output; throws if the command fails.
    public func json(_ arguments: [String]) throws -> Any {
        let result = try run(arguments + ["--json"])
        guard result.status == 0 else {
            throw ProductError(description: "coffer \(arguments.joined(separator: " ")) failed: \(result.error)")
        }
        return try JSONSerialization.jsonObject(with: Data(result.output.utf8))
    }

    /// `coffer arguments` started with the vault's environment plus `extra`, its standard streams pipes; the
    /// caller waits for it (or kills it). This process's ``Watchdog`` stops it if this process ends
    /// first.
    public func start(_ arguments: [String], extra: [String: String] = [:]) throws -> RunningCoffer {
        let process = Process()
        process.executableURL = coffer
        process.arguments = arguments
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"].merging(extra) { _, new in new }) {
            _,
            new in new
        }
        let running = RunningCoffer(process: process)
        process.standardInput = running.input
        process.standardOutput = running.output
        process.standardError = running.error
        try process.run()
        running.guarded = Watchdog.guardProcess(process)
        return running
    }

    /// A `coffer put` reading a pipe that stays open: it holds the vault open until it is killed.
    /// Returns once it has had time to open the vault.
    public func holdVaultOpen() throws -> RunningCoffer {
        let holder = try start(["put", "held", "-"])
        Thread.sleep(forTimeInterval: 1.5)
        return holder
    }
}

/// A `coffer` process started by ``CLIHarness/start(_:)``.
public final class RunningCoffer: @unchecked Sendable {
    /// The process.
    public let process: Process
    /// Its standard input.
    public let input = Pipe()
    /// Its standard output.
    public let output = Pipe()
    /// Its standard error.
    public let error = Pipe()

    /// Its record in this process's ``Watchdog``'s ledger.
    var guarded: Watchdog.Record?

    init(process: Process) { self.process = process }

    /// Kills it (`SIGKILL`) and waits for it to end.
    public func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        guarded?.release()
    }
}
