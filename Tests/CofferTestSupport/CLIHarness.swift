public import Foundation

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

    /// A new temporary directory with a vault created in it (`coffer init`).
    public init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
        let created = try run(["init"])
        guard created.status == 0 else { throw ProductError(description: "coffer init failed: \(created.error)") }
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
}
