import Coffer
import Foundation
import Testing

/// Format stability (issue 10): a vault and a bundle written by each released format version
/// (`Tests/Fixtures/format-vN`, made by `Tools/vectors/format-fixtures`) open with this Coffer and
/// hold exactly what they were written with.
@Suite("Format fixtures: vaults and bundles of every released format version still open")
struct FormatFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let passphrase: Passphrase = "fixture passphrase"
    /// The fixtures of vault format 1: as first released, and with snapshot records of versions 2
    /// and 3.
    static let firstVersions = ["format-v1", "format-v1-snapshots-v2", "format-v1-snapshots-v3"]
    /// Every fixture: format 2 has a membership log, device keys, and records sealed in a key epoch
    /// after the original one; format 3, device-bound records re-sealed under a later device
    /// generation (`coffer rekey`); format 4, completeUnlessOpen records (one written with the
    /// passphrase, a blob and a snapshot from a write-only client); format 6, the same with its small
    /// chunk records in packs.
    static let versions = firstVersions + ["format-v2", "format-v3", "format-v4", "format-v6"]

    /// The vault format of a fixture.
    static func format(_ version: String) -> Int {
        for format in [6, 4, 3, 2] where version.hasPrefix("format-v\(format)") { return format }
        return 1
    }
    /// The device-only blob's content: byte i = (i * 31 + 7) mod 251.
    static let pattern = Data((0..<100_000).map { UInt8(($0 * 31 + 7) % 251) })

    /// A scratch directory holding a copy of a fixture, so opening it (which writes `lock.mdb`) never
    /// touches the checked-in files.
    final class Scratch {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-fixture-\(UUID().uuidString)")

        init(copying version: String) throws {
            try FileManager.default.copyItem(at: FormatFixtureTests.fixtures.appendingPathComponent(version), to: url)
        }

        /// The copied vault, opened and unlocked; the caller closes it.
        func unlockedVault() throws -> Vault {
            let vault = try Vault.open(at: url.appendingPathComponent("vault"))
            do {
                try vault.unlock(passphrase: FormatFixtureTests.passphrase)
            } catch {
                vault.close()
                throw error
            }
            return vault
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    @Test(
        "The vault opens, unlocks and holds its items, blobs and snapshot; verify reads it all",
        arguments: FormatFixtureTests.versions
    )
    func vault(version: String) throws {
        let scratch = try Scratch(copying: version)
        let vault = try scratch.unlockedVault()
        defer { vault.close() }
        #expect(vault.formatVersion == Self.format(version))

        #expect(try vault.keychain.password(service: "mail", account: "ann") == "mail password")
        var git = ItemQuery(.internetPassword)
        git.attributes.server = "git.example.com"
        git.returnsValue = true
        let token = try vault.keychain.find(git)
        #expect(token.map(\.value) == [Data("git token".utf8)])
        #expect(token.first?.scope == .deviceBound)

        #expect(try vault.blobs.data("notes.txt") == Data("notes of format 1\n".utf8))
        #expect(try vault.blobs.data("pattern.bin") == Self.pattern)
        #expect(try vault.blobs.stat("pattern.bin").scope == .deviceBound)

        let restored = scratch.url.appendingPathComponent("restored")
        _ = try vault.snapshots.restore("tree", to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("docs/hello.txt")) == Data("hello\n".utf8))
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: restored.appendingPathComponent("link").path)
                == "docs/hello.txt"
        )
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: restored.appendingPathComponent("empty").path).isEmpty
        )
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
        let packed = try vault.environment.read { txn in try vault.schema.packs.map { try txn.count($0.locators) } ?? 0
        }
        #expect((packed > 0) == (Self.format(version) >= 6), "\(version): \(packed) packed chunk records")
    }

    @Test(
        "Format 4: completeUnlessOpen blobs and snapshots, a write-only client's among them, read back once unlocked",
        arguments: ["format-v4", "format-v6"]
    )
    func sealedToClassKey(version: String) throws {
        let scratch = try Scratch(copying: version)
        let locked = try Vault.open(at: scratch.url.appendingPathComponent("vault"))
        let refused = #expect(throws: CofferError.self) { _ = try locked.blobs.data("sealed.txt") }
        #expect(refused?.code == .interactionNotAllowed)
        locked.close()
        let vault = try scratch.unlockedVault()
        defer { vault.close() }
        #expect(try vault.blobs.data("sealed.txt") == Data("sealed to the class key\n".utf8))
        #expect(try vault.blobs.stat("sealed.txt").protection == .completeUnlessOpen)
        let dropped = try #require(try vault.blobs.list().first { $0.name.hasPrefix("dropped.txt@") })
        #expect(try vault.blobs.data("dropped.txt") == Data("notes of format 1\n".utf8))
        #expect(dropped.protection == .completeUnlessOpen)
        let snapshot = try #require(try vault.snapshots.list().first { $0.name == "write-only-tree" })
        #expect(snapshot.protection == .completeUnlessOpen)
        let restored = scratch.url.appendingPathComponent("restored")
        _ = try vault.snapshots.restore(snapshot.id, to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("docs/hello.txt")) == Data("hello\n".utf8))
        #expect(try vault.allowsWriteOnlyClients)
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test(
        "An old snapshot and today's backup of the same tree compare equal; forgetting the old one loses nothing",
        arguments: FormatFixtureTests.versions
    )
    func snapshotAcrossVersions(version: String) throws {
        let scratch = try Scratch(copying: version)
        let vault = try scratch.unlockedVault()
        defer { vault.close() }
        let restored = scratch.url.appendingPathComponent("restored")
        _ = try vault.snapshots.restore("tree", to: restored)
        let old = try #require(try vault.snapshots.list().first { $0.name == "tree" })
        // A restored file has a new inode, so the backup reads every file again and writes today's
        // entries; the contents must still compare equal to the old snapshot's.
        let new = try vault.snapshots.backup(directory: restored, name: "tree").snapshot
        #expect(new.statistics.unchangedFiles == 0)
        let diff = try vault.snapshots.diff(old.id, new.id)
        #expect(diff.added.isEmpty && diff.removed.isEmpty && diff.changed.isEmpty)

        try vault.snapshots.forget(old.id)
        let again = scratch.url.appendingPathComponent("again")
        _ = try vault.snapshots.restore(new.id, to: again)
        #expect(try Data(contentsOf: again.appendingPathComponent("docs/hello.txt")) == Data("hello\n".utf8))
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test(
        "A vault made before device keys gets them on first use while unlocked, once, and keeps them",
        arguments: FormatFixtureTests.firstVersions
    )
    func deviceKeysUpgrade(version: String) throws {
        let scratch = try Scratch(copying: version)
        let locked = try Vault.open(at: scratch.url.appendingPathComponent("vault"))
        let error = #expect(throws: CofferError.self) { _ = try locked.deviceIdentity() }
        #expect(error?.code == .interactionNotAllowed)
        locked.close()
        let vault = try scratch.unlockedVault()
        let identity = try vault.deviceIdentity()
        #expect(try vault.deviceIdentity() == identity)
        vault.close()
        let reopened = try Vault.open(at: scratch.url.appendingPathComponent("vault"))
        defer { reopened.close() }
        #expect(try reopened.deviceIdentity() == identity, "\(version): stored, readable while locked")
    }

    /// The fixtures whose bundles a passphrase joins. Format 6 changed no bundle (packs are local), and
    /// its group, made by a Coffer whose rekey closes the passphrase door, takes devices by approval.
    static let joinableBundles = versions.filter { $0 != "format-v6" }

    @Test("The bundle joins a new vault with the syncable records only", arguments: FormatFixtureTests.joinableBundles)
    func bundle(version: String) throws {
        let scratch = try Scratch(copying: version)
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        let (vault, summary) = try Vault.join(
            bundle: scratch.url.appendingPathComponent("export.bundle"),
            at: scratch.url.appendingPathComponent("joined"),
            passphrase: Self.passphrase,
            configuration: configuration
        )
        defer { vault.close() }
        #expect(summary.applied.items == 1)
        #expect(summary.applied.blobs == 1)
        #expect(summary.applied.snapshots == 1)
        #expect(try vault.keychain.password(service: "mail", account: "ann") == "mail password")
        #expect(try vault.blobs.list().map(\.name) == ["notes.txt"])
        #expect(try vault.snapshots.list().map(\.name) == ["tree"])
    }

    @Test(
        "A version-1 vault becomes version 2 at its first export, and version-1 bundles import until the key rotates",
        arguments: FormatFixtureTests.firstVersions
    )
    func upgradeInPlace(version: String) throws {
        let scratch = try Scratch(copying: version)
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        let oldBundle = scratch.url.appendingPathComponent("export.bundle")
        let (joined, _) = try Vault.join(
            bundle: oldBundle,
            at: scratch.url.appendingPathComponent("joined"),
            passphrase: Self.passphrase,
            configuration: configuration
        )
        defer { joined.close() }
        #expect(joined.formatVersion == Schema.packedFormatVersion, "a join packs the small chunks it imports")

        let vault = try scratch.unlockedVault()
        #expect(vault.formatVersion == 1, "opening and unlocking write nothing")
        #expect(try vault.members().count == 1, "\(version): before its log, a vault lists itself")
        let upgraded = scratch.url.appendingPathComponent("upgraded.bundle")
        try vault.export(to: upgraded)
        vault.close()
        let reopened = try scratch.unlockedVault()
        defer { reopened.close() }
        #expect(reopened.formatVersion == 2, "\(version): the first export starts the membership log")
        #expect(try reopened.keychain.password(service: "mail", account: "ann") == "mail password")
        #expect(try reopened.blobs.list().map(\.name).contains("notes.txt"))

        // Both vaults founded a log; their first exchange settles on one, holding both devices.
        try joined.import(from: upgraded)
        let back = scratch.url.appendingPathComponent("back.bundle")
        try joined.export(to: back)
        try reopened.import(from: back)
        #expect(Set(try reopened.members().map(\.deviceID)) == [reopened.deviceID, joined.deviceID])
        #expect(try reopened.members().map(\.deviceID) == joined.members().map(\.deviceID))
        // The version-1 bundle still imports (nothing new in it) while the group has its first key…
        #expect(try joined.import(from: oldBundle).applied.total == 0)
        // …and is refused once a member has rotated it: it is unsigned, under a key a revoked device
        // would hold.
        try reopened.rotateGroupKey()
        let rotated = scratch.url.appendingPathComponent("rotated.bundle")
        try reopened.export(to: rotated)
        try joined.import(from: rotated)
        let refused = #expect(throws: CofferError.self) { try joined.import(from: oldBundle) }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains("format version 1") == true)
    }
}
