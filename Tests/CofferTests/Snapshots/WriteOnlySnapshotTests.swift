import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A write-only client's snapshots carry only its claims: they are marked, never counted by
/// retention, never a name's latest, until the owner adopts them; the owner's mark cannot be forged or
/// moved to another body.
@Suite("Write-only snapshots: the owner's mark, retention, adoption")
struct WriteOnlySnapshotTests {
    let fixture: VaultFixture
    let vault: Vault
    let passphrase: Passphrase = "correct horse battery staple"
    let tree: TemporaryDirectory

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create(passphrase: passphrase)
        tree = try TemporaryDirectory()
        try Data("real".utf8).write(to: tree.path("file.txt"))
    }

    /// A backup by a write-only client claiming the owner's name and host, dated `created`.
    func forge(created: Date) throws -> String {
        let fingerprint = try vault.writeKeyFingerprint
        var configuration = fixture.configuration
        configuration.expectedWriteKeyFingerprint = fingerprint
        let client = try Vault.open(at: fixture.vaultURL, configuration: configuration)
        defer { client.close() }
        var options = BackupOptions(name: "docs")
        options.protection = .completeUnlessOpen
        options.hostname = Snapshots.hostname
        options.time = created
        return try client.snapshots.backup(directory: tree.url, options: options).snapshot.id
    }

    /// Stores `record` sealed again as it is, as a writer with the vault files could.
    func store(_ record: SnapshotRecord) throws {
        let sealed = try record.seal(keys: try vault.keyRing(), cipher: try vault.snapshots.makeCipher())
        try vault.environment.write { txn in try txn.put(vault.schema.snapshots, key: record.id, value: sealed) }
    }

    @Test(
        "the owner's level-3 backup is its own; a client's is write-only, skipped by name and retention, until adopted"
    )
    func adoptMakesItCount() throws {
        let owned = try vault.snapshots.backup(directory: tree.url, options: BackupOptions(name: "docs")).snapshot
        var sealedOptions = BackupOptions(name: "sealed")
        sealedOptions.protection = .completeUnlessOpen
        vault.lock()
        let sealed = try vault.snapshots.backup(directory: tree.url, options: sealedOptions).snapshot
        try vault.unlock(passphrase: passphrase)
        try vault.allowWriteOnlyClients(true)
        let forged = try forge(created: Date(timeIntervalSinceNow: 86_400 * 365))

        let listed = Dictionary(uniqueKeysWithValues: try vault.snapshots.list().map { ($0.id, $0) })
        #expect(listed[owned.id]?.isWriteOnly == false)
        #expect(listed[sealed.id]?.isWriteOnly == false, "the owner's completeUnlessOpen backup carries its mark")
        #expect(listed[forged]?.isWriteOnly == true)
        #expect(try vault.snapshots.snapshot("docs").id == owned.id)
        var policy = RetentionPolicy()
        policy.last = 1
        let planned = try vault.snapshots.plan(policy).flatMap(\.decisions).map(\.snapshot.id)
        #expect(!planned.contains(forged))
        #expect(planned.contains(owned.id))

        #expect(throws: CofferError.self) { try vault.snapshots.adopt(owned.id) }
        #expect(try vault.snapshots.adopt(forged).isWriteOnly == false)
        #expect(
            try vault.snapshots.snapshot("docs").id == forged,
            "adopted, its later claimed time makes it the latest"
        )
        vault.close()
        let reopened = try fixture.open()
        try reopened.unlock(passphrase: passphrase)
        #expect(try reopened.snapshots.snapshot(forged).isWriteOnly == false, "the mark is stored")
        reopened.close()
    }

    @Test("a made-up mark, or the owner's mark kept over a changed body, leaves the snapshot write-only")
    func markCannotBeForgedOrMoved() throws {
        try vault.allowWriteOnlyClients(true)
        let forged = try forge(created: Date())
        var record = try vault.snapshots.resolve(forged)
        #expect(record.isWriteOnly)

        var madeUp = record
        madeUp.formatVersion = SnapshotRecord.markedVersion
        madeUp.ownerMark = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try store(madeUp)
        #expect(try vault.snapshots.snapshot(forged).isWriteOnly)

        try vault.snapshots.adopt(forged)
        record = try vault.snapshots.resolve(forged)
        #expect(!record.isWriteOnly)
        record.hostname = "elsewhere"
        try store(record)
        #expect(try vault.snapshots.snapshot(forged).isWriteOnly, "the mark covers the body")
    }
}
