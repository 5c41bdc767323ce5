import Foundation
import Testing

@testable import Coffer

/// The exclude patterns, rule by rule, with restic's documented examples among the cases.
@Suite("Exclude patterns: restic's rules for backup --exclude")
struct ExcludeRulesTests {
    /// The decision for an absolute path written as text.
    static func decide(
        _ patterns: [String],
        _ path: String,
        directory: Bool = false,
        ignoringCase: [String] = [],
        parentExcluded: Bool = false
    ) throws -> ExcludeRules.Decision {
        let rules = try ExcludeRules(patterns: patterns, caseInsensitive: ignoringCase)
        let components = path.split(separator: "/").map { Array($0.utf8) }
        return rules.decision(for: components, isDirectory: directory, parentExcluded: parentExcluded)
    }

    @Test(
        "a pattern without a slash matches any component; globs stay inside one component",
        arguments: [
            ("*.log", "/home/ann/app.log", true), ("*.log", "/home/ann/logs/x.log", true),
            ("*.log", "/home/ann/app.log.1", false), ("node_modules", "/src/web/node_modules", true),
            ("node_modules", "/src/node_modules_old", false), ("a?c", "/x/abc", true), ("[ab]*", "/x/cat", false),
            ("*", "/x/.hidden", true), ("foo/bar", "/x/foo/bar", true), ("foo/bar", "/x/foo/baz/bar", false),
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
            ("foo/**/bar", "/x/foo/bar", true), ("foo/**/bar", "/x/foo/1/2/bar", true),
        ]
    )
    func anchoredAndAnyDepth(pattern: String, path: String, excluded: Bool) throws {
        #expect(try Self.decide([pattern], path) == (excluded ? .excluded : .included), "\(pattern) on \(path)")
    }

    @Test("! puts back what an earlier pattern left out; the last matching pattern decides")
    func negation() throws {
        #expect(try Self.decide(["*.tmp", "!keep.tmp"], "/x/keep.tmp") == .included)
        #expect(try Self.decide(["*.tmp", "!keep.tmp"], "/x/other.tmp") == .excluded)
        #expect(try Self.decide(["!keep.tmp", "*.tmp"], "/x/keep.tmp") == .excluded)
        // restic's example: everything in /home but one user.
        #expect(try Self.decide(["/home/*", "!/home/ann"], "/home/ann", directory: true) == .included)
        #expect(try Self.decide(["/home/*", "!/home/ann"], "/home/bob", directory: true) == .excluded)
        // A directory left out is walked into when a ! pattern may match below it, and what is
        // under it stays out unless put back.
        #expect(try Self.decide(["/data", "!/data/keep"], "/data", directory: true) == .excludedWalkingInto)
        #expect(try Self.decide(["/data", "!/data/keep"], "/data/keep", parentExcluded: true) == .included)
        #expect(try Self.decide(["/data", "!/data/keep"], "/data/other", parentExcluded: true) == .excluded)
        #expect(try Self.decide(["/data", "!/elsewhere/keep"], "/data", directory: true) == .excluded)
    }

    @Test("--iexclude ignores case; --exclude does not")
    func caseInsensitive() throws {
        #expect(try Self.decide([], "/x/PHOTO.JPG", ignoringCase: ["*.jpg"]) == .excluded)
        #expect(try Self.decide(["*.jpg"], "/x/PHOTO.JPG") == .included)
    }

    @Test("names that are not UTF-8 are matched as the bytes they are")
    func bytes() throws {
        let rules = try ExcludeRules(patterns: ["r*sum*.doc"])
        let latin1: [[UInt8]] = [Array("home".utf8), [0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x2E, 0x64, 0x6F, 0x63]]
        #expect(rules.decision(for: latin1, isDirectory: false, parentExcluded: false) == .excluded)
    }

    @Test("an exclude file: one pattern a line, blank lines and # comments skipped; empty patterns refused")
    func files() throws {
        #expect(
            ExcludeRules.lines(of: "# caches\n*.tmp\n\n  node_modules  \n#x\n!keep.tmp\n") == [
                "*.tmp", "node_modules", "!keep.tmp",
            ]
        )
        #expect(throws: CofferError.self) { try ExcludeRules(patterns: ["!"]) }
        #expect(throws: CofferError.self) { try ExcludeRules(patterns: ["/"]) }
    }
}
