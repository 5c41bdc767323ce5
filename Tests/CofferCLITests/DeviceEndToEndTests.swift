import CofferTestSupport
import Foundation
import Testing

/// `coffer device show` run as a user would: every vault, made or joined, has its own device identity,
/// shown without the passphrase; one made by an older Coffer gets its keys once unlocked.
@Suite("coffer device end to end")
struct DeviceEndToEndTests {
    let cli: CLIHarness

    init() throws { cli = try CLIHarness() }

    /// `device show --json` for the vault at `vault` (the harness's by default), with `passphrase` if any.
    func identity(vault: String? = nil, passphrase: String? = "pw") throws -> [String: String] {
        var environment = ["COFFER_VAULT": vault ?? cli.environment["COFFER_VAULT"]!]
        environment["COFFER_PASSPHRASE"] = passphrase
        let result = try Products.run(cli.coffer, ["device", "show", "--json"], environment: environment)
        #expect(result.status == 0, "\(result.error)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: String])
    }

    @Test("init makes an identity; it shows without the passphrase; a joined vault has its own")
    func madeAndJoined() throws {
        let first = try identity()
        #expect(first["encryptionKey"]?.count == 64 && first["signingKey"]?.count == 64)
        #expect(first["fingerprint"]?.count == 24)
        #expect(try identity(passphrase: nil) == first, "no passphrase needed, and it does not change")
        let text = try cli.run(["device", "show"])
        #expect(text.output.contains("Fingerprint:     \(first["fingerprint"]!)"))

        let bundle = cli.directory.path("a.bundle").path
        #expect(try cli.run(["export", "--out", bundle]).status == 0)
        let other = cli.directory.path("vault-b").path
        #expect(try cli.run(["init", "--join", bundle], extra: ["COFFER_VAULT": other]).status == 0)
        let joined = try identity(vault: other, passphrase: nil)
        #expect(joined["deviceID"] != first["deviceID"])
        #expect(joined["encryptionKey"] != first["encryptionKey"] && joined["signingKey"] != first["signingKey"])
    }

    @Test("a vault from before device keys: refused locked with what to do, made once with the passphrase")
    func olderVault() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v1/vault")
        let vault = cli.directory.path("old")
        try FileManager.default.copyItem(at: fixtures, to: vault)
        let locked = try Products.run(cli.coffer, ["device", "show"], environment: ["COFFER_VAULT": vault.path])
        #expect(locked.status == 1)
        #expect(locked.error.contains("no device keys yet") && locked.error.contains("passphrase"), "\(locked.error)")
        let made = try identity(vault: vault.path, passphrase: "fixture passphrase")
        #expect(try identity(vault: vault.path, passphrase: nil) == made)
    }

    @Test("two processes giving an older vault its device keys at once make one identity, which both print")
    func concurrentUpgrade() throws {
        final class Outputs: @unchecked Sendable {
            private let lock = NSLock()
            private(set) var results: [Products.Result] = []
            func add(_ result: Products.Result) { lock.withLock { results.append(result) } }
        }
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v1/vault")
        for round in 0..<3 {
            let vault = cli.directory.path("old-\(round)")
            try FileManager.default.copyItem(at: fixtures, to: vault)
            let environment = ["COFFER_VAULT": vault.path, "COFFER_PASSPHRASE": "fixture passphrase"]
            let coffer = cli.coffer
            let outputs = Outputs()
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                if let result = try? Products.run(coffer, ["device", "show", "--json"], environment: environment) {
                    outputs.add(result)
                }
            }
            #expect(outputs.results.count == 2 && outputs.results.allSatisfy { $0.status == 0 }, "round \(round)")
            #expect(Set(outputs.results.map(\.output)).count == 1, "round \(round): both print the one identity")
            #expect(
                try identity(vault: vault.path, passphrase: nil)
                    == (try identity(vault: vault.path, passphrase: "fixture passphrase"))
            )
        }
    }
}
