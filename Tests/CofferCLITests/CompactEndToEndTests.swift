import CofferTestSupport
import Foundation
import Glibc
import Testing

/// `coffer compact` through the built binary: deleted data's space goes back to the file system,
/// nothing else changes, a kill at any step leaves a vault that opens and verifies, and a process
/// opening the vault meanwhile waits and then writes to the compacted file.
@Suite("coffer compact: space back after deletes, crash-safe, exclusive")
struct CompactEndToEndTests {
    let cli: CLIHarness
    let kept: URL
    var dataFile: URL { cli.directory.path("vault").appendingPathComponent("data.mdb") }

    /// A vault with a 24 MB blob (then deleted), a 6 MB blob kept, an item and a snapshot.
    init() throws {
        cli = try CLIHarness()
        kept = cli.directory.path("kept")
        // 6 MB that does not compress: the compacted copy takes several of LMDB's 1 MiB writes.
        try RandomBytes.data(count: 6_000_000).write(to: kept)
        let large = cli.directory.path("large")
        try RandomBytes.data(count: 24_000_000).write(to: large)
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Data("a file in a snapshot\n".utf8).write(to: tree.appendingPathComponent("note.txt"))
        for arguments in [
            ["put", "large", large.path], ["put", "kept", kept.path],
            ["item", "add", "--service", "mail", "--account", "ann", "--value", "hunter2"],
            ["backup", tree.path], ["rm", "large"],
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.error)")
        }
    }

    var fileSize: Int { (try? FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int) ?? 0 }

    /// Everything the vault held is there and whole.
    func expectIntact(_ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let verify = try cli.run(["verify", "--read-data"])
        #expect(verify.status == 0, "\(context): \(verify.output) \(verify.error)", sourceLocation: sourceLocation)
        let restored = cli.directory.path("restored")
        try? FileManager.default.removeItem(at: restored)
        #expect(try cli.run(["get", "kept", restored.path]).status == 0, "\(context)", sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: restored) == Data(contentsOf: kept), "\(context)", sourceLocation: sourceLocation)
        #expect(
            try cli.run(["item", "get", "--service", "mail", "--account", "ann"]).output == "hunter2",
            "\(context)",
            sourceLocation: sourceLocation
        )
        #expect(try cli.run(["snapshots"]).output.contains("tree"), "\(context)", sourceLocation: sourceLocation)
    }

    @Test("info shows the deleted data's space as free; compact gives it back and changes nothing else")
    func givesSpaceBack() throws {
        let before = fileSize
        let info = try #require(try cli.json(["info"]) as? [String: Any])
        let live = try #require(info["liveBytes"] as? Int)
        #expect(live < before / 3, "live \(live) of \(before)")
        #expect(try cli.run(["info"]).output.contains("free for reuse (coffer compact gives it back)"))

        let compacted = try cli.run(["compact"])
        #expect(compacted.status == 0, "\(compacted.error)")
        #expect(compacted.output.contains("given back"), "\(compacted.output)")
        #expect(fileSize < before / 3, "\(before) → \(fileSize)")
        #expect(fileSize <= live + (1 << 20))
        #expect(!FileManager.default.fileExists(atPath: dataFile.path + ".compacting"))
        try expectIntact("after compact")
        // Later writes go on in the new file, and it grows again as it should.
        let more = cli.directory.path("more")
        try Data(repeating: 5, count: 3_000_000).write(to: more)
        #expect(try cli.run(["put", "more", more.path]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "after", "--account", "a", "--value", "v"]).status == 0)
        try expectIntact("after writes that follow a compact")
        let again = try #require(try cli.json(["compact"]) as? [String: Any])
        #expect((again["bytesAfter"] as? Int ?? 0) > 0)
    }

    @Test("compact is refused, changing nothing, while another process has the vault open")
    func refusedWhileOpen() throws {
        // A put reading a pipe that stays open holds the vault open meanwhile.
        let holder = Process()
        holder.executableURL = cli.coffer
        holder.arguments = ["put", "held", "-"]
        holder.environment = cli.environment
        let input = Pipe()
        holder.standardInput = input
        holder.standardOutput = Products.nullDevice()
        holder.standardError = Products.nullDevice()
        try holder.run()
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        Thread.sleep(forTimeInterval: 1.5)
        let bytes = try Data(contentsOf: dataFile)
        let refused = try cli.run(["compact"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("another process"), "\(refused.error)")
        #expect(try Data(contentsOf: dataFile) == bytes)
    }

    @Test(
        "a process opening the vault during compact waits, then writes to the compacted file",
        .enabled(if: Strace.canTrace, "strace cannot trace here")
    )
    func openerWaits() throws {
        // The rename is held back three seconds, so the item add surely starts while compact runs.
        let compact = Process()
        compact.executableURL = Strace.executable
        compact.arguments = [
            "-f", "-qq", "-o", "/dev/null", "-e", "inject=rename:delay_enter=3000000", cli.coffer.path, "compact",
        ]
        compact.environment = cli.environment
        compact.standardOutput = Products.nullDevice()
        compact.standardError = Products.nullDevice()
        try compact.run()
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: dataFile.path + ".compacting"), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let added = try cli.run(["item", "add", "--service", "during", "--account", "a", "--value", "kept"])
        compact.waitUntilExit()
        #expect(compact.terminationStatus == 0)
        #expect(added.status == 0, "\(added.error)")
        #expect(try cli.run(["item", "get", "--service", "during", "--account", "a"]).output == "kept")
        try expectIntact("after an opener waited on compact")
    }

    /// Runs `coffer compact` killed at the `n`-th call of `call`, then checks the vault.
    func compactKilled(at call: String, _ n: Int) throws {
        let result = try Strace.run(
            [
                "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):signal=KILL:when=\(n)",
                cli.coffer.path, "compact",
            ],
            environment: cli.environment
        )
        #expect(result.status != 0, "compact finished before \(call) \(n)")
        try expectIntact("compact killed at \(call) \(n)")
    }

    @Test(
        "SIGKILL during the copy and at each step after it: the vault opens and verifies every time",
        .enabled(if: Strace.canTrace, "strace cannot trace here")
    )
    func killedAtEachStep() throws {
        // Mid-copy (LMDB writes the copy in 1 MiB writes), each leaving a partial copy behind...
        for k in [1, 3, 5] { try compactKilled(at: "write", k) }
        // ...then at each step that follows: removing the stale copy, numbering the two meta pages,
        // flushing, renaming, flushing the directory (strace counts each call on its own).
        let steps = [("unlink", 1), ("pwrite64", 1), ("pwrite64", 2), ("fdatasync", 1), ("rename", 1), ("fsync", 1)]
        for (call, n) in steps { try compactKilled(at: call, n) }
        #expect(try cli.run(["compact"]).status == 0)
        try expectIntact("compact after the kills")
        #expect(!FileManager.default.fileExists(atPath: dataFile.path + ".compacting"))
        #expect(try cli.run(["info"]).output.contains("gives it back") == false)
    }
}

/// Packs whose records were partly freed (forgetting a snapshot of small files leaves them more than
/// half live, so they are not rewritten as it runs): `coffer compact` rewrites them and gives the
/// freed records' space back too.
@Suite("coffer compact: packs of freed records are rewritten")
struct CompactPacksEndToEndTests {
    @Test("forgetting 40% of small files, then compact: as small as a vault that only held the rest; all reads")
    func packsRewritten() throws {
        let cli = try CLIHarness()
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        // 400 files of 3,000 bytes that do not compress: 1.2 MB of packed records.
        for index in 0..<400 {
            try RandomBytes.data(count: 3_000).write(to: tree.appendingPathComponent("f\(index)"))
        }
        #expect(try cli.run(["backup", tree.path, "--name", "first"]).status == 0)
        for index in 0..<160 { try FileManager.default.removeItem(at: tree.appendingPathComponent("f\(index)")) }
        #expect(try cli.run(["backup", tree.path, "--name", "second"]).status == 0)
        #expect(try cli.run(["forget", "first"]).status == 0)
        let compacted = try cli.run(["compact"])
        #expect(compacted.status == 0, "\(compacted.error)")
        let after = try #require(try cli.json(["info"]) as? [String: Any])["liveBytes"] as? Int ?? .max
        // As small as a vault that only ever held the files left.
        let fresh = try CLIHarness()
        #expect(try fresh.run(["backup", tree.path, "--name", "second"]).status == 0)
        #expect(try fresh.run(["compact"]).status == 0)
        let least = try #require(try fresh.json(["info"]) as? [String: Any])["liveBytes"] as? Int ?? 0
        #expect(after <= least + 64 << 10, "live bytes \(after), where a fresh vault's are \(least)")
        let verify = try cli.run(["verify", "--read-data"])
        #expect(verify.status == 0, "\(verify.output) \(verify.error)")
        let restored = cli.directory.path("restored")
        #expect(try cli.run(["restore", "second", restored.path]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: restored.path).count == 240)
    }
}
