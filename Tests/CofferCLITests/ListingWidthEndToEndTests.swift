import CofferTestSupport
import Foundation
import Testing

/// Every listing and summary, drawn on an 80-column pseudo-terminal as a person sees it: no line runs
/// past the last column (the terminal would wrap it), with names long enough to make the old layouts
/// overflow. Tables shorten their times, drop the columns that matter least and cut a long name in the
/// middle; prose breaks at spaces; help wraps under each option.
@Suite("Output fits an 80-column terminal: listings, summaries, help")
struct ListingWidthEndToEndTests {
    let cli: CLIHarness
    let tree: URL

    init() throws {
        cli = try CLIHarness()
        tree = cli.directory.path("home/docs")
        let deep = tree.appendingPathComponent("2026/quarter-3")
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        try Data("a".utf8).write(to: tree.appendingPathComponent("a.txt"))
        try Data("report".utf8).write(to: deep.appendingPathComponent("quarterly-report-final-2.pdf"))
        for arguments in [
            ["backup", tree.path, "--tag", "daily,laptop,important"],
            ["put", "photos/2024/a-rather-long-album-name-for-a-holiday/IMG_0042-original.jpg", tree.path + "/a.txt"],
            [
                "item", "add", "--service", "a-long-service-name.example.com", "--account", "someone@example.com",
                "--label", "A label that is rather long for a keychain item", "--value", "v", "--sync",
            ],
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.error)")
        }
        try Data("ab".utf8).write(to: tree.appendingPathComponent("a.txt"))
    }

    @Test("no line is wider than the terminal", .enabled(if: Terminal.canRun))
    func fits() throws {
        let restored = cli.directory.path("restored").path
        let commands: [[String]] = [
            ["backup", tree.path], ["snapshots"], ["ls"], ["ls", tree.path, "2026"], ["show", tree.path],
            ["find", "*.pdf"], ["diff", tree.path, tree.path], ["item", "find"], ["info"], ["devices"],
            ["device", "show"], ["stats"], ["verify", "--read-data"], ["forget", "--keep-last", "1", "--dry-run"],
            ["restore", tree.path, restored], ["write-only", "status"], ["help"], ["help", "backup"],
            ["help", "item", "add"], ["help", "restore"],
        ]
        for arguments in commands {
            let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
            let screen = try Terminal.run("\(cli.coffer.path) \(quoted)", columns: 80, environment: cli.environment)
            #expect(screen.wraps == 0, "coffer \(arguments.joined(separator: " ")) wrapped:\n\(screen)")
            #expect(!screen.lines.contains { $0.hasPrefix("coffer: error:") }, "coffer \(arguments): \(screen)")
        }
    }

    @Test("on a terminal, tables keep their key columns and mark what they cut", .enabled(if: Terminal.canRun))
    func tablesShorten() throws {
        let snapshots = try Terminal.run("\(cli.coffer.path) snapshots", columns: 80, environment: cli.environment)
        let header = try #require(snapshots.lines.first { $0.hasPrefix("ID") })
        #expect(header.contains("TIME") && header.contains("SIZE") && header.contains("NAME"), "\(snapshots)")
        let blobs = try Terminal.run("\(cli.coffer.path) ls", columns: 60, environment: cli.environment)
        #expect(blobs.wraps == 0 && blobs.contains("…"), "\(blobs)")
        #expect(blobs.contains("0042-original.jpg"), "a name cut in the middle keeps its end: \(blobs)")
        // Written to a pipe, every column is there in full.
        let piped = try cli.run(["snapshots"])
        #expect(piped.output.contains("SCOPE") && piped.output.contains("important"), "\(piped.output)")
    }
}
