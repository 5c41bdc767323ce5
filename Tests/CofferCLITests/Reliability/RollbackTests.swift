import CofferTestSupport
import Foundation
import Testing

/// The commit record (`commit-record`, beside `data.mdb`) through the `coffer` binary: a meta page
/// made to look older than the last committed state is refused by name instead of served as current
/// (issue 38, finding 2), `repair` restores the committed state when the file still holds it and
/// otherwise refuses to lose it without `--accept-loss` (finding 3), and a record that lags or is
/// missing never makes a healthy vault refuse.
@Suite("Rollbacks: the commit record refuses an older state; repair restores it or needs --accept-loss")
struct RollbackTests {
    let cli: CLIHarness
    var vault: URL { cli.directory.path("vault") }
    var dataFile: URL { vault.appendingPathComponent("data.mdb") }
    var record: URL { vault.appendingPathComponent("commit-record") }

    init() throws {
        cli = try CLIHarness()
        for index in 0..<5 {
            #expect(
                try cli.run(["item", "add", "--service", "s\(index)", "--account", "a", "--value", "v"]).status == 0
            )
        }
    }

    func edit(_ body: (inout [UInt8]) -> Void) throws { try DataFileBytes.edit(dataFile, body) }

    static func integer(_ bytes: [UInt8], _ offset: Int) -> UInt64 { DataFileBytes.integer(bytes, offset) }

    static func setInteger(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt64) {
        DataFileBytes.setInteger(&bytes, offset, value)
    }

    static func currentMeta(_ bytes: [UInt8]) -> Int { DataFileBytes.currentMeta(bytes) }

    /// The current meta page's transaction id set two back (N becomes N − 2, one bit's distance for an
    /// even N + 2): LMDB would open the other page, the state before the last write.
    func setCurrentTransactionBack(_ bytes: inout [UInt8]) {
        let meta = Self.currentMeta(bytes)
        Self.setInteger(&bytes, meta + 144, Self.integer(bytes, meta + 144) - 2)
    }

    func snapshotOfFiles() throws -> [Data] {
        try [dataFile, record].map { try Data(contentsOf: $0) }
    }

    @Test("the current meta page's transaction id set back: refused by every command, repair restores it")
    func transactionIDSetBack() throws {
        #expect(FileManager.default.fileExists(atPath: record.path))
        try edit { setCurrentTransactionBack(&$0) }
        for arguments in [["ls"], ["item", "get", "--service", "s4", "--account", "a"], ["verify", "--read-data"]] {
            let refused = try cli.run(arguments)
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.error.contains("rolled back"), "\(arguments): \(refused.error)")
            #expect(refused.error.contains("coffer repair"), "\(arguments): \(refused.error)")
        }
        // A refused write changes nothing.
        let before = try snapshotOfFiles()
        #expect(try cli.run(["item", "add", "--service", "x", "--account", "a", "--value", "v"]).status == 1)
        #expect(try snapshotOfFiles() == before)
        let repaired = try cli.run(["repair"])
        #expect(repaired.status == 0, "\(repaired.error)")
        #expect(repaired.error.contains("nothing was lost"), "\(repaired.error)")
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("the current meta page's tree root altered: repair puts back the committed root, nothing lost")
    func rootAltered() throws {
        try edit { bytes in bytes[Self.currentMeta(bytes) + 128] ^= 0x01 }
        let refused = try cli.run(["ls"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("commit-record"), "\(refused.error)")
        let repaired = try cli.run(["repair"])
        #expect(repaired.status == 0, "\(repaired.error)")
        #expect(!repaired.error.contains("Lost"), "\(repaired.error)")
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("the current meta page's free-list root sent out of the file: repair puts back the committed one")
    func freeRootAltered() throws {
        try edit { bytes in bytes[Self.currentMeta(bytes) + 80 + 1] ^= 0x20 }
        let refused = try cli.run(["ls"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("coffer repair"), "\(refused.error)")
        let repaired = try cli.run(["repair"])
        #expect(repaired.status == 0, "\(repaired.error)")
        #expect(repaired.error.contains("nothing was lost"), "\(repaired.error)")
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("when the last state is gone too, repair says what it cannot recover and needs --accept-loss")
    func unrecoverable() throws {
        try edit { bytes in
            let meta = Self.currentMeta(bytes)
            let root = Int(Self.integer(bytes, meta + 128))
            setCurrentTransactionBack(&bytes)
            bytes.replaceSubrange((root * 4096)..<((root + 1) * 4096), with: [UInt8](repeating: 0, count: 4096))
        }
        let before = try snapshotOfFiles()
        let refused = try cli.run(["repair"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("cannot be recovered"), "\(refused.error)")
        #expect(refused.error.contains("--accept-loss"), "\(refused.error)")
        #expect(try snapshotOfFiles() == before, "a refused repair changed the files")
        let accepted = try cli.run(["repair", "--accept-loss"])
        #expect(accepted.status == 0, "\(accepted.error)")
        #expect(accepted.error.contains("Lost: what transaction"), "\(accepted.error)")
        // The last write (s4) is what was lost, and the vault works again.
        #expect(try cli.run(["item", "get", "--service", "s3", "--account", "a"]).output == "v")
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).status != 0)
        #expect(try cli.run(["verify"]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "s5", "--account", "a", "--value", "v"]).status == 0)
        #expect(try cli.run(["verify"]).status == 0)
    }

    @Test("without a record (a vault from before it), a root altered is still repaired only with --accept-loss")
    func noRecordRootAltered() throws {
        try FileManager.default.removeItem(at: record)
        try edit { bytes in bytes[Self.currentMeta(bytes) + 128] ^= 0x01 }
        #expect(try cli.run(["ls"]).status == 1)
        let refused = try cli.run(["repair"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("--accept-loss"), "\(refused.error)")
        let accepted = try cli.run(["repair", "--accept-loss"])
        #expect(accepted.status == 0, "\(accepted.error)")
        #expect(accepted.error.contains("Lost:"), "\(accepted.error)")
        #expect(try cli.run(["verify"]).status == 0)
    }

    @Test("a record that lags (killed after the commit) or is missing never refuses a healthy vault")
    func laggingOrMissingRecord() throws {
        let lagging = try Data(contentsOf: record)
        #expect(try cli.run(["item", "add", "--service", "late", "--account", "a", "--value", "v"]).status == 0)
        try lagging.write(to: record)
        #expect(try cli.run(["verify"]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "late", "--account", "a"]).output == "v")
        try FileManager.default.removeItem(at: record)
        #expect(try cli.run(["verify"]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "again", "--account", "a", "--value", "v"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: record.path), "the next write makes the record again")
        // Garbage in the record is no record at all.
        try Data(repeating: 0xA5, count: 320).write(to: record)
        #expect(try cli.run(["verify"]).status == 0)
    }

    @Test("compaction keeps the record true, and a record from before the swap is accepted")
    func compaction() throws {
        let before = try Data(contentsOf: record)
        let compacted = try cli.run(["compact"])
        #expect(compacted.status == 0, "\(compacted.error)")
        #expect(try cli.run(["verify"]).status == 0)
        // As if killed between the swap and the record's update.
        try before.write(to: record)
        #expect(try cli.run(["verify"]).status == 0)
        #expect(try cli.run(["item", "get", "--service", "s4", "--account", "a"]).output == "v")
    }
}
