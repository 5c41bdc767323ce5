import CofferTestSupport
import Foundation
import Testing

/// The defects a new user hit in everyday use of `coffer` (issue 21), each through the built binary.
@Suite("Everyday CLI: stats with snapshots, item scope, prompts, messages, help, ids, usage errors")
struct EverydayCLITests {
    let cli: CLIHarness

    init() throws { cli = try CLIHarness() }

    /// A directory of `count` files of `size` random bytes each.
    func tree(_ name: String, files count: Int, size: Int) throws -> URL {
        let tree = cli.directory.path(name)
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<count {
            let bytes = try RandomBytes.data(count: size)
            try Data(bytes).write(to: tree.appendingPathComponent("file-\(index)"))
        }
        return tree
    }

    @Test("stats counts snapshot files in the logical size, so the ratio compares like with like")
    func statsWithSnapshots() throws {
        let small = cli.directory.path("small")
        try Data(repeating: 3, count: 10_000).write(to: small)
        #expect(try cli.run(["put", "small", small.path]).status == 0)
        let files = try tree("tree", files: 4, size: 500_000)
        // Twice the same tree: the second snapshot stores nothing new.
        #expect(try cli.run(["backup", files.path]).status == 0)
        #expect(try cli.run(["backup", files.path]).status == 0)
        let stats = try #require(try cli.json(["stats"]) as? [String: Any])
        #expect(stats["snapshots"] as? Int == 2)
        #expect(stats["blobBytes"] as? Int == 10_000)
        #expect(stats["snapshotBytes"] as? Int == 4_000_000)
        #expect(stats["logicalBytes"] as? Int == 4_010_000)
        let unique = try #require(stats["uniqueBytes"] as? Int)
        #expect(unique >= 2_000_000 && unique < 2_200_000, "\(unique)")
        let ratio = try #require(stats["deduplicationRatio"] as? Double)
        #expect(ratio > 1.8 && ratio < 2.1, "\(ratio)")
        let text = try cli.run(["stats"]).output
        #expect(text.contains(/snapshots:\s+2 \(3.8 MiB of files/), "\(text)")
    }

    @Test(
        "a key names one item in either scope: add refuses the other scope; get names --account; add's duplicate points at upsert, which exists"
    )
    func itemScope() throws {
        #expect(
            try cli.run(["item", "add", "--service", "mail", "--account", "ann", "--sync", "--value", "s"]).status == 0
        )
        let otherScope = try cli.run(["item", "add", "--service", "mail", "--account", "ann", "--value", "d"])
        #expect(otherScope.status == 1)
        #expect(otherScope.error.contains("syncable or device-bound"), "\(otherScope.error)")
        #expect(try cli.run(["item", "get", "--service", "mail", "--account", "ann"]).output == "s")
        #expect(try cli.run(["item", "get", "--service", "mail", "--account", "ann", "--sync"]).output == "s")

        #expect(try cli.run(["item", "add", "--service", "mail", "--account", "bob", "--value", "b"]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "mail", "--account", "carl", "--value", "c"]).status == 0)
        let accounts = try cli.run(["item", "get", "--service", "mail", "--device-only"])
        #expect(accounts.error.contains("add --account to pick one"), "\(accounts.error)")

        let duplicate = try cli.run(["item", "add", "--service", "mail", "--account", "bob", "--value", "again"])
        #expect(duplicate.status == 1)
        #expect(duplicate.error.contains("coffer item upsert") && duplicate.error.contains("duplicateItem -25299"))
        let upsert = try cli.run(["item", "upsert", "--service", "mail", "--account", "bob", "--value", "again"])
        #expect(upsert.status == 0, "\(upsert.error)")
        #expect(try cli.run(["item", "get", "--service", "mail", "--account", "bob"]).output == "again")
        #expect(try cli.run(["item", "upsert", "--service", "new", "--account", "c", "--value", "n"]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "new", "--account", "c"]).output == "n")
    }

    @Test("messages speak the CLI's words: no status numbers outside item commands, no API names")
    func messages() throws {
        let missingVault = try cli.run(["info"], extra: ["COFFER_VAULT": cli.directory.path("nowhere").path])
        #expect(missingVault.status == 1)
        #expect(
            !missingVault.error.contains("Vault.create") && !missingVault.error.contains("-25"),
            "\(missingVault.error)"
        )
        let missingBlob = try cli.run(["get", "nothing", "-"])
        #expect(missingBlob.error.contains("there is no blob named 'nothing'"), "\(missingBlob.error)")
        #expect(!missingBlob.error.contains("itemNotFound") && !missingBlob.error.contains("("), "\(missingBlob.error)")
        let none = try cli.run(["item", "delete", "--class", "key"])
        #expect(none.error.contains("no keychain item matches the query (keys)"), "\(none.error)")
        #expect(!none.error.contains("genericPassword") && !none.error.contains("matches items"))
    }

    @Test("--version, help COMMAND, and did-you-mean for commands and options")
    func helpAndVersion() throws {
        let version = try cli.run(["--version"])
        #expect(version.status == 0)
        #expect(version.output.hasPrefix("coffer "), "\(version.output)")
        let help = try cli.run(["help", "backup"])
        #expect(help.status == 0)
        #expect(help.output == (try cli.run(["backup", "--help"])).output)
        #expect(help.output.contains("EXIT STATUS:") && help.output.contains("130"))
        #expect(try cli.run(["help"]).output.contains("EXAMPLES:"))
        let typo = try cli.run(["bakup", "/tmp"])
        #expect(typo.status == 64)
        #expect(typo.error.contains("did you mean 'backup'?"), "\(typo.error)")
        #expect(!typo.error.contains("the commands are"))
        let option = try cli.run(["put", "x", "-", "--compresion", "3"])
        #expect(option.status == 64)
        #expect(option.error.contains("did you mean '--compression'?"), "\(option.error)")
        // Nothing close: the whole list, as before.
        #expect(try cli.run(["zzzzzz"]).error.contains("the commands are"))
    }

    @Test("a snapshot id too short to be one says how many digits an id needs")
    func shortSnapshotIDs() throws {
        let files = try tree("tree", files: 1, size: 100)
        #expect(try cli.run(["backup", files.path]).status == 0)
        let diff = try cli.run(["diff", "ab3f", "2c47"])
        #expect(diff.status == 1)
        #expect(diff.error.contains("at least 6 hex digits"), "\(diff.error)")
        let id = try #require((try cli.json(["snapshots"]) as? [[String: Any]])?.first?["id"] as? String)
        #expect(try cli.run(["show", String(id.prefix(6))]).status == 0)
    }

    @Test("usage mistakes exit 64, a missing backup path says it does not exist, a weak passphrase is warned about")
    func usageAndWarnings() throws {
        let file = cli.directory.path("file")
        try Data("x".utf8).write(to: file)
        let level = try cli.run(["put", "x", file.path, "--compression", "30"])
        #expect(level.status == 64)
        #expect(level.error.contains("from 1 to 19, not '30'"), "\(level.error)")
        let missing = try cli.run(["backup", cli.directory.path("nonexistent").path])
        #expect(missing.status == 1)
        #expect(missing.error.contains("does not exist"), "\(missing.error)")
        let weak = try cli.run(
            ["init"],
            extra: ["COFFER_VAULT": cli.directory.path("weak").path, "COFFER_PASSPHRASE": "a"]
        )
        #expect(weak.status == 0)
        #expect(weak.error.contains("warning: this passphrase is weak (1 character)"), "\(weak.error)")
        let strong = try cli.run(
            ["init"],
            extra: ["COFFER_VAULT": cli.directory.path("strong").path, "COFFER_PASSPHRASE": "correct horse battery"]
        )
        #expect(!strong.error.contains("weak"), "\(strong.error)")
    }

    @Test("init --join asks for the exporting vault's passphrase by that name", .enabled(if: Terminal.canRun))
    func joinPrompt() throws {
        let bundle = cli.directory.path("full.bundle").path
        #expect(try cli.run(["export", "--out", bundle]).status == 0)
        let joined = cli.directory.path("joined").path
        let screen = try Terminal.run(
            "\(cli.coffer.path) init --join \(bundle)",
            input: "pw\n",
            environment: ["COFFER_VAULT": joined]
        )
        #expect(screen.contains("Passphrase of the vault that exported the bundle:"), "\(screen)")
        #expect(FileManager.default.fileExists(atPath: joined + "/data.mdb"), "\(screen)")
    }

    @Test("a vault joined from a bundle exports to that device only what changed since; an empty export says so")
    func joinedPeerCursor() throws {
        let large = cli.directory.path("large")
        try RandomBytes.data(count: 4_000_000).write(to: large)
        #expect(try cli.run(["put", "large", large.path]).status == 0)
        let full = cli.directory.path("full.bundle").path
        #expect(try cli.run(["export", "--out", full]).status == 0)
        let joined = ["COFFER_VAULT": cli.directory.path("joined").path]
        #expect(try cli.run(["init", "--join", full], extra: joined).status == 0)
        let device = try #require((try cli.json(["device", "show"]) as? [String: Any])?["deviceID"] as? String)
        let peer = String(device.prefix(8)).lowercased()

        #expect(
            try cli.run(["item", "add", "--service", "new", "--account", "a", "--sync", "--value", "v"], extra: joined)
                .status == 0
        )
        let back = cli.directory.path("back.bundle")
        let exported = try cli.run(["export", "--out", back.path, "--peer", peer], extra: joined)
        #expect(exported.status == 0, "\(exported.error)")
        #expect(
            exported.output.contains("1 item, 0 blobs") && exported.output.contains("for peer"),
            "\(exported.output)"
        )
        let size = try #require(try FileManager.default.attributesOfItem(atPath: back.path)[.size] as? Int)
        #expect(size < 100_000, "the first export to the device it joined from sent \(size) bytes")
        #expect(try cli.run(["import", back.path]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "new", "--account", "a"]).output == "v")

        let again = try cli.run(["export", "--out", back.path, "--peer", peer], extra: joined)
        #expect(again.status == 0)
        #expect(again.output.contains("Nothing new for peer '\(peer)' since change"), "\(again.output)")
    }

    @Test("listings have headers, human sizes (exact with --bytes), hosts and local times; empty ones say so")
    func listings() throws {
        let emptyBlobs = try cli.run(["ls"])
        #expect(emptyBlobs.status == 0 && emptyBlobs.output.isEmpty)
        #expect(emptyBlobs.error.contains("No blobs yet"), "\(emptyBlobs.error)")
        #expect(try cli.run(["snapshots"]).error.contains("No snapshots yet"))
        let file = cli.directory.path("file")
        try RandomBytes.data(count: 1_500_000).write(to: file)
        #expect(try cli.run(["put", "photos/cat.jpg", file.path]).status == 0)
        let listed = try cli.run(["ls"]).output.split(separator: "\n").map(String.init)
        let header = "SIZE  SCOPE  READABLE            MODIFIED                    NAME"
        #expect(listed.first?.hasSuffix(header) == true, "\(listed)")
        #expect(
            listed.last?.contains("1.4 MiB") == true && listed.last?.hasSuffix("photos/cat.jpg") == true,
            "\(listed)"
        )
        #expect(try cli.run(["ls", "--bytes"]).output.contains("1500000"))

        let files = try tree("tree", files: 2, size: 1000)
        #expect(try cli.run(["backup", files.path]).status == 0)
        let snapshots = try cli.run(["snapshots"], extra: ["TZ": "Asia/Kolkata"]).output.split(separator: "\n")
        #expect(snapshots.first?.hasPrefix("ID") == true && snapshots.first?.contains("HOST") == true, "\(snapshots)")
        let row = String(try #require(snapshots.last))
        #expect(row.contains("+05:30") && row.contains(ProcessInfo.processInfo.hostName.prefix(8)), "\(row)")
    }

    @Test("backup --exclude, --iexclude and --exclude-file on a tree built to hit each rule")
    func excludes() throws {
        let tree = cli.directory.path("tree")
        let paths = [
            "notes.txt", "build.log", "src/app.swift", "src/debug.log", "web/node_modules/x.js", "web/index.html",
            "cache/tmp/a", "cache/keep/b", "PHOTO.JPG", "photo2.jpg", "keep.tmp", "drop.tmp",
        ]
        for path in paths {
            let url = tree.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(path.utf8).write(to: url)
        }
        let excludeFile = cli.directory.path("excludes")
        try Data("# temporary files\n*.tmp\n\n!keep.tmp\n".utf8).write(to: excludeFile)
        let backup = try cli.run([
            "backup", tree.path, "--exclude", "*.log", "--exclude", "node_modules",
            "--exclude", "\(tree.path)/cache", "--exclude", "!\(tree.path)/cache/keep", "--iexclude", "*.jpg",
            "--exclude-file", excludeFile.path,
        ])
        #expect(backup.status == 0, "\(backup.error)")
        #expect(backup.error.contains("left out by the exclude options"), "\(backup.error)")
        let shown = try cli.run(["show", tree.path]).output
        for kept in ["notes.txt", "src/app.swift", "web/index.html", "cache/keep/b", "keep.tmp"] {
            #expect(shown.contains(kept), "\(kept) is missing: \(shown)")
        }
        for left in ["build.log", "debug.log", "node_modules", "cache/tmp", "PHOTO.JPG", "photo2.jpg", "drop.tmp"] {
            #expect(!shown.contains(left), "\(left) was backed up: \(shown)")
        }
        // Names that are not UTF-8 are matched as bytes.
        let latin1 = try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", "printf cv > \"$T\"/r$'\\xe9'sum$'\\xe9'.doc; printf cv > \"$T\"/r$'\\xe9'sum$'\\xe9'.txt"],
            environment: ["T": tree.path]
        )
        #expect(latin1.status == 0, "\(latin1.error)")
        #expect(try cli.run(["backup", tree.path, "--exclude", "r*sum*.doc"]).status == 0)
        let bytes = try cli.run(["show", tree.path]).output
        #expect(bytes.contains("r\\xe9sum\\xe9.txt") && !bytes.contains("r\\xe9sum\\xe9.doc"), "\(bytes)")
        // No pattern puts the vault's own directory back into a backup of the tree holding it.
        let around = try cli.run(["backup", cli.directory.url.path, "--exclude", "/**/tree", "--exclude", "!vault"])
        #expect(around.status == 0, "\(around.error)")
        #expect(around.error.contains("(the vault's own directory)"), "\(around.error)")
        #expect(!(try cli.run(["show", cli.directory.url.path]).output.contains("data.mdb")))

        let bad = try cli.run(["backup", tree.path, "--exclude", "!"])
        #expect(bad.status == 1 && bad.error.contains("matches nothing"), "\(bad.error)")
        let missing = try cli.run(["backup", tree.path, "--exclude-file", cli.directory.path("nope").path])
        #expect(missing.status == 1 && missing.error.contains("cannot read --exclude-file"), "\(missing.error)")
    }
}
