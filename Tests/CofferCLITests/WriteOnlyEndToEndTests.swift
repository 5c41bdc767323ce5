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
        // A write-only client's snapshot is never picked by its claimed name: by id.
        let byName = try cli.run(["restore", "nightly", restored.path])
        #expect(byName.status == 1)
        #expect(byName.error.contains("from write-only clients"), "\(byName.error)")
        let snapshots = try #require(try cli.json(["snapshots"]) as? [[String: Any]])
        let nightly = try #require(snapshots.first { $0["name"] as? String == "nightly" }?["id"] as? String)
        let restore = try cli.run(["restore", nightly, restored.path])
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

    @Test("init --join with --allow-write-only allows write-only clients in the joined vault")
    func allowedWhenJoining() throws {
        let bundle = cli.directory.path("group.bundle").path
        #expect(try cli.run(["export", "--out", bundle]).status == 0)
        let joined = ["COFFER_VAULT": cli.directory.path("joined").path]
        let created = try cli.run(["init", "--join", bundle, "--allow-write-only"], extra: joined)
        #expect(created.status == 0, "\(created.error)")
        #expect(created.output.contains("Write-only clients allowed"), "\(created.output)")
        let status = try cli.run(["write-only", "status"], extra: joined)
        #expect(status.output.contains("Write-only clients: allowed"), "\(status.output)")
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

    /// The owner's snapshots as `snapshots --json` lists them, by id.
    func listing() throws -> [[String: Any]] {
        try #require(try cli.json(["snapshots"]) as? [[String: Any]])
    }

    @Test(
        "forged write-only snapshots claiming the owner's name, host and a later time: marked, left out of forget --keep-last and restore NAME, until adopted"
    )
    func forgedSnapshotsDoNotCount() throws {
        let real = cli.directory.path("docs")
        let junk = cli.directory.path("junk")
        for directory in [real, junk] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        try Data("junk".utf8).write(to: junk.appendingPathComponent("file.txt"))
        for day in 1...4 {
            try Data("real \(day)".utf8).write(to: real.appendingPathComponent("file.txt"))
            let backup = try cli.run(["backup", real.path, "--name", "docs", "--time", "2026-01-0\(day) 12:00:00"])
            #expect(backup.status == 0, "\(backup.error)")
        }
        // The owner's own completeUnlessOpen backup carries the owner's mark: it is not a write-only one.
        #expect(try cli.run(["backup", "--complete-unless-open", real.path, "--name", "sealed"]).status == 0)
        #expect(try cli.run(["write-only", "enable"]).status == 0)
        let host = ProcessInfo.processInfo.hostName
        for day in 1...3 {
            let forged = try client([
                "backup", "--write-only", junk.path, "--name", "docs", "--host", host, "--time",
                "2030-01-0\(day) 12:00:00",
            ])
            #expect(forged.status == 0, "\(forged.error)")
        }
        let before = try listing()
        let forgedIDs = before.filter { $0["writeOnly"] as? Bool == true }.compactMap { $0["id"] as? String }
        #expect(forgedIDs.count == 3, "\(before)")
        #expect(before.first { $0["name"] as? String == "sealed" }?["writeOnly"] as? Bool == false)
        for snapshot in before where snapshot["writeOnly"] as? Bool == true {
            #expect(snapshot["claimed"] as? [String] == ["name", "hostname", "created"])
        }
        let table = try cli.run(["snapshots"])
        #expect(table.output.contains(" W "), "\(table.output)")
        #expect(table.output.contains("write-only client"), "\(table.output)")
        let found = try cli.run(["find", "file.txt"])
        #expect(found.output.split(separator: "\n").filter { $0.contains(" W ") }.count == 3, "\(found.output)")
        let shown = try cli.run(["ls", String(forgedIDs[0].prefix(8))])
        #expect(shown.status == 0)
        #expect(shown.error.contains("write-only client"), "\(shown.error)")

        // The owner's routine retention: the forged ones are neither kept nor dropped.
        let forget = try cli.run(["forget", "--keep-last", "3"])
        #expect(forget.status == 0, "\(forget.error)")
        #expect(forget.error.contains("Left alone: 3 snapshots of write-only clients"), "\(forget.error)")
        let after = try listing()
        #expect(after.filter { $0["writeOnly"] as? Bool == true }.count == 3)
        let docs = after.filter { $0["name"] as? String == "docs" && $0["writeOnly"] as? Bool == false }
        #expect(docs.count == 3, "one real snapshot of four dropped: \(after)")

        // restore NAME is the owner's latest; a write-only one by id only.
        let out = cli.directory.path("out")
        #expect(try cli.run(["restore", "docs", out.path]).status == 0)
        #expect(try String(contentsOf: out.appendingPathComponent("file.txt"), encoding: .utf8) == "real 4")
        let byID = cli.directory.path("by-id")
        let restored = try cli.run(["restore", String(forgedIDs[2].prefix(8)), byID.path])
        #expect(restored.status == 0, "\(restored.error)")
        #expect(restored.error.contains("write-only client"), "\(restored.error)")

        // Adopted, it counts: it is the name's latest now (its claimed time is the newest).
        let notForged = try #require(docs.first?["id"] as? String)
        let refused = try cli.run(["snapshot", "adopt", String(notForged.prefix(8))])
        #expect(refused.status == 1)
        #expect(refused.error.contains("not a write-only client's"), "\(refused.error)")
        let adopt = try cli.run(["snapshot", "adopt", String(forgedIDs[2].prefix(8))])
        #expect(adopt.status == 0, "\(adopt.error)")
        let adopted = try listing().first { $0["id"] as? String == forgedIDs[2] }
        #expect(adopted?["writeOnly"] as? Bool == false)
        let again = cli.directory.path("again")
        #expect(try cli.run(["restore", "docs", again.path]).status == 0)
        #expect(try String(contentsOf: again.appendingPathComponent("file.txt"), encoding: .utf8) == "junk")
        #expect(try cli.run(["verify"]).status == 0)
    }

    @Test("another vault put at a pinned directory is refused, nothing written, until the client re-pins with --repin")
    func anotherVaultAtPinnedPath() throws {
        #expect(try cli.run(["write-only", "enable"]).status == 0)
        let file = cli.directory.path("file")
        try Data("x".utf8).write(to: file)
        #expect(try client(["put", "--write-only", "a", file.path]).status == 0)
        try FileManager.default.moveItem(at: cli.directory.path("vault"), to: cli.directory.path("moved"))
        #expect(try cli.run(["init", "--allow-write-only"]).status == 0)

        let refused = try client(["put", "--write-only", "b", file.path])
        #expect(refused.status == 1)
        #expect(refused.error.contains("is not the one this client pinned there"), "\(refused.error)")
        #expect(refused.error.contains("nothing was written"), "\(refused.error)")
        #expect(refused.error.contains("--repin"), "\(refused.error)")
        #expect(!refused.error.contains("Trusting"), "\(refused.error)")
        #expect(try #require(try cli.json(["ls"]) as? [Any]).isEmpty, "the other vault is unchanged")
        #expect(try client(["put", "--repin", "b", file.path]).status == 64, "--repin goes with --write-only")

        let repinned = try client(["put", "--write-only", "--repin", "b", file.path])
        #expect(repinned.status == 0, "\(repinned.error)")
        #expect(repinned.error.contains("Trusting write key"), "\(repinned.error)")
        let next = try client(["put", "--write-only", "c", file.path])
        #expect(next.status == 0, "\(next.error)")
        #expect(!next.error.contains("Trusting"), "\(next.error)")
    }
}
