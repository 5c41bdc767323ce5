import CofferTestSupport
import Foundation
import Testing

/// `coffer put --write-only` and `coffer backup --write-only` through the built binary: a client that
/// holds no passphrase adds, and cannot read, list, delete or restore; the owner reads everything back.
@Suite("Write-only clients, end to end")
struct WriteOnlyEndToEndTests {
    let cli: CLIHarness
    let pins: URL

    init() throws {
        cli = try CLIHarness()
        pins = cli.directory.path("pins")
    }

    /// Runs coffer with the vault but no passphrase anywhere.
    func client(_ arguments: [String], pins: URL? = nil) throws -> Products.Result {
        try Products.run(
            cli.coffer,
            arguments,
            environment: [
                "COFFER_VAULT": cli.directory.path("vault").path,
                "COFFER_WRITE_KEY_PINS": (pins ?? self.pins).path,
            ]
        )
    }

    @Test("put and backup with no passphrase; get, ls, rm and restore refused; the owner reads it all exactly")
    func writeOnlyRoundTrip() throws {
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        let content = Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) })
        try content.write(to: tree.appendingPathComponent("data.bin"))
        try Data("note".utf8).write(to: tree.appendingPathComponent("sub/note.txt"))
        try cli.run(["put", "db.dump", tree.appendingPathComponent("sub/note.txt").path])

        let refusedFirst = try client(["put", "--write-only", "early", tree.appendingPathComponent("data.bin").path])
        #expect(refusedFirst.status == 1)
        #expect(refusedFirst.error.contains("write-only enable"), "\(refusedFirst.error)")

        let enabled = try cli.json(["write-only", "enable"]) as? [String: String]
        let fingerprint = try #require(enabled?["writeKey"])
        let put = try client(["put", "--write-only", "db.dump", tree.appendingPathComponent("data.bin").path])
        #expect(put.status == 0, "\(put.error)")
        // The first contact (here the refused attempt) says which key it pinned.
        #expect(refusedFirst.error.contains(fingerprint), "\(refusedFirst.error)")
        #expect(put.error.contains("@"), "the stored name is listed: \(put.error)")
        let backup = try client(["backup", "--write-only", tree.path, "--name", "nightly"])
        #expect(backup.status == 0, "\(backup.error)")
        #expect(try String(contentsOf: pins, encoding: .utf8).contains(fingerprint))

        for arguments in [
            ["get", "db.dump", cli.directory.path("out").path], ["ls"], ["rm", "db.dump"],
            ["restore", "nightly", cli.directory.path("restored").path], ["snapshots"],
        ] {
            let refused = try client(arguments)
            #expect(refused.status == 1, "coffer \(arguments.joined(separator: " ")): \(refused.status)")
            #expect(refused.error.contains("passphrase"), "\(refused.error)")
        }
        let wrongKey = try client([
            "put", "--write-only", "--write-key", "0000-0000-0000-0000-0000", "x",
            tree.appendingPathComponent("sub/note.txt").path,
        ])
        #expect(wrongKey.status == 1)
        #expect(wrongKey.error.contains("nothing was written"), "\(wrongKey.error)")

        // The owner: the original db.dump is untouched, the write-only one is listed beside it.
        let out = cli.directory.path("out")
        #expect(try cli.run(["get", "db.dump", out.path]).status == 0)
        #expect(try Data(contentsOf: out) == Data("note".utf8))
        let listing = try #require(try cli.json(["ls"]) as? [[String: Any]])
        let dropped = try #require(listing.compactMap { $0["name"] as? String }.first { $0.hasPrefix("db.dump@") })
        try? FileManager.default.removeItem(at: out)
        #expect(try cli.run(["get", dropped, out.path]).status == 0)
        #expect(try Data(contentsOf: out) == content)
        let restored = cli.directory.path("restored")
        let restore = try cli.run(["restore", "nightly", restored.path])
        #expect(restore.status == 0, "\(restore.error)")
        #expect(try Data(contentsOf: restored.appendingPathComponent("data.bin")) == content)
        #expect(try Data(contentsOf: restored.appendingPathComponent("sub/note.txt")) == Data("note".utf8))
        let verify = try cli.run(["verify", "--read-data"])
        #expect(verify.status == 0, "\(verify.output) \(verify.error)")
        #expect(try cli.run(["rm", dropped]).status == 0)
    }

    @Test("a vault whose write keys were re-signed by another key is refused by a client that pinned the old one")
    func pinnedKeyRefusesReplacement() throws {
        #expect(try cli.run(["write-only", "enable"]).status == 0)
        let file = cli.directory.path("file")
        try Data("x".utf8).write(to: file)
        #expect(try client(["put", "--write-only", "a", file.path]).status == 0)
        // Another vault at the same path (the same id is what a replacement would claim): simulated by
        // pinning a different fingerprint for this vault's id.
        let text = try String(contentsOf: pins, encoding: .utf8)
        let id = try #require(text.split(separator: " ").first)
        try Data("\(id) ffff-ffff-ffff-ffff-ffff\n".utf8).write(to: pins)
        let refused = try client(["put", "--write-only", "b", file.path])
        #expect(refused.status == 1)
        #expect(refused.error.contains("not by ffff-ffff-ffff-ffff-ffff"), "\(refused.error)")
    }

    @Test("write-only disable refuses clients again; what they wrote stays")
    func disable() throws {
        #expect(
            try cli.run(["init", "--allow-write-only"], extra: ["COFFER_VAULT": cli.directory.path("second").path])
                .status == 0
        )
        let file = cli.directory.path("file")
        try Data("kept".utf8).write(to: file)
        let second = ["COFFER_VAULT": cli.directory.path("second").path]
        let put = try Products.run(
            cli.coffer,
            ["put", "--write-only", "a", file.path],
            environment: second.merging(["COFFER_WRITE_KEY_PINS": pins.path]) { _, new in new }
        )
        #expect(put.status == 0, "\(put.error)")
        #expect(try cli.run(["write-only", "disable"], extra: second).status == 0)
        let refused = try Products.run(
            cli.coffer,
            ["put", "--write-only", "b", file.path],
            environment: second.merging(["COFFER_WRITE_KEY_PINS": pins.path]) { _, new in new }
        )
        #expect(refused.status == 1)
        let out = cli.directory.path("out")
        #expect(try cli.run(["get", "a", out.path], extra: second).status == 0)
        #expect(try Data(contentsOf: out) == Data("kept".utf8))
    }
}
