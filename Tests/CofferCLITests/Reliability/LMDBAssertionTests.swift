import CofferTestSupport
import Foundation
import Testing

/// LMDB's assertion handler (`mdb_env_set_assert`), for real: a damaged page that no check reads before
/// LMDB does (a read command walks nothing first) makes LMDB assert inside `coffer`, a child process.
/// Coffer cannot go on after that (LMDB's cursor or transaction is half-way through an operation), so
/// the handler names the damage and what to do, notes it, and ends the process with status 1: never
/// LMDB's `abort()` (134) or a bare signal, and the data file is left as it was.
@Suite("LMDB assertions: a clear message, exit 1, the data file unchanged, writes refused after")
struct LMDBAssertionTests {
    let cli: CLIHarness
    var vault: URL { cli.directory.path("vault") }
    var dataFile: URL { vault.appendingPathComponent("data.mdb") }

    init() throws {
        cli = try CLIHarness()
        // Three hundred small files: three hundred packed chunks, so the table of their locators is a
        // branch over leaves.
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<300 {
            try Data(SplitMix64.bytes(200 + index, seed: UInt64(index))).write(
                to: tree.appendingPathComponent("f\(index)")
            )
        }
        #expect(try cli.run(["backup", tree.path]).status == 0)
    }

    @Test("a leaf turned branch stops a scan inside LMDB: exit 1, the damage and what to do named, nothing changed")
    func assertionInAScan() throws {
        let leaf = try DataFileBytes.secondLeaf(of: "packedChunks", in: dataFile)
        try DataFileBytes.setFlags(dataFile, page: leaf, to: 1)
        let before = try Data(contentsOf: dataFile)
        let record = try Data(contentsOf: vault.appendingPathComponent("commit-record"))
        let files = TemporaryDirectory.listing(vault)

        // `stats` reads every chunk record with a cursor: mdb_cursor_next moves onto the damaged page
        // and asserts IS_LEAF(mp).
        let stopped = try cli.run(["stats"])
        #expect(stopped.status == 1, "exit \(stopped.status) (134 is LMDB's abort, 139 SIGSEGV): \(stopped.error)")
        let lines = stopped.error.split(separator: "\n")
        #expect(lines.count == 1, "one message, no line of LMDB's own: \(stopped.error)")
        #expect(stopped.error.hasPrefix("coffer: error: the vault's data file \(dataFile.path) is damaged"))
        #expect(stopped.error.contains("Assertion 'IS_LEAF(mp)' failed"), "\(stopped.error)")
        #expect(stopped.error.contains("`coffer verify`"), "\(stopped.error)")
        #expect(stopped.error.contains("restore the vault from a complete copy"), "\(stopped.error)")
        #expect(try Data(contentsOf: dataFile) == before, "the data file is left as it was")
        #expect(try Data(contentsOf: vault.appendingPathComponent("commit-record")) == record)
        #expect(TemporaryDirectory.listing(vault) == (files + ["damage-found"]).sorted(), "only the note is added")

        // The note holds writes back, naming what LMDB stopped on; reads that do not reach the page go on.
        let refused = try cli.run(["item", "add", "--service", "s", "--account", "a", "--value", "v"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("LMDB stopped on a page that breaks its rules"), "\(refused.error)")
        #expect(try Data(contentsOf: dataFile) == before)
        #expect(try cli.run(["snapshots"]).status == 0)

        // verify walks the trees with Coffer's own reader and names the page, without crashing.
        let verified = try cli.run(["verify"])
        #expect(verified.status == 1)
        #expect(
            verified.output.contains("page \(leaf) is a branch where the tree's depth needs a leaf"),
            "\(verified.output)"
        )
    }
}
