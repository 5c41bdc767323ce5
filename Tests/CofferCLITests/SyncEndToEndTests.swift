import CofferTestSupport
import Foundation
import Testing

/// `coffer export|import|init --join` run as a user would: two vaults, one machine.
@Suite("coffer sync end to end")
struct SyncEndToEndTests {
    let cli: CLIHarness
    var directory: TemporaryDirectory { cli.directory }
    var vaultB: String { directory.path("vault-b").path }

    init() throws { cli = try CLIHarness() }

    /// Runs against vault B.
    @discardableResult
    func onB(_ arguments: [String]) throws -> Products.Result {
        try cli.run(arguments, extra: ["COFFER_VAULT": vaultB])
    }

    @Test(
        "a joined vault's first export back to the vault it joined from, named as devices lists it, sends only what changed"
    )
    func firstExportBackToOrigin() throws {
        let file = directory.path("large.bin")
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }).write(to: file)
        #expect(try cli.run(["put", "large", file.path]).status == 0)
        let bundle = directory.path("a.bundle").path
        #expect(try cli.run(["export", "--out", bundle, "--peer", "b"]).status == 0)
        #expect(try onB(["init", "--join", bundle]).status == 0)
        #expect(
            try onB(["item", "add", "--service", "mail", "--account", "ann", "--value", "v", "--sync"]).status == 0
        )
        // Both vaults are on this machine, so both devices carry its host name.
        let devices = try #require(try onB(["devices", "--json"]).output.data(using: .utf8))
        let list = try #require(try JSONSerialization.jsonObject(with: devices) as? [[String: Any]])
        let origin = try #require(list.first { $0["isThisDevice"] as? Bool == false }?["name"] as? String)
        let back = directory.path("back.bundle").path
        let result = try onB(["export", "--out", back, "--peer", origin, "--json"])
        #expect(result.status == 0, "\(result.error)")
        let exported = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(exported["isIncremental"] as? Bool == true, "\(exported)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: back)[.size] as? Int)
        #expect(size < 100_000, "\(size) bytes")
        #expect(try cli.run(["import", back]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "mail", "--account", "ann"]).output == "v")
    }

    @Test("export, init --join, import: syncable records travel, device-bound ones stay")
    func story() throws {
        let file = directory.path("photo.bin")
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: file)
        #expect(try cli.run(["put", "photo", file.path]).status == 0)
        #expect(
            try cli.run(["item", "add", "--service", "mail", "--account", "ann", "--value", "synced", "--sync"]).status
                == 0
        )
        #expect(try cli.run(["item", "add", "--service", "wifi", "--account", "home", "--value", "local"]).status == 0)

        let bundle = directory.path("a.bundle").path
        let exported = try #require(try cli.json(["export", "--out", bundle, "--peer", "b"]) as? [String: Any])
        let records = try #require(exported["records"] as? [String: Any])
        #expect(records["items"] as? Int == 1)
        #expect(records["blobs"] as? Int == 1)
        #expect(exported["deviceBoundLeftBehind"] as? Int == 1)
        #expect(exported["isIncremental"] as? Bool == false)

        let joined = try onB(["init", "--join", bundle, "--json"])
        #expect(joined.status == 0, "\(joined.error)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(joined.output.utf8)) as? [String: Any])
        #expect(((summary["imported"] as? [String: Any])?["applied"] as? [String: Any])?["blobs"] as? Int == 1)

        let restored = directory.path("photo.out")
        #expect(try onB(["get", "photo", restored.path]).status == 0)
        #expect(try Data(contentsOf: restored) == Data(contentsOf: file))
        #expect(try onB(["item", "get", "--service", "mail", "--account", "ann"]).output == "synced")
        let missing = try onB(["item", "get", "--service", "wifi", "--account", "home"])
        #expect(missing.status == 1)

        // One change, exported incrementally, imported twice (the second time changes nothing).
        #expect(try cli.run(["item", "update", "--service", "mail", "--value", "changed"]).status == 0)
        let delta = directory.path("delta.bundle").path
        let incremental = try #require(try cli.json(["export", "--out", delta, "--peer", "b"]) as? [String: Any])
        #expect(incremental["isIncremental"] as? Bool == true)
        #expect((incremental["records"] as? [String: Any])?["items"] as? Int == 1)
        #expect(incremental["chunks"] as? Int == 0)
        let applied = try onB(["import", delta])
        #expect(applied.status == 0)
        #expect(applied.output.contains("applied 1 item"))
        let again = try #require(
            try JSONSerialization.jsonObject(with: Data(try onB(["import", delta, "--json"]).output.utf8))
                as? [String: Any]
        )
        #expect(again["skipped"] as? Int == 1)
        #expect(try onB(["item", "get", "--service", "mail", "--account", "ann"]).output == "changed")
    }

    @Test("bad input: no --out, a missing or foreign or damaged bundle, a wrong join passphrase")
    func refusals() throws {
        let noOut = try cli.run(["export"])
        #expect(noOut.status == 64)
        #expect(noOut.error.contains("--out FILE"))

        let missing = try cli.run(["import", directory.path("nope.bundle").path])
        #expect(missing.status == 1)
        #expect(missing.error.contains("cannot open"))

        let bundle = directory.path("a.bundle").path
        #expect(try cli.run(["export", "--out", bundle]).status == 0)
        // A vault of another group refuses it, naming both groups.
        #expect(try onB(["init"]).status == 0)
        let foreign = try onB(["import", bundle])
        #expect(foreign.status == 1)
        #expect(foreign.error.contains("sync group"))

        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: bundle)))
        bytes[bytes.count - 5] ^= 1
        let damaged = directory.path("damaged.bundle").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let refused = try cli.run(["import", damaged])
        #expect(refused.status == 1)
        #expect(refused.error.contains("damaged"))

        let notABundle = directory.path("text.txt").path
        try Data("hello".utf8).write(to: URL(fileURLWithPath: notABundle))
        #expect(try cli.run(["import", notABundle]).error.contains("not a Coffer bundle"))

        let wrong = try cli.run(
            ["init", "--join", bundle],
            extra: ["COFFER_VAULT": directory.path("vault-c").path, "COFFER_PASSPHRASE": "wrong"]
        )
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("passphrase does not open"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("vault-c").path))
    }
}
