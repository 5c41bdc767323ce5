import CofferTestSupport
import Foundation
import Testing

/// `coffer backup PATH PATH…`: several paths in one snapshot, through the built binary.
@Suite("Several paths in one snapshot, end to end")
struct MultiPathEndToEndTests {
    @Test(
        "the tree holds the paths and the directories on the way, nothing beside them; restore recreates them under the target"
    )
    func severalPaths() throws {
        let cli = try CLIHarness()
        let base = cli.directory.path("home")
        for path in ["ann/docs/a.txt", "ann/docs/deep/b.txt", "ann/music/song.ogg", "bob/notes.txt", "bob/private.txt"]
        {
            let url = base.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(path.utf8).write(to: url)
        }
        let docs = base.appendingPathComponent("ann/docs").path
        let notes = base.appendingPathComponent("bob/notes.txt").path
        let backup = try #require(
            try cli.json(["backup", docs, notes, docs + "/deep", "--name", "home"]) as? [String: Any]
        )
        let snapshot = try #require(backup["snapshot"] as? [String: Any])
        #expect(snapshot["sourcePath"] as? String == base.path)
        #expect(snapshot["paths"] as? [String] == [docs, notes])
        let listing = try cli.run(["show", "home"]).output
        for kept in ["ann/", "ann/docs/a.txt", "ann/docs/deep/b.txt", "bob/", "bob/notes.txt"] {
            #expect(listing.contains(" \(kept)"), "\(kept): \(listing)")
        }
        for left in ["music", "private.txt"] { #expect(!listing.contains(left), "\(left): \(listing)") }
        let target = cli.directory.path("restored")
        #expect(try cli.run(["restore", "home", target.path]).status == 0)
        #expect(
            FileManager.default.contents(atPath: target.path + "/ann/docs/deep/b.txt")
                == Data("ann/docs/deep/b.txt".utf8)
        )
        #expect(FileManager.default.contents(atPath: target.path + "/bob/notes.txt") == Data("bob/notes.txt".utf8))
        #expect(!FileManager.default.fileExists(atPath: target.path + "/bob/private.txt"))
        // Again: nothing changed, nothing read.
        let again = try #require(try cli.json(["backup", docs, notes, "--name", "home"]) as? [String: Any])
        let stats = try #require((again["snapshot"] as? [String: Any])?["statistics"] as? [String: Any])
        #expect(stats["unchangedFiles"] as? Int == 3 && stats["newFiles"] as? Int == 0, "\(stats)")
        // The vault's own directory, given as one of the paths, is left out and said so.
        let vault = cli.directory.path("vault").path
        let withVault = try cli.run(["backup", docs, vault, "--name", "with-vault"])
        #expect(withVault.status == 0 && withVault.error.contains("excluded:"), "\(withVault.error)")
        #expect(!(try cli.run(["show", "with-vault"]).output.contains("data.mdb")))
        // A path that does not exist is named.
        let missing = try cli.run(["backup", docs, base.path + "/nobody"])
        #expect(missing.status == 1 && missing.error.contains("/nobody does not exist"), "\(missing.error)")
        // The default name joins the paths.
        #expect(try cli.run(["backup", docs, notes]).status == 0)
        #expect((try cli.json(["snapshots", "--name", "\(docs),\(notes)"]) as? [Any])?.count == 1)
    }
}
