import CofferTestSupport
import Foundation
import Testing

/// `coffer backup|snapshots|show|restore|forget|diff` run as a user would.
@Suite("coffer snapshots end to end")
struct SnapshotEndToEndTests {
    let cli: CLIHarness
    var directory: TemporaryDirectory { cli.directory }

    init() throws {
        cli = try CLIHarness()
        let source = directory.path("source")
        try FileManager.default.createDirectory(
            at: source.appendingPathComponent("notes/old"),
            withIntermediateDirectories: true
        )
        try Data(String(repeating: "a line of notes\n", count: 20_000).utf8).write(
            to: source.appendingPathComponent("notes/today.txt")
        )
        try Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
            to: source.appendingPathComponent("notes/old/data.bin")
        )
        try FileManager.default.createSymbolicLink(
            atPath: source.appendingPathComponent("latest").path,
            withDestinationPath: "notes/today.txt"
        )
    }

    @discardableResult
    func run(_ arguments: [String]) throws -> Products.Result { try cli.run(arguments) }

    func json(_ arguments: [String]) throws -> Any { try cli.json(arguments) }

    @Test("backup, snapshots, show, restore, a second backup that reads nothing, diff, forget")
    func lifecycle() throws {
        let source = directory.path("source").path
        let first = try #require(try json(["backup", source, "--name", "notes"]) as? [String: Any])
        let stats = try #require((first["snapshot"] as? [String: Any])?["statistics"] as? [String: Any])
        #expect(stats["files"] as? Int == 2)
        #expect(stats["newFiles"] as? Int == 2)
        #expect(stats["symlinks"] as? Int == 1)

        let shown = try run(["show", "notes"])
        #expect(shown.status == 0)
        #expect(shown.output.contains("notes/old/data.bin"))
        #expect(shown.output.contains("latest -> notes/today.txt"))

        let target = directory.path("restored").path
        #expect(try run(["restore", "notes", target]).status == 0)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: target + "/notes/today.txt"))
                == Data(contentsOf: URL(fileURLWithPath: source + "/notes/today.txt"))
        )
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: target + "/latest") == "notes/today.txt")

        let second = try #require(try json(["backup", source, "--name", "notes"]) as? [String: Any])
        let again = try #require((second["snapshot"] as? [String: Any])?["statistics"] as? [String: Any])
        #expect(again["unchangedFiles"] as? Int == 2)

        try Data("changed".utf8).write(to: URL(fileURLWithPath: source + "/notes/today.txt"))
        #expect(try run(["backup", source, "--name", "notes", "-q"]).status == 0)
        let listed = try #require(try json(["snapshots"]) as? [[String: Any]])
        #expect(listed.count == 3)
        let ids = listed.compactMap { ($0["id"] as? String).map { String($0.prefix(8)) } }
        let diff = try run(["diff", ids[0], ids[2]])
        #expect(diff.output == "M notes/today.txt\n")

        for id in ids { #expect(try run(["forget", id]).status == 0) }
        let stats2 = try #require(try json(["stats"]) as? [String: Any])
        #expect(stats2["chunks"] as? Int == 0)
        #expect(try run(["verify", "--read-data"]).status == 0)
    }

    @Test("--include restores a subset; bad input fails with a message and exit 1, changing nothing")
    func subsetAndErrors() throws {
        let source = directory.path("source").path
        #expect(try run(["backup", source, "--name", "notes", "-q"]).status == 0)
        let target = directory.path("subset").path
        #expect(try run(["restore", "notes", target, "--include", "notes/old"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: target + "/notes/old/data.bin"))
        #expect(!FileManager.default.fileExists(atPath: target + "/notes/today.txt"))

        let file = directory.path("a-file")
        try Data("x".utf8).write(to: file)
        let notDirectory = try run(["restore", "notes", file.path])
        #expect(notDirectory.status == 1)
        #expect(notDirectory.error.contains("exists and is not a directory"), "\(notDirectory.error)")
        #expect(try Data(contentsOf: file) == Data("x".utf8))
        let unknown = try run(["restore", "nothing-like-this", directory.path("x").path])
        #expect(unknown.status == 1)
        #expect(unknown.error.contains("there is no snapshot 'nothing-like-this'"))
        // One path that is not a directory is backed up as itself (a symbolic link as a link), as
        // restic does, under its directory.
        let link = try run(["backup", source + "/latest", "--name", "the-link"])
        #expect(link.status == 0, "\(link.error)")
        #expect(try run(["show", "the-link"]).output.contains("latest -> notes/today.txt"))
        let missing = try run(["backup", source + "/nothing-here"])
        #expect(missing.status == 1)
        #expect(missing.error.contains("does not exist"))
        #expect(try run(["restore", "notes"]).status == 64)
    }
}
