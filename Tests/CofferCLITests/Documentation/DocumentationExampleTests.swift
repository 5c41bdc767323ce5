import CofferTestSupport
import Foundation
import Testing

/// Every example in the README and in `docs/` that runs `coffer` is run, as written, on throwaway
/// machines (``ExampleSandbox``): each command must end as the document shows (a failure only where
/// it shows `coffer: error: …`), and print what the document shows it printing, up to what a sandbox
/// cannot reproduce (ids, counts, sizes, times). A block that runs `coffer` and is not a terminal
/// session must say why it is not run.
@Suite("Documentation examples: every README and docs/ example that runs coffer, run as written")
struct DocumentationExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The README and every Markdown file under `docs/` and in the DocC catalog.
    static let documents: [DocumentationExample] = {
        let manager = FileManager.default
        var paths = ["README.md"]
        for folder in ["docs", "Sources/Coffer/Coffer.docc"] {
            let names = (try? manager.contentsOfDirectory(atPath: repository.appendingPathComponent(folder).path)) ?? []
            paths += names.filter { $0.hasSuffix(".md") }.sorted().map { "\(folder)/\($0)" }
        }
        return paths.compactMap { path in
            guard let text = try? String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
            else { return nil }
            return DocumentationExample(path: path, text: text)
        }
    }()

    /// The documents that hold terminal sessions running `coffer`.
    static let sessions = documents.filter { !$0.commands.isEmpty }.map(\.path)

    @Test("each document's sessions run as shown", .enabled(if: ExampleMachine.isPossible), arguments: sessions)
    func sessionsRun(path: String) throws {
        let document = try #require(Self.documents.first { $0.path == path })
        let sandbox = try ExampleSandbox(document)
        for problem in try sandbox.run() {
            Issue.record(Comment(rawValue: problem))
        }
    }

    @Test("every block that runs coffer is a session that runs, or says why it is not run")
    func nothingEscapes() throws {
        var sessions = 0
        for document in Self.documents {
            for block in document.blocks where block.runsCoffer {
                if !block.commands.isEmpty {
                    sessions += 1
                    #expect(
                        block.notRunBecause == nil,
                        "\(document.path) line \(block.line): a session marked not run; it runs"
                    )
                } else {
                    #expect(
                        block.notRunBecause != nil,
                        "\(document.path) line \(block.line): runs coffer without '$ ' prompts, and no '<!-- not run: REASON -->' says why"
                    )
                }
            }
        }
        #expect(sessions >= 15)
        #expect(Self.sessions.contains("README.md"))
    }

    @Test("a shown line matches what the sandbox prints, ids and figures aside")
    func shownLines() throws {
        let backup = try ShownOutputPattern(
            "Snapshot 3f9c2a71 of /home/ann/docs: 1204 files (1204 new, 0 changed, 0 unchanged), 87 directories,"
        )
        let printed =
            "Snapshot 0be1d2c3 of /home/ann/docs: 1 file (1 new, 0 changed, 0 unchanged), 1 directory, 12 B; 120 B added to the vault."
        #expect(backup.match(printed) == ["3f9c2a71": "0be1d2c3"])
        #expect(try ShownOutputPattern("412.0 MiB; 168.3 MiB added to the vault.").match(printed) != nil)
        #expect(
            try ShownOutputPattern("Created vault 0C1D… at /home/ann/x").match(
                "Created vault 6105ABD1-2E at /home/ann/x"
            ) != nil
        )
        #expect(
            try ShownOutputPattern("coffer: error: the passphrase is wrong").match("coffer: error: no such vault")
                == nil
        )
        #expect(try ShownOutputPattern("2 snapshots would be dropped").match("1 snapshot would be dropped") != nil)
    }
}
