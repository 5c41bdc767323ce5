import CofferCLI
import CofferTestSupport
import Foundation
import Testing

/// The command reference (`docs/CLI.md`) and the man pages (`docs/man`) are made from the command
/// definitions by `Tools/reference`: the committed files must be exactly what the definitions give
/// now, and each page must be valid man(7) markup.
@Suite("Reference and man pages: generated, committed, valid")
struct ReferenceDocumentsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("the committed docs/CLI.md and docs/man are what the command definitions give")
    func committedFilesMatch() throws {
        let files = ReferenceDocuments.files()
        for file in files {
            let committed = try? String(contentsOf: Self.repository.appendingPathComponent(file.path), encoding: .utf8)
            #expect(committed == file.content, "\(file.path) differs from the command definitions: run Tools/reference")
        }
        let pages = try FileManager.default.contentsOfDirectory(
            atPath: Self.repository.appendingPathComponent("docs/man").path
        )
        let expected = Set(files.map { URL(fileURLWithPath: $0.path).lastPathComponent })
        #expect(Set(pages.filter { $0.hasSuffix(".1") }) == expected.subtracting(["CLI.md"]))
    }

    @Test("one page per top-level command and one for the program, each with every section")
    func everyCommandHasAPage() throws {
        let pages = ReferenceDocuments.files().filter { $0.path.hasPrefix("docs/man/") }
        let names = Set(pages.map { URL(fileURLWithPath: $0.path).lastPathComponent })
        for command in CofferCommand.root.subcommands {
            #expect(names.contains("coffer-\(command.name).1"), "no page for \(command.name)")
        }
        #expect(names.contains("coffer.1"))
        for page in pages {
            for section in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH EXIT STATUS", ".SH SEE ALSO"] {
                #expect(page.content.contains(section), "\(page.path) lacks \(section)")
            }
        }
        let backup = try #require(pages.first { $0.path.hasSuffix("coffer-backup.1") })
        #expect(backup.content.contains("\\fB\\-\\-exclude\\fR \\fIPATTERN\\fR"))
        #expect(backup.content.contains("\\fB3\\fR"), "backup's page lists its exit status 3")
        let info = try #require(pages.first { $0.path.hasSuffix("coffer-info.1") })
        #expect(!info.content.contains("\\fB3\\fR"), "info never exits 3")
    }

    @Test("groff reads every page without a warning")
    func pagesAreValid() throws {
        let groff = URL(fileURLWithPath: "/usr/bin/groff")
        guard FileManager.default.isExecutableFile(atPath: groff.path) else {
            print("skipped: groff is not installed")
            return
        }
        let directory = try TemporaryDirectory()
        for page in ReferenceDocuments.files() where page.path.hasPrefix("docs/man/") {
            let file = directory.path(URL(fileURLWithPath: page.path).lastPathComponent)
            try Data(page.content.utf8).write(to: file)
            let result = try Products.run(groff, ["-man", "-ww", "-z", file.path])
            #expect(result.status == 0 && result.error.isEmpty, "\(page.path): \(result.error)")
        }
    }
}
