import CofferTestSupport
import Foundation
import Testing

/// `damage-found`, the note that the data file's trees were found damaged: while it names the vault's
/// `data.mdb`, writes refuse and reads go on; a `verify` that finds the file sound lifts it, and a
/// note about another file (a `data.mdb` restored from a copy) holds nothing back.
@Suite("Known damage: writes refuse while damage-found names the data file; verify lifts it")
struct KnownDamageTests {
    let cli: CLIHarness
    var vault: URL { cli.directory.path("vault") }
    var note: URL { vault.appendingPathComponent("damage-found") }

    init() throws {
        cli = try CLIHarness()
        #expect(try cli.run(["item", "add", "--service", "s", "--account", "a", "--value", "v"]).status == 0)
    }

    func inode() throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: vault.appendingPathComponent("data.mdb").path)
        return (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
    }

    @Test("a write refuses naming the damage, a read works, verify of a sound file lifts the note")
    func writesRefuseUntilVerified() throws {
        try Data("\(try inode())\ntable 'chunks': page 9 has keys out of order".utf8).write(to: note)
        let before = try Data(contentsOf: vault.appendingPathComponent("data.mdb"))
        let refused = try cli.run(["item", "add", "--service", "t", "--account", "a", "--value", "v"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("keys out of order"), "\(refused.error)")
        #expect(refused.error.contains("nothing was written"), "\(refused.error)")
        #expect(try Data(contentsOf: vault.appendingPathComponent("data.mdb")) == before)
        #expect(try cli.run(["item", "get", "--service", "s", "--account", "a"]).output == "v")
        #expect(try cli.run(["verify"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: note.path))
        #expect(try cli.run(["item", "add", "--service", "t", "--account", "a", "--value", "v"]).status == 0)
    }

    @Test("a note about another data file (restored from a copy) holds nothing back")
    func otherFile() throws {
        try Data("\(try inode() &+ 1)\nsomething".utf8).write(to: note)
        #expect(try cli.run(["item", "add", "--service", "t", "--account", "a", "--value", "v"]).status == 0)
    }
}
