import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39, finding 9: `restore` into a directory that holds files already, as restic 0.17 does it:
/// `--overwrite always|if-changed|if-newer|never`, `--delete` within the restored selection,
/// `--dry-run` listing what would change and changing nothing, `--target`. Each file goes in under a
/// temporary name, so none is ever left.
@Suite("Restore in place: --overwrite, --delete and --dry-run, as restic 0.17's")
struct RestoreInPlaceEndToEndTests {
    let cli: CLIHarness
    let tree: URL
    let target: URL

    /// The snapshot's files and their contents.
    static let files = [
        "a.txt": "alpha", "docs/report.txt": "report", "docs/notes.txt": "notes", "keep/one.txt": "one",
    ]

    init() throws {
        cli = try CLIHarness()
        tree = cli.directory.path("tree")
        target = cli.directory.path("target")
        for (path, content) in Self.files { try write(content, to: tree.appendingPathComponent(path)) }
        try FileManager.default.createSymbolicLink(
            atPath: tree.appendingPathComponent("link").path,
            withDestinationPath: "a.txt"
        )
        // Every file of the snapshot an hour old, so a file written now is newer.
        for path in Self.files.keys { try setTime(tree.appendingPathComponent(path), secondsAgo: 3600) }
        let backup = try cli.run(["backup", tree.path, "--name", "tree"])
        #expect(backup.status == 0, "\(backup.error)")
        let restore = try cli.run(["restore", "tree", target.path])
        #expect(restore.status == 0, "\(restore.error)")
    }

    func write(_ content: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(content.utf8).write(to: url)
    }

    func setTime(_ url: URL, secondsAgo: TimeInterval) throws {
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -secondsAgo)],
            ofItemAtPath: url.path
        )
    }

    func content(_ path: String) -> String? {
        FileManager.default.contents(atPath: target.appendingPathComponent(path).path).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    func inode(_ path: String) throws -> Int {
        try #require(
            try FileManager.default.attributesOfItem(atPath: target.appendingPathComponent(path).path)[
                .systemFileNumber
            ] as? Int
        )
    }

    /// Every path under the target with its kind, size, mode, modification time (to the
    /// nanosecond), inode and content: what a dry run must leave exactly as it was.
    func snapshotOfTarget() throws -> String {
        try Products.run(
            URL(fileURLWithPath: "/usr/bin/find"),
            [target.path, "-printf", "%P %y %s %m %T@ %i\n", "-type", "f", "-exec", "sha256sum", "{}", ";"]
        ).output
    }

    /// Temporary names left anywhere under the target.
    func temporaryNames() throws -> String {
        try Products.run(URL(fileURLWithPath: "/usr/bin/find"), [target.path, "-name", ".coffer-restore-*"]).output
    }

    /// The target changed as a user would: one file edited (same size, same time), one edited and
    /// newer, one removed, one added, a directory added.
    func changeTarget() throws {
        try write("ALPHA", to: target.appendingPathComponent("a.txt"))
        try setTime(target.appendingPathComponent("a.txt"), secondsAgo: 3600)
        // Same size and modification time as the snapshot's: only a content check sees it.
        let original = try #require(
            try FileManager.default.attributesOfItem(atPath: tree.appendingPathComponent("a.txt").path)[
                .modificationDate
            ] as? Date
        )
        try FileManager.default.setAttributes(
            [.modificationDate: original],
            ofItemAtPath: target.appendingPathComponent("a.txt").path
        )
        try write("newer local notes", to: target.appendingPathComponent("docs/notes.txt"))
        try FileManager.default.removeItem(at: target.appendingPathComponent("docs/report.txt"))
        try write("mine", to: target.appendingPathComponent("docs/extra.txt"))
        try write("mine too", to: target.appendingPathComponent("other/mine.txt"))
    }

    @Test("--overwrite always (the default): differing files replaced, right ones untouched, extra ones kept")
    func always() throws {
        try changeTarget()
        let unchangedInode = try inode("keep/one.txt")
        let result = try cli.run(["restore", "tree", target.path])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("2 updated") && result.error.contains("1 new path"), "\(result.error)")
        #expect(content("a.txt") == "alpha")
        #expect(content("docs/notes.txt") == "notes")
        #expect(content("docs/report.txt") == "report")
        #expect(content("docs/extra.txt") == "mine")
        #expect(content("other/mine.txt") == "mine too")
        // A file already right is checked, not rewritten: the same inode.
        #expect(try inode("keep/one.txt") == unchangedInode)
        #expect(try temporaryNames().isEmpty)
    }

    @Test("--overwrite if-changed trusts size and time; if-newer keeps newer files; never keeps every existing one")
    func modes() throws {
        try changeTarget()
        let trusting = try cli.run(["restore", "tree", target.path, "--overwrite", "if-changed", "--dry-run"])
        #expect(trusting.status == 0, "\(trusting.error)")
        #expect(trusting.output.contains("unchanged a.txt"), "\(trusting.output)")
        #expect(trusting.output.contains("updated   docs/notes.txt"), "\(trusting.output)")
        #expect(trusting.output.contains("restored  docs/report.txt"), "\(trusting.output)")

        let newer = try cli.run(["restore", "tree", target.path, "--overwrite", "if-newer"])
        #expect(newer.status == 0, "\(newer.error)")
        #expect(content("docs/notes.txt") == "newer local notes")
        #expect(content("docs/report.txt") == "report")
        // The snapshot's a.txt is not newer than the edited one (same time): kept.
        #expect(content("a.txt") == "ALPHA")

        try write("local", to: target.appendingPathComponent("keep/one.txt"))
        try FileManager.default.removeItem(at: target.appendingPathComponent("docs/report.txt"))
        let never = try cli.run(["restore", "tree", target.path, "--overwrite", "never"])
        #expect(never.status == 0, "\(never.error)")
        #expect(never.error.contains("kept as they were (--overwrite never)"), "\(never.error)")
        #expect(content("keep/one.txt") == "local")
        #expect(content("docs/report.txt") == "report")
        #expect(content("a.txt") == "ALPHA")
    }

    @Test("--delete removes what the snapshot lacks, only within the restored selection; --dry-run changes nothing")
    func deleteAndDryRun() throws {
        try changeTarget()
        let before = try snapshotOfTarget()
        let dry = try cli.run(["restore", "tree", target.path, "--delete", "--include", "docs", "--dry-run"])
        #expect(dry.status == 0, "\(dry.error)")
        let lines = dry.output.split(separator: "\n").map(String.init).sorted()
        #expect(
            lines == [
                "deleted   docs/extra.txt", "restored  docs/report.txt", "updated   docs/notes.txt",
            ],
            "\(dry.output)"
        )
        #expect(dry.error.contains("Nothing was changed"), "\(dry.error)")
        #expect(try snapshotOfTarget() == before)

        let json = try #require(
            try cli.json(["restore", "tree", target.path, "--delete", "--include", "docs", "--dry-run"])
                as? [String: Any]
        )
        #expect(json["deleted"] as? Int == 1 && json["dryRun"] as? Bool == true)
        #expect((json["changes"] as? [String])?.count == 3)

        let delete = try cli.run(["restore", "tree", target.path, "--delete", "--include", "docs"])
        #expect(delete.status == 0, "\(delete.error)")
        #expect(content("docs/extra.txt") == nil)
        // Outside the selection: left alone, though the snapshot lacks it too.
        #expect(content("other/mine.txt") == "mine too")
        #expect(content("a.txt") == "ALPHA")

        let everything = try cli.run(["restore", "tree", "--target", target.path, "--delete"])
        #expect(everything.status == 0, "\(everything.error)")
        #expect(content("other/mine.txt") == nil && content("a.txt") == "alpha")
        #expect(
            TemporaryDirectory.listing(target) == ["a.txt", "docs", "keep", "link"],
            "\(TemporaryDirectory.listing(target))"
        )
    }

    @Test(
        "A directory where the snapshot has a file is replaced only if empty or with --delete; a file where it has a directory is replaced"
    )
    func kindChanges() throws {
        try FileManager.default.removeItem(at: target.appendingPathComponent("a.txt"))
        try write("inside", to: target.appendingPathComponent("a.txt/inside"))
        try FileManager.default.removeItem(at: target.appendingPathComponent("keep"))
        try write("a file where a directory was", to: target.appendingPathComponent("keep"))
        let refused = try cli.run(["restore", "tree", target.path])
        #expect(refused.status == 1)
        #expect(refused.error.contains("'a.txt' is a directory with files in the target"), "\(refused.error)")
        #expect(refused.error.contains("--delete"), "\(refused.error)")
        #expect(content("a.txt/inside") == "inside")
        let replaced = try cli.run(["restore", "tree", target.path, "--delete"])
        #expect(replaced.status == 0, "\(replaced.error)")
        #expect(content("a.txt") == "alpha" && content("keep/one.txt") == "one")
        #expect(try temporaryNames().isEmpty)
    }

    @Test("--target is restic's spelling of DIR; both, or neither, is a usage error")
    func targetOption() throws {
        let both = try cli.run(["restore", "tree", target.path, "--target", target.path])
        #expect(both.status == 64)
        #expect(both.error.contains("not both"), "\(both.error)")
        let neither = try cli.run(["restore", "tree"])
        #expect(neither.status == 64)
        #expect(neither.error.contains("missing argument DIR"), "\(neither.error)")
        let bad = try cli.run(["restore", "tree", target.path, "--overwrite", "sometimes"])
        #expect(bad.status == 64)
        #expect(bad.error.contains("always, if-changed, if-newer, never"), "\(bad.error)")
    }
}
