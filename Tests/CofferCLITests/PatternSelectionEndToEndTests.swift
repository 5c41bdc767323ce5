import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39's pattern findings 1-6 and `latest`, through the built binary: what `backup` and
/// `restore` take by their patterns, each result checked against what restic 0.14 does with the same
/// tree and options.
@Suite("Pattern selection end to end: one matcher for backup and restore, as restic's")
struct PatternSelectionEndToEndTests {
    let cli: CLIHarness
    let tree: URL

    /// `d\xff`: a directory name that is not UTF-8.
    static let rawName: [UInt8] = [0x64, 0xFF]

    init() throws {
        cli = try CLIHarness()
        tree = cli.directory.path("tree")
        for path in [
            "docs/report.pdf", "docs/a.txt", "cache/keep", "cache/sub/junk2", "cache/x", "d/keep", "d/other",
            "apple", "banana", "!bang",
        ] {
            let url = tree.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(path.utf8).write(to: url)
        }
        let raw = Array(tree.path.utf8) + [UInt8(ascii: "/")] + Self.rawName
        #expect(mkdir(raw.map { CChar(bitPattern: $0) } + [0], 0o755) == 0)
        let file = raw + Array("/file".utf8)
        let descriptor = open(file.map { CChar(bitPattern: $0) } + [0], O_CREAT | O_WRONLY, 0o644)
        #expect(descriptor >= 0)
        close(descriptor)
    }

    /// The paths under `directory`, relative, sorted (a byte that is not UTF-8 shown as U+FFFD).
    func paths(_ directory: URL) throws -> [String] {
        let listed = try Products.run(
            URL(fileURLWithPath: "/usr/bin/find"),
            [directory.path, "-mindepth", "1", "-printf", "%P\n"]
        )
        return listed.output.split(separator: "\n").map(String.init).sorted()
    }

    /// Restores the tree's latest snapshot into a new directory with `options`; the paths restored.
    func restore(_ options: [String]) throws -> [String] {
        let target = cli.directory.path("restored-\(UUID().uuidString)")
        let result = try cli.run(["restore", "latest", target.path] + options)
        #expect(result.status == 0, "\(result.error)")
        return try paths(target)
    }

    /// Backs the tree up with `options` and restores it whole; the paths restored.
    func backup(_ options: [String]) throws -> [String] {
        let result = try cli.run(["backup", tree.path] + options)
        #expect(result.status == 0, "\(result.error)")
        return try restore([])
    }

    @Test("finding 1: restore --include a --include b restores both (the union, as restic)")
    func includesUnite() throws {
        _ = try backup([])
        #expect(
            try restore(["--include", "docs/a.txt", "--include", "cache/keep"]) == [
                "cache", "cache/keep", "docs", "docs/a.txt",
            ]
        )
    }

    @Test("finding 2: --include report.pdf matches docs/report.pdf at any depth, as --exclude does")
    func includeAtAnyDepth() throws {
        _ = try backup([])
        #expect(try restore(["--include", "report.pdf"]) == ["docs", "docs/report.pdf"])
        #expect(!(try restore(["--exclude", "report.pdf"])).contains("docs/report.pdf"))
    }

    @Test("finding 3: --exclude cache --exclude '!cache/keep' keeps cache/keep only, in restore as in backup")
    func negationUnderExcludedDirectory() throws {
        let options = ["--exclude", "cache", "--exclude", "!cache/keep"]
        let backedUp = try backup(options)
        #expect(backedUp.filter { $0.hasPrefix("cache") } == ["cache", "cache/keep"], "\(backedUp)")
        _ = try backup([])
        let restored = try restore(options)
        #expect(restored.filter { $0.hasPrefix("cache") } == ["cache", "cache/keep"], "\(restored)")
        #expect(restored.contains("docs/report.pdf"))
    }

    @Test("finding 4: a ! before its directory's exclusion does not win; --exclude and --iexclude stay apart")
    func lastMatchDecides() throws {
        let options = ["--exclude", "!d/keep", "--exclude", "d"]
        #expect(!(try backup(options)).contains { $0 == "d" || $0.hasPrefix("d/") })
        _ = try backup([])
        #expect(!(try restore(options)).contains { $0 == "d" || $0.hasPrefix("d/") })
        let lists = try restore(["--iexclude", "KEEP", "--exclude", "!keep"])
        #expect(!lists.contains("d/keep") && !lists.contains("cache/keep") && lists.contains("d/other"), "\(lists)")
    }

    @Test("finding 5: patterns are bytes from every source: an exclude file's line, a raw argument, \\xHH")
    func bytes() throws {
        let excludes = cli.directory.path("excludes")
        try Data([0x64, 0xFF, 0x0A, 0x23, 0x20, 0x63, 0x0A]).write(to: excludes)
        let backedUp = try backup(["--exclude-file", excludes.path])
        #expect(!backedUp.contains("d\u{FFFD}") && backedUp.contains("d/keep"), "\(backedUp)")
        _ = try backup([])
        #expect(try restore(["--include", "d\\xff"]) == ["d\u{FFFD}", "d\u{FFFD}/file"])
        // The raw byte, as a shell passes it.
        let target = cli.directory.path("raw")
        let shell = try Products.run(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c",
                "\"$0\" restore latest \"$1\" --include \"$(printf 'd\\377')\" && \"$0\" ls latest \"$(printf 'd\\377')\""
                    + " && \"$0\" find \"$(printf 'd\\377')\"",
                cli.coffer.path, target.path,
            ],
            environment: cli.environment
        )
        #expect(shell.status == 0, "\(shell.error)")
        #expect(try paths(target) == ["d\u{FFFD}", "d\u{FFFD}/file"])
        #expect(shell.output.contains("d\\xff/file") && shell.output.contains("/tree/d\\xff/"), "\(shell.output)")
        // Elsewhere an argument that is not UTF-8 is still refused.
        let refused = try Products.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "\"$0\" put \"$(printf 'n\\377')\" /dev/null", cli.coffer.path],
            environment: cli.environment
        )
        #expect(refused.status == 64 && refused.error.contains("is not UTF-8"), "\(refused.error)")
    }

    @Test("finding 6: Go's classes: [!a]* is '!' or 'a', [^a]* is anything but 'a'")
    func goClasses() throws {
        _ = try backup([])
        let bang = try restore(["--exclude", tree.path + "/[!a]*"])
        #expect(!bang.contains("apple") && !bang.contains("!bang") && bang.contains("banana"), "\(bang)")
        let caret = try restore(["--include", tree.path + "/[^a]*"])
        #expect(!caret.contains("apple") && caret.contains("banana") && caret.contains("!bang"), "\(caret)")
        let bad = try cli.run(["restore", "latest", cli.directory.path("bad").path, "--exclude", "[a-"])
        #expect(bad.status == 1 && bad.error.contains("'[a-' is not a valid glob"), "\(bad.error)")
    }

    @Test("latest is this host's newest snapshot, of any name; --host picks another host's")
    func latest() throws {
        let other = cli.directory.path("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("o".utf8).write(to: other.appendingPathComponent("only-here"))
        #expect(try cli.run(["restore", "latest", cli.directory.path("none").path]).error.contains("no snapshot yet"))
        #expect(try cli.run(["backup", tree.path]).status == 0)
        #expect(try cli.run(["backup", other.path, "--host", "laptop"]).status == 0)
        // The newest is the laptop's; this host's latest is still the tree.
        #expect(try restore([]).contains("docs/report.pdf"))
        let laptop = cli.directory.path("laptop")
        #expect(try cli.run(["restore", "latest", laptop.path, "--host", "laptop"]).status == 0)
        #expect(try paths(laptop) == ["only-here"])
        let listing = try cli.run(["ls", "latest"])
        #expect(listing.status == 0 && listing.output.contains("docs"), "\(listing.error)")
        let missing = try cli.run(["show", "latest", "--host", "nowhere"])
        #expect(missing.status == 1 && missing.error.contains("give `--host NAME` or an id"), "\(missing.error)")
    }
}
