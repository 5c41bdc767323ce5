import CofferTestSupport
import Foundation
import Testing

/// `Tools/install`, as the README gives it, into a throwaway prefix with the built `coffer`: the
/// program, every man page and the three completion scripts land where the README says, the
/// installed program runs, and `--uninstall` takes all of it away again.
@Suite("Tools/install: the program, its man pages and completions, where the README says")
struct InstallEndToEndTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("install into a prefix, run the installed coffer, uninstall")
    func installAndUninstall() throws {
        let prefix = try TemporaryDirectory()
        let coffer = try Products.executable("coffer")
        let script = Self.repository.appendingPathComponent("Tools/install")
        let installed = try Products.run(script, ["--prefix", prefix.url.path, "--binary", coffer.path])
        #expect(installed.status == 0, "\(installed.error)")
        #expect(installed.output.contains("Installed coffer in \(prefix.url.path)/bin"), "\(installed.output)")

        let expected = [
            "bin/coffer", "share/man/man1/coffer.1", "share/man/man1/coffer-backup.1",
            "share/man/man1/coffer-item.1", "share/bash-completion/completions/coffer",
            "share/zsh/site-functions/_coffer", "share/fish/vendor_completions.d/coffer.fish",
        ]
        for path in expected {
            #expect(FileManager.default.fileExists(atPath: prefix.path(path).path), "\(path) is missing")
        }
        let pages = try FileManager.default.contentsOfDirectory(atPath: prefix.path("share/man/man1").path)
        let committed = try FileManager.default.contentsOfDirectory(
            atPath: Self.repository.appendingPathComponent("docs/man").path
        )
        #expect(Set(pages) == Set(committed.filter { $0.hasSuffix(".1") }))
        let version = try Products.run(prefix.path("bin/coffer"), ["--version"])
        #expect(version.status == 0 && version.output.hasPrefix("coffer "), "\(version)")
        let bash = try String(contentsOf: prefix.path("share/bash-completion/completions/coffer"), encoding: .utf8)
        #expect(bash.contains("complete -o filenames -F _coffer coffer"))

        let removed = try Products.run(script, ["--prefix", prefix.url.path, "--uninstall"])
        #expect(removed.status == 0, "\(removed.error)")
        for path in expected {
            #expect(!FileManager.default.fileExists(atPath: prefix.path(path).path), "\(path) is still there")
        }
    }
}
