import CofferTestSupport
import Foundation
import Testing

/// A flipped bit inside a stored value (a chunk's sealed bytes), which no structural check can see:
/// AES-GCM names it whenever the chunk is read, `verify` says it did not read content, writes on top
/// of it neither lose nor hide anything, and storing the same content again replaces the damaged
/// record instead of taking another reference to it.
@Suite("Damaged content: named when read, never shared by a new write, replaced by storing it again")
struct DamagedContentTests {
    let cli: CLIHarness
    let content: URL
    var dataFile: URL { cli.directory.path("vault").appendingPathComponent("data.mdb") }

    init() throws {
        cli = try CLIHarness()
        content = cli.directory.path("content")
        // About fifteen chunks: chunk boundaries follow a random key per vault, and a record under
        // 64 KiB goes into a pack, so 300 KB sometimes left a single chunk on pages of its own.
        try Data(SplitMix64.bytes(1_000_000, seed: 12)).write(to: content)
        #expect(try cli.run(["put", "content", content.path]).status == 0)
        // One flipped bit in the middle of the sealed bytes of a chunk kept on pages of its own.
        try DataFileBytes.edit(dataFile) { bytes in
            let runs = DataFileBytes.overflowRuns(of: "chunks", in: bytes)
            // (None would leave the file whole, and the tests' expectations say so.)
            guard let run = runs.dropFirst().first ?? runs.first else { return }
            bytes[run * 4096 + 2000] ^= 0x10
        }
    }

    @Test("verify says what it read; --read-data names the chunk and the blob; a write on top hides nothing")
    func named() throws {
        let structure = try cli.run(["verify"])
        #expect(structure.status == 0)
        #expect(structure.output.contains("the stored content was not read"), "\(structure.output)")
        #expect(structure.output.contains("coffer verify --read-data"), "\(structure.output)")

        let everything = try cli.run(["verify", "--read-data"])
        #expect(everything.status == 1)
        #expect(everything.output.contains("1 stored chunk fails authentication"), "\(everything.output)")
        #expect(everything.output.contains("blob 'content': a chunk failed authentication"), "\(everything.output)")
        #expect(everything.error.contains("verify found 2 problems"), "\(everything.error)")
        let read = try cli.run(["get", "content", "-"])
        #expect(read.status == 1)
        #expect(read.error.contains("failed authentication"), "\(read.error)")

        // A write of something else succeeds and leaves the damage as it was, still named.
        #expect(try cli.run(["item", "add", "--service", "s", "--account", "a", "--value", "v"]).status == 0)
        let after = try cli.run(["verify", "--read-data"])
        #expect(after.status == 1)
        #expect(after.output.contains("blob 'content': a chunk failed authentication"), "\(after.output)")
    }

    @Test("the same content stored again replaces the damaged chunk: both blobs read back whole")
    func storedAgain() throws {
        let again = try cli.run(["put", "again", content.path])
        #expect(again.status == 0, "\(again.error)")
        let expected = try Data(contentsOf: content)
        for name in ["again", "content"] {
            let out = cli.directory.path("out-\(name)")
            #expect(try cli.run(["get", name, out.path]).status == 0, "\(name)")
            #expect(try Data(contentsOf: out) == expected, "\(name)")
        }
        let verified = try cli.run(["verify", "--read-data"])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("no problems found."), "\(verified.output)")
    }
}
