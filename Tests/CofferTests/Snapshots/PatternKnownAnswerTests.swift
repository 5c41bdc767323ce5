import Foundation
import Testing

@testable import Coffer

/// Cases on which restic 0.14 and Coffer agreed, from `Tools/pattern-compare --known-answers`: a
/// random tree, random pattern lists, and the paths restic kept (backing up with the lists and
/// restoring whole, or restoring with them). The matcher walks each tree as backup and restore do
/// and must keep the same paths, so the suite checks restic's answers without restic.
@Suite("Path patterns: known answers from restic 0.14")
struct PatternKnownAnswerTests {
    struct Table: Decodable {
        let origin: String
        let cases: [Case]
    }

    struct Case: Decodable {
        struct Node: Decodable {
            let path: String
            let directory: Bool
        }

        let `case`: Int
        let mode: String
        let source: String
        let tree: [Node]
        let lists: [String: [String]]
        let kept: [String]
    }

    /// The paths of `tree` the selection keeps, walked as ``TreeWalker`` and a restore walk it: a
    /// directory walked into is kept when something under it is.
    static func kept(_ tree: [Case.Node], source: [[UInt8]], selection: PathSelection) -> Set<[UInt8]> {
        let slash = UInt8(ascii: "/")
        var children: [[UInt8]: [(path: [UInt8], directory: Bool)]] = [:]
        for node in tree {
            let path = [UInt8](hex: node.path)
            let parent = path.lastIndex(of: slash).map { Array(path[..<$0]) } ?? []
            children[parent, default: []].append((path, node.directory))
        }
        var kept = Set<[UInt8]>()
        /// Whether anything under `directory` was kept.
        func walk(_ directory: [UInt8]) -> Bool {
            var any = false
            for child in children[directory] ?? [] {
                let components = source + child.path.split(separator: slash).map(Array.init)
                switch selection.decision(for: components, isDirectory: child.directory) {
                case .included:
                    kept.insert(child.path)
                    any = true
                    if child.directory { _ = walk(child.path) }
                case .excluded: break
                case .excludedWalkingInto:
                    if walk(child.path) {
                        kept.insert(child.path)
                        any = true
                    }
                }
            }
            return any
        }
        _ = walk([])
        return kept
    }

    static let table: Table? = try? JSONDecoder().decode(Table.self, from: Vectors.data("restic-0.14-patterns.json"))

    @Test("the table is there and holds cases of every mode")
    func table() throws {
        let table = try #require(Self.table)
        #expect(Set(table.cases.map(\.mode)) == ["backup", "restore-exclude", "restore-include"])
        #expect(table.cases.count >= 100)
    }

    @Test("each case keeps what restic kept")
    func cases() throws {
        let table = try #require(Self.table)
        for known in table.cases {
            func patterns(_ option: String) -> [String] {
                (known.lists[option] ?? []).map { PatternText.from([UInt8](hex: $0)) }
            }
            let selection = try PathSelection(
                excluding: patterns("--exclude"),
                excludingIgnoringCase: patterns("--iexclude"),
                including: patterns("--include"),
                includingIgnoringCase: patterns("--iinclude")
            )
            let source = known.source.split(separator: "/").map { Array($0.utf8) }
            let kept = Self.kept(known.tree, source: source, selection: selection)
            let expected = Set(known.kept.map { [UInt8](hex: $0) })
            #expect(
                kept == expected,
                "case \(known.case) (\(known.mode)), \(known.lists): restic only \(expected.subtracting(kept).map(EntryPath.display)), coffer only \(kept.subtracting(expected).map(EntryPath.display))"
            )
        }
    }
}
