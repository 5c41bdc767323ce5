import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The previous snapshot read in step with the walk: the order it assumes, and what a backup finds
/// through it.
@Suite("Trees read as streams: the previous snapshot in step with the walk, and diff")
struct TreeStreamTests {
    /// Walk order stated a second way: component by component, each compared as bytes.
    static func componentsPrecede(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let left = a.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init)
        let right = b.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init)
        return left.lexicographicallyPrecedes(right) { $0.lexicographicallyPrecedes($1) }
    }

    @Test(
        "walk order is the component-wise byte order, a directory before what is under it",
        arguments: ModelSeeds.seeds("COFFER_WALK_ORDER_SEEDS", defaults: Array(1...20))
    )
    func order(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        // Names from bytes around '/' (0x2f): '-', '.', '0', and others, never '/' or NUL.
        let alphabet: [UInt8] = [0x01, 0x20, 0x2d, 0x2e, 0x30, 0x41, 0x61, 0x7e, 0xe9, 0xff]
        func name() -> [UInt8] {
            (0..<Int.random(in: 1...3, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
        }
        let paths = (0..<200).map { _ in
            (0..<Int.random(in: 1...4, using: &random)).map { _ in name() }.joined(separator: [UInt8(ascii: "/")]).map {
                $0
            }
        }
        for a in paths {
            for b in paths.prefix(40) {
                #expect(
                    TreeStream.walkOrder(a, precedes: b) == Self.componentsPrecede(a, b),
                    "seed \(seed): \(a) vs \(b)"
                )
            }
        }
    }

    @Test("a backup over a changed tree reads exactly the new and changed files, a million-entry map no more")
    func lookups() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        let source = fixture.directory.path("source")
        // Names that sort around '/': "a", "a.txt", "a-b", "a/…", "b", a Latin-1 name.
        for path in ["a/x", "a/y/z", "a.txt", "a-b", "b", "c/d/e/f", "r\u{e9}sum\u{e9}"] {
            let url = source.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(path.utf8).write(to: url)
        }
        _ = try vault.snapshots.backup(directory: source)
        let unchanged = try vault.snapshots.backup(directory: source).snapshot.statistics
        #expect(unchanged.unchangedFiles == 7 && unchanged.newFiles == 0 && unchanged.changedFiles == 0)
        try Data("changed, longer".utf8).write(to: source.appendingPathComponent("a/y/z"))
        try Data("new".utf8).write(to: source.appendingPathComponent("a/w"))
        try FileManager.default.removeItem(at: source.appendingPathComponent("a-b"))
        let changed = try vault.snapshots.backup(directory: source).snapshot.statistics
        #expect(changed.newFiles == 1 && changed.changedFiles == 1 && changed.unchangedFiles == 5, "\(changed)")
        var plan: [String: BackupPlanEntry.Change] = [:]
        _ = try vault.snapshots.dryRun(directory: source, options: BackupOptions()) { plan[$0.path] = $0.change }
        #expect(plan.values.allSatisfy { $0 != .new && $0 != .changed }, "\(plan)")
    }
}

@Suite("diff merges two streamed trees")
struct StreamedDiffTests {
    @Test("added, removed and changed paths around names that sort near '/', and a failure is not silent")
    func merge() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        let source = fixture.directory.path("source")
        func write(_ path: String, _ text: String) throws {
            let url = source.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(text.utf8).write(to: url)
        }
        for path in ["a/x", "a/y/z", "a.txt", "a-b", "b", "c/d/e"] { try write(path, path) }
        let first = try vault.snapshots.backup(directory: source).snapshot
        try write("a/y/z", "changed")
        try write("a/w", "new")
        try write("a0", "new too")
        try FileManager.default.removeItem(at: source.appendingPathComponent("a-b"))
        try FileManager.default.removeItem(at: source.appendingPathComponent("c"))
        let second = try vault.snapshots.backup(directory: source).snapshot
        let diff = try vault.snapshots.diff(first.id, second.id)
        #expect(diff.added == ["a/w", "a0"], "\(diff)")
        #expect(diff.removed == ["a-b", "c", "c/d", "c/d/e"], "\(diff)")
        #expect(
            diff.changed.contains("a/y/z") && !diff.changed.contains("a/x") && !diff.changed.contains("b"),
            "\(diff)"
        )
        let none = try vault.snapshots.diff(second.id, second.id)
        #expect(none.added.isEmpty && none.removed.isEmpty && none.changed.isEmpty)
    }
}

@Suite("Streamed trees meet damage")
struct DamagedTreeStreamTests {
    @Test("a damaged previous tree: the next backup reads every file again and succeeds; diff over it fails naming it")
    func damagedPrevious() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        let source = fixture.directory.path("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for index in 0..<5 { try Data("file \(index)".utf8).write(to: source.appendingPathComponent("f\(index)")) }
        let first = try vault.snapshots.backup(directory: source).snapshot
        // Damage a chunk of the first snapshot's tree.
        let record = try vault.snapshots.resolve(first.id)
        guard case .inline(let entries) = record.chunks, let id = entries.first?.id else {
            Issue.record("expected an inline tree")
            return
        }
        try vault.environment.write { (txn) throws in
            var stored = try #require(try vault.schema.records.record(id, in: txn))
            stored[stored.count / 2] ^= 0x20
            try vault.schema.records.put(id, stored, in: txn)
        }
        // A change, so the new tree is not the damaged one's bytes.
        try Data("changed".utf8).write(to: source.appendingPathComponent("f0"))
        let second = try vault.snapshots.backup(directory: source).snapshot
        #expect(second.statistics.unchangedFiles == 0 && second.statistics.newFiles == 5, "\(second.statistics)")
        let target = fixture.directory.path("restored")
        _ = try vault.snapshots.restore(second.id, to: target)
        #expect(FileManager.default.contents(atPath: target.path + "/f0") == Data("changed".utf8))
        let refused = #expect(throws: CofferError.self) { _ = try vault.snapshots.diff(first.id, second.id) }
        #expect(
            refused?.code == .decode && refused?.message.contains(first.shortID) == true,
            "\(String(describing: refused))"
        )
    }
}
