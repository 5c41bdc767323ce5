import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Sync: export, join and import move syncable records, and only those")
struct SyncTests {
    let group: SyncGroupFixture
    let a: Vault
    let source: URL

    init() throws {
        group = try SyncGroupFixture()
        a = try group.createFirst()
        source = group.directory.path("source")
        try TreeFixture.make(at: source)
    }

    /// Fills vault A with records of both scopes.
    func populate() throws {
        let keychain = a.keychain
        try keychain.add(Items.password("mail", "ann", value: "sync-secret-1", scope: .syncable))
        try keychain.add(
            Items.password("bank", "ann", value: "sync-secret-2", accessibility: .afterFirstUnlock, scope: .syncable)
        )
        try keychain.add(Items.password("device-only-service", "ann", value: "device-secret-canary"))
        try keychain.add(
            Items.password("wifi", "home", value: "device-only-by-class", accessibility: .whenUnlockedThisDeviceOnly)
        )
        try a.blobs.write("photos/cat.jpg", data: Content.random(300_000, seed: 11))
        try a.blobs.write(
            "notes.txt",
            data: Content.mixed(50_000, seed: 12),
            options: BlobWriteOptions(protection: .whenUnlocked)
        )
        try a.blobs.write(
            "device-only-blob-canary",
            data: Content.mixed(40_000, seed: 13),
            options: BlobWriteOptions(scope: .deviceBound)
        )
        _ = try a.snapshots.backup(directory: source, name: "home")
        _ = try a.snapshots.backup(directory: source, name: "device-only-snapshot", scope: .deviceBound)
    }

    @Test("a full export joins a new vault that holds every syncable record and nothing device-bound")
    func fullRoundTrip() throws {
        try populate()
        let bundle = group.bundle("full")
        let exported = try a.export(to: bundle)
        #expect(!exported.isIncremental)
        #expect(exported.records.items == 2)
        #expect(exported.records.blobs == 2)
        #expect(exported.records.snapshots == 1)
        #expect(exported.deviceBoundLeftBehind == 4)

        let (b, imported) = try group.join("b", from: bundle)
        #expect(b.syncGroupID == a.syncGroupID)
        #expect(b.deviceID != a.deviceID)
        #expect(imported.applied.items == 2 && imported.applied.blobs == 2 && imported.applied.snapshots == 1)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "sync-secret-1")
        #expect(try b.keychain.password(service: "bank", account: "ann") == "sync-secret-2")
        #expect(try b.keychain.password(service: "device-only-service", account: "ann") == nil)
        #expect(throws: KeychainError.self) { try b.keychain.find(Items.query(service: "wifi")) }
        #expect(Array(try b.blobs.data("photos/cat.jpg")) == Content.random(300_000, seed: 11))
        #expect(Array(try b.blobs.data("notes.txt")) == Content.mixed(50_000, seed: 12))
        #expect(try !b.blobs.contains("device-only-blob-canary"))
        #expect(try b.snapshots.list().map(\.name) == ["home"])
        let restored = group.directory.path("restored")
        _ = try b.snapshots.restore("home", to: restored)
        #expect(try TreeFixture.describe(restored) == TreeFixture.describe(source))
        #expect(try b.syncableState() == a.syncableState())
        #expect(try b.blobs.verify(readingData: true).problems.isEmpty)
    }

    @Test("no device-bound name, value or record id appears in a bundle, sealed or opened")
    func canary() throws {
        try populate()
        let bundle = group.bundle("canary")
        try a.export(to: bundle)
        let sealed = [UInt8](try Data(contentsOf: bundle))
        let opened = try a.bundlePlaintext(bundle)
        for canary in [
            "device-secret-canary", "device-only-service", "device-only-by-class", "device-only-blob-canary",
            "device-only-snapshot", "sync-secret-1", "photos/cat.jpg",
        ] {
            #expect(!sealed.contains(subsequence: Array(canary.utf8)), "\(canary) in the sealed bundle")
            #expect(!opened.contains(subsequence: Array(canary.utf8)), "\(canary) in the opened stream")
        }
        let ids = try a.deviceBoundIDs()
        #expect(ids.count > 10)
        #expect(opened.occurrences(of: ids).isEmpty)
    }

    @Test("importing the same bundle twice changes nothing the second time")
    func idempotent() throws {
        try populate()
        let bundle = group.bundle("again")
        try a.export(to: bundle)
        let (b, _) = try group.join("b", from: bundle)
        let before = try b.dumpTables()
        let again = try b.import(from: bundle)
        #expect(again.applied.total == 0)
        #expect(again.skipped == 5)
        #expect(try b.dumpTables() == before)
        // Importing a vault's own bundle is harmless too.
        let own = try a.dumpTables()
        #expect(try a.import(from: bundle).applied.total == 0)
        #expect(try a.dumpTables() == own)
    }

    @Test("a bundle of another sync group is refused naming both groups, and changes nothing")
    func otherGroup() throws {
        try populate()
        let bundle = group.bundle("mine")
        try a.export(to: bundle)
        let other = try VaultFixture().create()
        let before = try other.dumpTables()
        let error = #expect(throws: CofferError.self) { try other.import(from: bundle) }
        #expect(error?.code == .param)
        #expect(error?.message.contains(a.syncGroupID.uuidString.lowercased()) == true)
        #expect(error?.message.contains(other.syncGroupID.uuidString.lowercased()) == true)
        #expect(try other.dumpTables() == before)
    }

    @Test("joining with a wrong passphrase fails and leaves nothing behind")
    func wrongPassphrase() throws {
        try populate()
        let bundle = group.bundle("join")
        try a.export(to: bundle)
        let target = group.directory.path("b")
        let error = #expect(throws: CofferError.self) {
            try Vault.join(bundle: bundle, at: target, passphrase: "wrong", configuration: group.fixture.configuration)
        }
        #expect(error?.code == .authFailed)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test("an incremental export holds only the change, and brings the peer up to date")
    func incremental() throws {
        try populate()
        let full = group.bundle("full")
        let fullSummary = try a.export(to: full, peer: "b")
        let (b, _) = try group.join("b", from: full)
        try a.keychain.setPassword("changed", service: "mail", account: "ann", scope: .syncable)
        let delta = group.bundle("delta")
        let summary = try a.export(to: delta, peer: "b")
        #expect(summary.isIncremental)
        #expect(summary.records.total == 1)
        #expect(summary.chunks == 0)
        #expect(summary.bytes * 100 < fullSummary.bytes)
        #expect(try b.import(from: delta).applied.items == 1)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "changed")
        #expect(try b.syncableState() == a.syncableState())
        // Nothing changed since: the next incremental export is empty.
        let empty = try a.export(to: group.bundle("empty"), peer: "b")
        #expect(empty.records.total == 0 && empty.chunks == 0)
        #expect(try a.syncPeers().map(\.name) == ["b"])
    }

    @Test("a new blob that shares chunks with an old one sends only the new chunks")
    func incrementalBlobSendsNewChunksOnly() throws {
        let base = Content.mixed(400_000, seed: 21)
        try a.blobs.write("v1", data: base)
        try a.export(to: group.bundle("full"), peer: "b")
        let (b, _) = try group.join("b", from: group.bundle("full"))
        try a.blobs.write("v2", data: base + Content.mixed(5_000, seed: 22))
        let summary = try a.export(to: group.bundle("delta"), peer: "b")
        let v2 = try a.blobs.stat("v2")
        #expect(summary.chunks > 0)
        #expect(summary.chunks < v2.chunkCount / 4)
        try b.import(from: group.bundle("delta"))
        #expect(Array(try b.blobs.data("v2")) == base + Content.mixed(5_000, seed: 22))
    }

    @Test("renames apply whatever order a bundle brings the name that goes and the one that takes its content")
    func renamesKeepTheirChunks() throws {
        // The importer freed the chunks of a deleted name before the new name, later in the bundle,
        // took them, and held the new name back for chunks the sender left out as held here already.
        let names = (0..<8).map { "blob-\($0)" }
        for (index, name) in names.enumerated() {
            try a.blobs.write(name, data: Content.mixed(100_000, seed: UInt64(40 + index)))
        }
        try a.blobs.write("gone", data: Content.mixed(100_000, seed: 60))
        try a.export(to: group.bundle("full"), peer: "b")
        let (b, _) = try group.join("b", from: group.bundle("full"))
        for name in names { try a.blobs.rename(name, to: "renamed-" + name) }
        try a.blobs.delete("gone")
        let summary = try a.export(to: group.bundle("delta"), peer: "b")
        #expect(summary.chunks == 0)
        let imported = try b.import(from: group.bundle("delta"))
        #expect(imported.held == 0)
        for (index, name) in names.enumerated() {
            #expect(Array(try b.blobs.data("renamed-" + name)) == Content.mixed(100_000, seed: UInt64(40 + index)))
        }
        // What no record took went: the two vaults hold the same.
        #expect(try b.syncableState() == a.syncableState())
        #expect(try b.blobs.verify().isHealthy)
    }

    @Test(
        "a bundle whose records need chunks the vault lacks is applied in part: the rest waits, is asked for, and arrives"
    )
    func incompleteBundle() throws {
        let base = Content.mixed(200_000, seed: 31)
        try a.blobs.write("v1", data: base)
        try a.export(to: group.bundle("full"), peer: "b")
        try a.blobs.write("v2", data: base + [1, 2, 3])
        try a.keychain.setPassword(
            "unrelated",
            service: "s",
            account: "a",
            accessibility: .afterFirstUnlock,
            scope: .syncable
        )
        try a.export(to: group.bundle("delta"), peer: "b")
        // A vault that never imported the full bundle lacks v2's old chunks: v2 waits, the item arrives.
        let (c, summary) = try group.join("c", from: group.bundle("delta"))
        #expect(summary.held == 1)
        #expect(summary.isIncomplete)
        #expect(try c.keychain.password(service: "s", account: "a") == "unrelated")
        #expect(try !c.blobs.contains("v2"))
        #expect(try c.blobs.verify().isHealthy)
        // c's bundles ask for what v2 lacks, and (c having missed a's earlier changes) for a's changes
        // from the start; a's next bundle, whichever peer it is for, answers both.
        let request = try c.export(to: group.bundle("c-to-a"), peer: "a")
        #expect(request.wantedChunks > 0)
        #expect(request.resendRequests == 1)
        #expect(try a.import(from: group.bundle("c-to-a")).held == 0)
        let answer = try a.export(to: group.bundle("a-to-c"), peer: "b")
        #expect(answer.resent)
        #expect(answer.records.blobs == 2)
        let arrived = try c.import(from: group.bundle("a-to-c"))
        #expect(arrived.held == 0)
        #expect(Array(try c.blobs.data("v1")) == base)
        #expect(Array(try c.blobs.data("v2")) == base + [1, 2, 3])
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }

    @Test("deletions travel as tombstones, and an old version never resurrects a deleted record")
    func tombstones() throws {
        try populate()
        try a.export(to: group.bundle("1"))
        let (b, _) = try group.join("b", from: group.bundle("1"))
        try a.blobs.delete("photos/cat.jpg")
        #expect(try a.keychain.deletePassword(service: "mail", account: "ann"))
        _ = try a.snapshots.forget("home")
        try a.export(to: group.bundle("2"))
        let summary = try b.import(from: group.bundle("2"))
        #expect(summary.applied.deletions == 3)
        #expect(try !b.blobs.contains("photos/cat.jpg"))
        #expect(try b.keychain.password(service: "mail", account: "ann") == nil)
        #expect(try b.snapshots.list().isEmpty)
        // The older bundle again: its versions lose to the tombstones.
        let stale = try b.import(from: group.bundle("1"))
        #expect(stale.applied.total == 0)
        #expect(try !b.blobs.contains("photos/cat.jpg"))
        #expect(try b.syncableState() == a.syncableState())
        #expect(try b.blobs.verify().problems.isEmpty)
    }

    @Test("concurrent changes on two vaults converge on the last writer, in either import order")
    func lastWriterWins() throws {
        try populate()
        try a.export(to: group.bundle("1"))
        let (b, _) = try group.join("b", from: group.bundle("1"))
        try a.keychain.setPassword("from-a", service: "mail", account: "ann", scope: .syncable)
        try b.keychain.setPassword("from-b", service: "mail", account: "ann", scope: .syncable)
        try a.export(to: group.bundle("a2"))
        try b.export(to: group.bundle("b2"))
        // The later version wins: B's clock has seen A's earlier changes, so B's write is later unless
        // both fall in the same millisecond, when the device ids decide.
        let (versionA, versionB) = (try mailVersion(in: a), try mailVersion(in: b))
        #expect(versionB.stamp >= versionA.stamp)
        let winner = versionA > versionB ? "from-a" : "from-b"
        let intoA = try a.import(from: group.bundle("b2"))
        let intoB = try b.import(from: group.bundle("a2"))
        #expect(intoA.conflicts + intoB.conflicts == 2)
        #expect(try a.keychain.password(service: "mail", account: "ann") == winner)
        #expect(try b.keychain.password(service: "mail", account: "ann") == winner)
        #expect(try a.syncableState() == b.syncableState())
    }

    /// The version of the syncable "mail"/"ann" password in `vault`.
    func mailVersion(in vault: Vault) throws -> RecordVersion {
        let session = try KeychainSession(vault.keychain)
        let itemID = try session.index(.syncable).id(of: Items.password("mail", "ann", scope: .syncable))
        return try #require(
            vault.environment.read { txn in
                try VersionEntry.load(.item, id: itemID, in: txn, schema: vault.schema)
            }
        ).version
    }

    @Test("a failed export leaves no file and no peer cursor; a locked vault cannot export or import")
    func failedExport() throws {
        try populate()
        let bundle = group.bundle("locked")
        a.lock()
        let locked = #expect(throws: CofferError.self) { try a.export(to: bundle, peer: "b") }
        #expect(locked?.code == .interactionNotAllowed)
        #expect(!FileManager.default.fileExists(atPath: bundle.path))
        #expect(TemporaryDirectory.listing(group.directory.url).allSatisfy { !$0.hasPrefix(".") })
        try a.unlock(passphrase: SyncGroupFixture.passphrase)
        #expect(try a.syncPeers().isEmpty)
        let nowhere = group.directory.path("missing/dir/x.bundle")
        #expect(throws: CofferError.self) { try a.export(to: nowhere) }
        try a.export(to: bundle)
        a.lock()
        #expect(throws: CofferError.self) { try a.import(from: bundle) }
        #expect(throws: CofferError.self) { try a.export(to: group.bundle("x"), peer: "") }
    }

    @Test("the async forms agree with the synchronous ones")
    func asyncForms() async throws {
        try populate()
        let bundle = group.bundle("async")
        let exported = try await a.export(to: bundle, peer: "b")
        let (b, imported) = try await Vault.join(
            bundle: bundle,
            at: group.directory.path("b"),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration
        )
        #expect(imported.applied.total == exported.records.total)
        let again = try await b.import(from: bundle)
        #expect(again.applied.total == 0)
        #expect(try b.syncableState() == a.syncableState())
    }

    @Test("a write in progress during an export holds the peer's cursor back, so its chunks go next time")
    func pendingWriteHoldsCursor() throws {
        try populate()
        let pending = PendingWrites(schema: a.schema)
        let write = PendingWrites.WriteID.random()
        let begun = try a.environment.write { txn in
            try pending.begin(write, in: txn)
            return try ChangeLog.lastSequence(in: txn, schema: a.schema)
        }
        try a.keychain.setPassword("later", service: "later", account: "x", scope: .syncable)
        try a.export(to: group.bundle("1"), peer: "b")
        #expect(try a.syncPeers().first?.sentThrough == begun)
        try a.environment.write { txn in try pending.finish(write, in: txn) }
        try a.export(to: group.bundle("2"), peer: "b")
        #expect(
            try a.syncPeers().first?.sentThrough
                == a.environment.read { txn in
                    try ChangeLog.lastSequence(in: txn, schema: a.schema)
                }
        )
    }
}
