import CofferTestSupport
import Foundation
import Testing

/// A data file over 64 MiB, whose trees are not walked before every process's first change: the note
/// `trees-checked` vouches for the file as the last Coffer commit or walk left it, and a write to it
/// from outside voids the note, so the next write walks the trees first and refuses on damage.
@Suite("Large vaults: damage written into a data file over 64 MiB is found before the next write")
struct LargeVaultDamageTests {
    let cli: CLIHarness
    var vault: URL { cli.directory.path("vault") }
    var dataFile: URL { vault.appendingPathComponent("data.mdb") }
    var note: URL { vault.appendingPathComponent("trees-checked") }

    init() throws {
        cli = try CLIHarness()
        // Random bytes do not compress: 70 MB of blob makes a data file over the 64 MiB limit.
        let blob = cli.directory.path("blob")
        try Data(SplitMix64.bytes(70_000_000, seed: 38)).write(to: blob)
        #expect(try cli.run(["put", "big", blob.path]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "s", "--account", "a", "--value", "v"]).status == 0)
    }

    @Test("a leaf damaged in place after the last commit: the next write walks, refuses, changes nothing")
    func damageInPlace() throws {
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int)
        #expect(size > 64 << 20)
        let inode = try #require(
            try FileManager.default.attributesOfItem(atPath: dataFile.path)[.systemFileNumber] as? Int
        )
        let vouched = try String(contentsOf: note, encoding: .utf8).split(separator: " ")
        #expect(vouched.count == 9 && vouched[4] == "\(inode)", "the last commit left the note: \(vouched)")

        let leaf = try DataFileBytes.secondLeaf(of: "chunks", in: dataFile)
        try DataFileBytes.setFlags(dataFile, page: leaf, to: 1)
        let before = try Data(contentsOf: dataFile)
        let refused = try cli.run(["item", "add", "--service", "t", "--account", "a", "--value", "v"])
        #expect(refused.status == 1, "\(refused.error)")
        #expect(
            refused.error.contains("page \(leaf) is a branch where the tree's depth needs a leaf"),
            "\(refused.error)"
        )
        #expect(refused.error.contains("nothing was written"), "\(refused.error)")
        #expect(try Data(contentsOf: dataFile) == before)
        #expect(!FileManager.default.fileExists(atPath: note.path), "damage found voids the note")
        #expect(try cli.run(["item", "get", "--service", "s", "--account", "a"]).output == "v")
    }
}
