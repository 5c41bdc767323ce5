import Foundation
import Testing

@testable import Coffer

/// The path patterns of backup and restore, rule by rule, with restic's documented examples and the
/// cases issue 39 found among them (each checked against restic 0.14).
@Suite("Path patterns: restic's rules for backup and restore")
struct PathSelectionTests {
    /// The decision for an absolute path written as text.
    static func decide(
        _ patterns: [String],
        _ path: String,
        directory: Bool = false,
        ignoringCase: [String] = [],
        including: [String] = []
    ) throws -> PathSelection.Decision {
        let rules = try PathSelection(excluding: patterns, excludingIgnoringCase: ignoringCase, including: including)
        let components = path.split(separator: "/").map { Array($0.utf8) }
        return rules.decision(for: components, isDirectory: directory)
    }

    @Test(
        "a pattern without a slash matches any component; globs stay inside one component",
        arguments: [
            ("*.log", "/home/ann/app.log", true), ("*.log", "/home/ann/logs/x.log", true),
            ("*.log", "/home/ann/app.log.1", false), ("node_modules", "/src/web/node_modules", true),
            ("node_modules", "/src/node_modules_old", false), ("a?c", "/x/abc", true), ("[ab]*", "/x/cat", false),
            ("*", "/x/.hidden", true), ("foo/bar", "/x/foo/bar", true), ("foo/bar", "/x/foo/baz/bar", false),
            // What a pattern matches, it matches everything under too (restic's "any run of components").
            ("node_modules", "/src/node_modules/x/y.js", true), ("foo/bar", "/x/foo/bar/baz", true),
        ]
    )
    func unanchored(pattern: String, path: String, excluded: Bool) throws {
        #expect(try Self.decide([pattern], path) == (excluded ? .excluded : .included), "\(pattern) on \(path)")
    }

    @Test(
        "a pattern starting with / is matched from the root; ** spans any number of directories",
        arguments: [
            ("/home/*/cache", "/home/ann/cache", true), ("/home/*/cache", "/srv/home/ann/cache", false),
            ("/home", "/home", true), ("/tmp", "/home/tmp", false), ("/home/**/*.bak", "/home/a/b/c/x.bak", true),
            ("/home/**/*.bak", "/home/x.bak", true), ("**/tmp", "/a/b/tmp", true), ("/a/**", "/a/b/c", true),
            ("foo/**/bar", "/x/foo/bar", true), ("foo/**/bar", "/x/foo/1/2/bar", true), ("/", "/anything", true),
            ("cache/", "/x/cache", true), ("./a//b/../c", "/x/a/c", true),
        ]
    )
    func anchoredAndAnyDepth(pattern: String, path: String, excluded: Bool) throws {
        #expect(try Self.decide([pattern], path) == (excluded ? .excluded : .included), "\(pattern) on \(path)")
    }

    @Test(
        "Go's glob syntax: [^a] negates a class, [!a] is '!' or 'a'; \\ escapes; \\xHH is a byte (finding 6)",
        arguments: [
            ("[!a]*", "/apple", true), ("[!a]*", "/!bang", true), ("[!a]*", "/banana", false),
            ("[^a]*", "/banana", true), ("[^a]*", "/apple", false), ("\\*", "/*", true), ("\\*", "/a", false),
            ("[a-c]x", "/bx", true), ("[a-c]x", "/dx", false), ("?", "/é", true), ("??", "/é", false),
            ("caf\\xc3\\xa9", "/café", true), ("[\\]]", "/]", true),
        ]
    )
    func goGlobs(pattern: String, path: String, excluded: Bool) throws {
        #expect(try Self.decide([pattern], path) == (excluded ? .excluded : .included), "\(pattern) on \(path)")
    }

    @Test("the last matching pattern decides, ! included, whatever the order (issue 39, findings 3 and 4)")
    func negation() throws {
        #expect(try Self.decide(["*.tmp", "!keep.tmp"], "/x/keep.tmp") == .included)
        #expect(try Self.decide(["*.tmp", "!keep.tmp"], "/x/other.tmp") == .excluded)
        #expect(try Self.decide(["!keep.tmp", "*.tmp"], "/x/keep.tmp") == .excluded)
        // restic's example: everything in /home but one user.
        #expect(try Self.decide(["/home/*", "!/home/ann"], "/home/ann", directory: true) == .included)
        #expect(try Self.decide(["/home/*", "!/home/ann"], "/home/ann/notes", directory: false) == .included)
        #expect(try Self.decide(["/home/*", "!/home/ann"], "/home/bob", directory: true) == .excluded)
        // A directory left out is walked into when a ! pattern may match below it; what is under it
        // stays out unless put back.
        let cache = ["cache", "!cache/keep"]
        #expect(try Self.decide(cache, "/x/cache", directory: true) == .excludedWalkingInto)
        #expect(try Self.decide(cache, "/x/cache/keep") == .included)
        #expect(try Self.decide(cache, "/x/cache/sub/junk2") == .excluded)
        #expect(try Self.decide(cache, "/x/cache/sub", directory: true) == .excludedWalkingInto)
        #expect(try Self.decide(["/data", "!/elsewhere/keep"], "/data", directory: true) == .excluded)
        // A ! pattern before the exclusion of its directory does not win (restic leaves d/keep out).
        #expect(try Self.decide(["!d/keep", "d"], "/x/d/keep") == .excluded)
    }

    @Test("--exclude and --iexclude are lists of their own: a ! in one does not undo the other")
    func separateLists() throws {
        #expect(try Self.decide(["!keep.TMP"], "/x/keep.TMP", ignoringCase: ["*.tmp"]) == .excluded)
        #expect(try Self.decide([], "/x/PHOTO.JPG", ignoringCase: ["*.jpg"]) == .excluded)
        #expect(try Self.decide(["*.jpg"], "/x/PHOTO.JPG") == .included)
        #expect(try Self.decide([], "/x/CAFÉ", ignoringCase: ["café"]) == .excluded)
    }

    @Test("includes follow the same rules: a name at any depth, the union of several (findings 1 and 2)")
    func includes() throws {
        #expect(try Self.decide([], "/src/docs/report.pdf", including: ["report.pdf"]) == .included)
        #expect(try Self.decide([], "/src/docs", directory: true, including: ["report.pdf"]) == .excludedWalkingInto)
        #expect(try Self.decide([], "/src/a", including: ["a", "b"]) == .included)
        #expect(try Self.decide([], "/src/b/c", including: ["a", "b"]) == .included)
        #expect(try Self.decide([], "/src/c", including: ["a", "b"]) == .excluded)
        #expect(try Self.decide([], "/src/docs/old", including: ["docs", "!docs/old"]) == .excluded)
        #expect(try Self.decide([], "/other", directory: true, including: ["/src/docs"]) == .excluded)
    }

    @Test("names that are not UTF-8 are matched as the bytes they are (finding 5)")
    func bytes() throws {
        let latin1: [[UInt8]] = [Array("home".utf8), [0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x2E, 0x64, 0x6F, 0x63]]
        for pattern in ["r*sum*.doc", "r\\xe9sum\\xe9.doc", "r?sum?.doc", PatternText.from(latin1[1])] {
            let rules = try PathSelection(excluding: [pattern])
            #expect(rules.decision(for: latin1, isDirectory: false) == .excluded, "\(pattern)")
        }
        #expect(PatternText.from([0x64, 0xFF]) == "d\\xff")
        #expect(PatternText.from([0x5C, 0xFF]) == "\\xff")
    }

    @Test("an exclude file: one pattern a line as bytes, blank lines and # comments skipped")
    func files() throws {
        #expect(
            PatternText.lines(of: Array("# caches\n*.tmp\r\n\n  node_modules  \n#x\n!keep.tmp\n".utf8)) == [
                "*.tmp", "node_modules", "!keep.tmp",
            ]
        )
        #expect(PatternText.lines(of: [0x64, 0xFF, 0x0A]) == ["d\\xff"])
    }

    @Test(
        "empty patterns and globs that cannot be parsed are refused, naming them",
        arguments: ["", "!", "a[", "[]", "[a-]", "x\\", "[\\xff]"]
    )
    func refused(pattern: String) throws {
        #expect(throws: CofferError.self) { try PathSelection(excluding: [pattern]) }
    }
}
