import CofferTestSupport
import Foundation
import Glibc
import Testing

/// A damaged `data.mdb`, as interrupted copies and bad disks leave it, through the `coffer` binary:
/// every command names the damage and exits 1 (never `SIGBUS`, never a silently older state), and
/// what can be proven is repaired.
@Suite("Damaged data files: truncation and meta pages refused by name; verify checks the structure")
struct DataFileDamageTests {
    let cli: CLIHarness
    var dataFile: URL { cli.directory.path("vault").appendingPathComponent("data.mdb") }

    init() throws {
        cli = try CLIHarness()
        let file = cli.directory.path("content")
        // Random, so the blob's chunks are stored as they are and fill most of the file (see truncated()).
        try Data(SplitMix64.bytes(3_000_000, seed: 26)).write(to: file)
        #expect(try cli.run(["put", "content", file.path]).status == 0)
        for index in 0..<5 {
            #expect(
                try cli.run(["item", "add", "--service", "s\(index)", "--account", "a", "--value", "v"]).status == 0
            )
        }
    }

    /// The file's bytes, edited by `body`.
    func edit(_ body: (inout [UInt8]) -> Void) throws { try DataFileBytes.edit(dataFile, body) }

    static func integer(_ bytes: [UInt8], _ offset: Int) -> UInt64 { DataFileBytes.integer(bytes, offset) }

    /// The index of the meta page LMDB does not open (the older one).
    func inactiveMeta(_ bytes: [UInt8]) -> Int {
        Self.integer(bytes, 144) < Self.integer(bytes, 4096 + 144) ? 0 : 1
    }

    @Test("a data file cut short by a quarter: every command exits 1 naming it, no SIGBUS")
    func truncated() throws {
        // A quarter, not one page: the last pages may be free ones (which file layout, varying with
        // random nonces, decides), and a file missing only free pages is sound. The 3 MB blob's chunks
        // fill most of the file, so a quarter always takes pages of a tree with it.
        try edit { $0.removeLast($0.count / 4 / 4096 * 4096) }
        for arguments in [
            ["info"], ["ls"], ["verify", "--read-data"], ["get", "content", "-"], ["item", "find"], ["compact"],
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result.status) \(result.error)")
            #expect(result.error.contains("cut short"), "\(arguments): \(result.error)")
        }
        #expect(try cli.run(["repair"]).error.contains("Restore the vault from a complete copy"))
    }

    @Test("a flipped magic number in the inactive meta page is named, and repair brings everything back")
    func inactiveMagic() throws {
        try edit { bytes in bytes[inactiveMeta(bytes) * 4096 + 16] ^= 0x01 }
        let refused = try cli.run(["ls"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("magic number"), "\(refused.error)")
        #expect(refused.error.contains("coffer repair"))
        let repaired = try cli.run(["repair"])
        #expect(repaired.status == 0, "\(repaired.error)")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
    }

    @Test("a flipped bit in the inactive meta page's transaction id is refused, not opened as an older state")
    func inactiveTransactionID() throws {
        try edit { bytes in bytes[inactiveMeta(bytes) * 4096 + 144 + 5] ^= 0x10 }
        let refused = try cli.run(["item", "get", "--service", "s4", "--account", "a"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("was written by transaction"), "\(refused.error)")
        #expect(try cli.run(["repair"]).status == 0)
        // The last acknowledged write is there: nothing was rolled back.
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("a flipped bit in the current meta page's last page number is named, and repair sets it right")
    func lastPage() throws {
        try edit { bytes in bytes[(1 - inactiveMeta(bytes)) * 4096 + 136 + 2] ^= 0x01 }
        let refused = try cli.run(["item", "find"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("last page number"), "\(refused.error)")
        #expect(try cli.run(["repair"]).status == 0)
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
        let more = cli.directory.path("more")
        try Data(repeating: 7, count: 2_000_000).write(to: more)
        #expect(try cli.run(["put", "more", more.path]).status == 0)
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("writes by a Coffer from before the stamps, interleaved with today's, are never taken for damage")
    func writesWithoutStamps() throws {
        let fixture = try Products.executable("coffer-test-fixture")
        let vault = cli.directory.path("vault").path
        for round in 0..<3 {
            let old = try Products.run(fixture, ["old-write", vault, "\(round + 1)"])
            #expect(old.status == 0, "\(old.error)")
            let opened = try cli.run(["verify"])
            #expect(opened.status == 0, "round \(round): \(opened.output) \(opened.error)")
            #expect(
                try cli.run(["item", "add", "--service", "new\(round)", "--account", "a", "--value", "v"]).status == 0
            )
        }
        #expect(try Products.run(fixture, ["old-write", vault, "2"]).status == 0)
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
        #expect(try cli.run(["repair"]).error.contains("nothing to repair"))
    }

    @Test("a damaged free-list root: verify names the free list and exits 1")
    func freeListRoot() throws {
        try edit { bytes in
            let active = 1 - inactiveMeta(bytes)
            bytes[active * 4096 + 80] &+= 1
        }
        let verify = try cli.run(["verify"])
        #expect(verify.status == 1)
        // The root pages are checked at open, so the open already names it.
        #expect((verify.output + verify.error).contains("the free list"), "\(verify.output) \(verify.error)")
    }

    @Test("repair refuses while another process has the vault open, and on a sound file")
    func repairRefusals() throws {
        let sound = try cli.run(["repair"])
        #expect(sound.status == 1)
        #expect(sound.error.contains("nothing to repair"))

        let holder = try cli.holdVaultOpen()
        defer { holder.kill() }
        try edit { bytes in bytes[inactiveMeta(bytes) * 4096 + 144 + 5] ^= 0x10 }
        let busy = try cli.run(["repair"])
        #expect(busy.status == 1)
        #expect(busy.error.contains("another process has the vault"), "\(busy.error)")
    }
}
