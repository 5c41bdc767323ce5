import CofferTestSupport
import Foundation
import Testing

/// The progress bar on a real pseudo-terminal of 60 and 160 columns, through the built `coffer`: each
/// drawing fits the width (so it never wraps or scrolls), clears what the one before left, and shows
/// elapsed time, a percentage and an ETA once the total is known; when the work is done the bar is
/// cleared and the command's summary is the last line.
@Suite("Progress on a terminal: fits 60 and 160 columns, cleared, with elapsed, percentage and ETA")
struct ProgressEndToEndTests {
    let cli: CLIHarness
    let file: URL

    init() throws {
        cli = try CLIHarness()
        file = cli.directory.path("content")
        try RandomBytes.data(count: 40_000_000).write(to: file)
    }

    /// Every drawing in `screen`'s raw output (the text between carriage returns, less the clearing
    /// sequence), for the progress lines that start with `label`.
    func drawings(_ screen: Terminal.Screen, label: String) -> [String] {
        String(decoding: screen.raw, as: UTF8.self)
            .split(separator: "\r")
            .map { $0.replacingOccurrences(of: "\u{1B}[K", with: "").prefix { $0 != "\n" && $0 != "\r\n" } }
            .map(String.init)
            .filter { $0.hasPrefix(label) }
    }

    @Test(
        "put and backup draw within the width, leaving one clean line each",
        .enabled(if: Terminal.canRun),
        arguments: [60, 160]
    )
    func fits(columns: Int) throws {
        let name = "photos/2024/a-rather-long-album-name-for-a-holiday/IMG_0042-original.jpg"
        let put = try Terminal.run(
            "\(cli.coffer.path) put \(name) \(file.path)",
            columns: columns,
            environment: cli.environment
        )
        let putLines = drawings(put, label: "put ")
        #expect(!putLines.isEmpty, "\(put)")
        for line in putLines { #expect(line.count <= columns - 1, "\(columns): '\(line)'") }
        // The bar is gone from the screen once the put is done: the summary is the last line.
        #expect(!put.lines.contains { $0.hasPrefix("put ") }, "\(put)")
        #expect(put.lines.contains { $0.hasPrefix("Stored") }, "\(put)")
        let last = try #require(putLines.last)
        #expect(last.contains("%") && last.contains(" / 38.1 MiB"), "\(last)")
        #expect(columns < 100 || last.contains("0:0"), "\(last)")
        // The name is cut in the middle to fit, keeping its start and its end.
        #expect(
            last.hasPrefix("put photos/") && last.contains("…") && (last.contains(".jpg  ") || last.contains(".jpg [")),
            "\(last)"
        )
        #expect(columns < 100 || last.contains("/s"), "\(last)")
        #expect(!put.lines.contains { $0.contains("/ss") || $0.contains("B/sB") }, "\(put)")
        #expect(String(decoding: put.raw, as: UTF8.self).contains("Stored \(name)"), "\(put)")

        let tree = cli.directory.path("tree")
        for directory in 0..<20 {
            let folder = tree.appendingPathComponent("d\(directory)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for index in 0..<50 {
                try Data("file \(directory) \(index)".utf8).write(to: folder.appendingPathComponent("f\(index)"))
            }
        }
        // Content the vault does not hold yet (a copy of the put's would be stored at once): the backup
        // lasts several redraws, whatever the build.
        try RandomBytes.data(count: 40_000_000).write(to: tree.appendingPathComponent("large"))
        let backup = try Terminal.run(
            "\(cli.coffer.path) backup \(tree.path)",
            columns: columns,
            environment: cli.environment
        )
        for line in drawings(backup, label: "backup ") { #expect(line.count <= columns - 1, "\(columns): '\(line)'") }
        #expect(!backup.lines.contains { $0.hasPrefix("backup ") }, "\(backup)")
        // Once the count is in, the drawings show it: the tree's (the scan may end after the last
        // drawing on a fast build, so not every run draws it).
        for line in drawings(backup, label: "backup ") where line.contains(" paths") && line.contains(" / ") {
            #expect(line.contains(" / 1022 paths"), "\(line)")
        }
        // Partway, once the count is in: a percentage and an ETA.
        let partway = drawings(backup, label: "backup ").filter { $0.contains("ETA") }
        #expect(partway.isEmpty || partway.allSatisfy { $0.contains("%") }, "\(partway)")
        #expect(backup.contains("Snapshot "), "\(backup)")
    }
}
