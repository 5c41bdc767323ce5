import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("completeUnlessOpen records across a rekey and through sync")
struct CompleteUnlessOpenSyncTests {
    static let passphrase: Passphrase = "correct horse battery staple"

    @Test(
        "a write-only client's syncable blob and snapshot reach another device of the group, which reads them exactly"
    )
    func syncsLikeAnyOther() throws {
        let group = try SyncGroupFixture()
        let first = try group.createFirst()
        try first.allowWriteOnlyClients(true)
        try first.export(to: group.bundle("join"))
        let (second, _) = try group.join("second", from: group.bundle("join"))
        first.close()

        let client = try group.fixture.open()
        let content = Content.mixed(700_000, seed: 31)
        try client.blobs.write(
            "nightly.dump",
            data: content,
            options: BlobWriteOptions(protection: .completeUnlessOpen)
        )
        let tree = group.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Data(content.prefix(100_000)).write(to: tree.appendingPathComponent("part.bin"))
        var options = BackupOptions(name: "server")
        options.protection = .completeUnlessOpen
        let snapshot = try client.snapshots.backup(directory: tree, options: options).snapshot
        client.close()

        let owner = try group.fixture.open()
        try owner.unlock(passphrase: SyncGroupFixture.passphrase)
        defer { owner.close() }
        try owner.export(to: group.bundle("b1"))
        let summary = try second.import(from: group.bundle("b1"))
        #expect(summary.applied.blobs == 1 && summary.applied.snapshots == 1)
        #expect(try second.blobs.data("nightly.dump") == Data(content))
        let listed = try #require(try second.blobs.list().first { $0.name.hasPrefix("nightly.dump@") })
        #expect(listed.protection == .completeUnlessOpen)
        let restored = group.directory.path("restored")
        _ = try second.snapshots.restore(snapshot.id, to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("part.bin")) == Data(content.prefix(100_000)))
        #expect(try second.blobs.verify(readingData: true).isHealthy)

        // The owner files the dropped blob under a name; the rename reaches the other device too.
        try owner.blobs.rename(listed.name, to: "nightly.dump")
        try owner.export(to: group.bundle("b2"))
        try second.import(from: group.bundle("b2"))
        #expect(try second.blobs.list().map(\.name).contains("nightly.dump"))
        #expect(try !second.blobs.list().contains { $0.name.hasPrefix("nightly.dump@") })
        #expect(try second.blobs.data("nightly.dump") == Data(content))
        second.close()
    }

    @Test("a rekey moves a device-bound completeUnlessOpen record's write key to the new generation; it still reads")
    func acrossRekey() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create(passphrase: Self.passphrase)
        let content = Content.mixed(2 << 20, seed: 32)
        vault.lock()
        try vault.blobs.write(
            "sealed.bin",
            data: content,
            options: BlobWriteOptions(scope: .deviceBound, protection: .completeUnlessOpen)
        )
        let tree = fixture.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Data(content.prefix(300_000)).write(to: tree.appendingPathComponent("a.bin"))
        var options = BackupOptions(name: "sealed", scope: .deviceBound)
        options.protection = .completeUnlessOpen
        let snapshot = try vault.snapshots.backup(directory: tree, options: options).snapshot
        try vault.unlock(passphrase: Self.passphrase)
        try vault.rekey(passphrase: Self.passphrase)
        let generation = try vault.keyRing().currentEpoch(.device)
        let epochs = try vault.environment.read { txn in
            var epochs: [KeyEpoch] = []
            for table in [vault.schema.blobs, vault.schema.snapshots] {
                try txn.forEach(in: table) { _, value in
                    epochs.append(try SealedRecord.peekHeader(value, versions: 1...5, what: "a record").epoch)
                    return true
                }
            }
            return epochs
        }
        #expect(epochs == [generation, generation])
        vault.close()
        let reopened = try fixture.open()
        try reopened.unlock(passphrase: Self.passphrase)
        defer { reopened.close() }
        #expect(try reopened.blobs.data("sealed.bin") == Data(content))
        let restored = fixture.directory.path("restored")
        _ = try reopened.snapshots.restore(snapshot.id, to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("a.bin")) == Data(content.prefix(300_000)))
        #expect(try !reopened.snapshots.snapshot(snapshot.id).isWriteOnly, "the owner's mark outlives the rekey")
        #expect(try reopened.blobs.verify(readingData: true).isHealthy)
        // Written after the rekey: sealed to the new generation's class key.
        reopened.lock()
        try reopened.blobs.write(
            "later.bin",
            data: [1, 2, 3],
            options: BlobWriteOptions(scope: .deviceBound, protection: .completeUnlessOpen)
        )
        try reopened.unlock(passphrase: Self.passphrase)
        #expect(try reopened.blobs.data("later.bin") == Data([1, 2, 3]))
    }
}
