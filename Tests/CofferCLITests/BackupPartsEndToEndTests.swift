import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Backups larger than a thin vault's budget, through the built `coffer` against SeaweedFS: the
/// backup commits and uploads its content in parts as it goes, so the vault's directory stays
/// within the budget; every device ends with the one snapshot; a backup killed midway leaves parts
/// whose content the next backup reuses, and a later backup deletes them.
@Suite("Backups that upload as they go, end to end")
struct BackupPartsEndToEndTests: StoreEndToEndSuite {
    let cli: CLIHarness
    let remote = "s3://coffer-cli-tests/" + UUID().uuidString.lowercased()

    var directory: TemporaryDirectory { cli.directory }

    init() throws { cli = try CLIHarness() }

    @discardableResult
    func run(_ arguments: [String], _ server: SeaweedFS, vault: String? = nil) throws -> Products.Result {
        var environment = server.environment
        if let vault { environment["COFFER_VAULT"] = directory.path(vault).path }
        return try cli.run(arguments, extra: environment)
    }

    /// A store with the harness's vault in it, and a thin vault `thin` joined from it with `budget`.
    func thinVault(budget: String) throws -> SeaweedFS {
        let server = try SeaweedFS.shared()
        try add("first", server)
        #expect(try run(["push", remote, "--create-bucket"], server).status == 0)
        let joined = try run(["init", "--join", remote, "--thin", "--keep", budget], server, vault: "thin")
        #expect(joined.status == 0, "\(joined.error)")
        return server
    }

    /// `count` files of `size` random bytes each in a new directory `name`.
    func tree(_ name: String, files count: Int, size: Int, seed: UInt64) throws -> URL {
        let tree = directory.path(name)
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        for index in 0..<count {
            let file = tree.appendingPathComponent(index % 3 == 0 ? "sub/f\(index)" : "f\(index)")
            try Data(SplitMix64.bytes(size, seed: seed + UInt64(index))).write(to: file)
        }
        return tree
    }

    /// The parts of backups in progress vault `name` holds (record version 6).
    func parts(_ name: String) throws -> Int {
        let vault = try Vault.open(at: directory.path(name))
        defer { vault.close() }
        return try vault.environment.read { txn in
            var count = 0
            try txn.forEach(in: vault.schema.snapshots) { _, value in
                if value.first == SnapshotRecord.partVersion { count += 1 }
                return true
            }
            return count
        }
    }

    func expectSame(_ tree: URL, restoredFrom vault: String, _ server: SeaweedFS, host: Bool = false) throws {
        let target = directory.path("restored-\(vault)-\(UUID().uuidString)")
        var arguments = ["restore", "docs", "--target", target.path]
        if host { arguments += ["--host", ProcessInfo.processInfo.hostName] }
        let restored = try run(arguments, server, vault: vault)
        #expect(restored.status == 0, "\(restored.error)")
        let compared = try Products.run(URL(fileURLWithPath: "/usr/bin/diff"), ["-r", tree.path, target.path])
        #expect(compared.status == 0, "\(compared.output)")
    }

    /// The thin vault backs up `tree` as `docs` in parts of 4 MiB; the result and its `uploads`.
    func backUpInParts(_ tree: URL, _ server: SeaweedFS) throws -> (Products.Result, [String: Any]?) {
        let backup = try run(
            ["backup", tree.path, "--name", "docs", "--part-size", "4M", "--json"],
            server,
            vault: "thin"
        )
        #expect(backup.status == 0, "\(backup.error)")
        let listing = try JSONSerialization.jsonObject(with: Data(backup.output.utf8)) as? [String: Any]
        return (backup, listing?["uploads"] as? [String: Any])
    }

    @Test("a backup four times the budget uploads in parts, stays within the budget, and reaches every device")
    func uploadsAsItGoes() throws {
        let server = try thinVault(budget: "1M")
        let tree = try tree("tree", files: 40, size: 600_000, seed: 1)
        let (backup, uploads) = try backUpInParts(tree, server)
        #expect((uploads?["parts"] as? Int ?? 0) >= 4, "\(backup.output)")
        #expect(uploads?["failure"] == nil, "\(backup.output)")
        // Each part's push sends what is new since the last: the store holds the content once.
        let (client, layout) = try store(server)
        let uploaded = try client.list(prefix: layout.listingPrefix).filter { $0.key.hasSuffix(".bundle") }
            .reduce(0) { $0 + $1.size }
        #expect(uploaded < 30_000_000, "\(uploaded) bytes of bundles for 24 MB")
        // 24 MB backed up; what stays is the budget, one part's worth, and the metadata.
        let used = try diskUsage("thin")
        #expect(used < 10 << 20, "\(used) bytes")
        #expect(try parts("thin") == 0)
        let listed = try run(["snapshots", "--json"], server, vault: "thin")
        #expect(listed.output.components(separatedBy: "\"id\"").count == 2, "\(listed.output)")
        #expect(try run(["verify"], server, vault: "thin").status == 0)
        try expectSame(tree, restoredFrom: "thin", server)

        // The whole vault pulls the parts and the snapshot that deletes them: one snapshot, every
        // reference counted.
        try expectWholeVaultHolds(tree, server)
    }

    /// The harness's vault pulls, verifies every chunk, holds no part, and restores `tree`.
    func expectWholeVaultHolds(_ tree: URL, _ server: SeaweedFS) throws {
        let pulled = try run(["pull", remote], server)
        #expect(pulled.status == 0, "\(pulled.output)\(pulled.error)")
        #expect(try parts("vault") == 0)
        let verified = try run(["verify", "--read-data"], server)
        #expect(verified.status == 0, "\(verified.output)\(verified.error)")
        try expectSame(tree, restoredFrom: "vault", server, host: true)
    }

    @Test("one file eight times the part size: parts are cut within it, and the budget holds")
    func largeFileInParts() throws {
        let server = try thinVault(budget: "1M")
        let tree = try tree("tree", files: 1, size: 32_000_000, seed: 3)
        let (backup, uploads) = try backUpInParts(tree, server)
        #expect((uploads?["parts"] as? Int ?? 0) >= 6, "\(backup.output)")
        let used = try diskUsage("thin")
        #expect(used < 12 << 20, "\(used) bytes for a 32 MB file")
        #expect(try run(["verify"], server, vault: "thin").status == 0)
        try expectSame(tree, restoredFrom: "thin", server)
        try expectWholeVaultHolds(tree, server)
    }

    @Test("a tree of many small files: its snapshot's tree, cut before the last parts, reaches every device")
    func treeCutBeforeParts() throws {
        // The tree's first chunks are stored once a megabyte of entries is buffered, before the
        // parts that follow credit peers with every chunk stored so far: the snapshot carries them.
        let server = try thinVault(budget: "1M")
        let tree = try tree("tree", files: 9_000, size: 3_000, seed: 7)
        let backup = try run(["backup", tree.path, "--name", "docs", "--part-size", "2M"], server, vault: "thin")
        #expect(backup.status == 0, "\(backup.error)")
        #expect(backup.error.contains("as it went"), "\(backup.error)")
        try expectWholeVaultHolds(tree, server)
    }

    @Test("a backup killed after some parts: they stay, the next backup reuses their content, a later one deletes them")
    func killedBackupLeavesParts() throws {
        let server = try thinVault(budget: "1M")
        let tree = try tree("tree", files: 120, size: 500_000, seed: 50)
        let (client, layout) = try store(server)
        func bundles() throws -> Int {
            try client.list(prefix: layout.listingPrefix).filter { $0.key.hasSuffix(".bundle") }.count
        }
        let before = try bundles()
        var environment = server.environment
        environment["COFFER_VAULT"] = directory.path("thin").path
        let backup = try cli.start(["backup", tree.path, "--name", "docs", "--part-size", "1M"], extra: environment)
        let deadline = Date().addingTimeInterval(60)
        while try bundles() < before + 3, backup.process.isRunning, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let running = backup.process.isRunning
        backup.kill()
        guard running else {
            Issue.record("the backup ended before three parts were uploaded; the tree is too small for this machine")
            return
        }
        let left = try parts("thin")
        #expect(left >= 2)
        #expect(try run(["snapshots", "--json"], server, vault: "thin").output.contains("\"id\"") == false)
        #expect(try run(["verify"], server, vault: "thin").status == 0)

        // The next backup finds what the parts uploaded, adds the rest, and leaves the parts of the
        // killed one: its write might still run in a copy of the vault made meanwhile.
        let again = try run(
            ["backup", tree.path, "--name", "docs", "--part-size", "1M", "--json"],
            server,
            vault: "thin"
        )
        #expect(again.status == 0, "\(again.error)")
        let snapshot = (try JSONSerialization.jsonObject(with: Data(again.output.utf8)) as? [String: Any])?["snapshot"]
        let added = ((snapshot as? [String: Any])?["statistics"] as? [String: Any])?["bytesAdded"] as? Int ?? -1
        #expect(added >= 0 && added < 120 * 500_000 - Int(left - 1) * 1_000_000, "\(again.output)")
        #expect(try parts("thin") == left)
        #expect(try run(["verify"], server, vault: "thin").status == 0)
        try expectSame(tree, restoredFrom: "thin", server)

        // A day on, a backup deletes them (its uploads fail here: the store refuses requests signed a
        // day off; the backup goes on and says so).
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/faketime") else {
            Issue.record("faketime is not installed (Debian package faketime; Tools/test installs it)")
            return
        }
        try Data("changed".utf8).write(to: tree.appendingPathComponent("f1"))
        let later = try run(["backup", tree.path, "--name", "docs"], server, vault: "thin", clock: "+25h")
        #expect(later.status == 0, "\(later.error)")
        #expect(try parts("thin") == 0)
        #expect(try run(["verify"], server, vault: "thin").status == 0)
    }
}
