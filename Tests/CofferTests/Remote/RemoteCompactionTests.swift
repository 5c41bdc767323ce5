import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Compaction of an object store: a checkpoint replaces the bundles it holds everything of, the
/// store stays near one copy of the live data, and nothing is lost to anything running at the same
/// time (docs/FORMAT.md, "Compaction").
@Suite("Object store compaction against a real SeaweedFS")
struct RemoteCompactionTests {
    /// One test's store and group.
    struct Setting {
        let fixture: RemoteFixture
        let group: SyncGroupFixture
        let remote: S3Remote

        init(server: String) throws {
            fixture = try RemoteFixture(server: server)
            group = try SyncGroupFixture()
            remote = try fixture.remote()
        }
    }

    /// The S3 implementations the compaction tests run on.
    static let servers = ["seaweedfs", "moto"]

    /// The bytes stored under the fixture's prefix.
    func storedBytes(_ setting: Setting) throws -> Int64 {
        try setting.fixture.client().list(prefix: setting.fixture.prefix + "/").reduce(0) { $0 + $1.size }
    }

    /// `count` vaults of one group, all pushed to and pulled from the store.
    func devices(_ count: Int, _ setting: Setting) throws -> [Vault] {
        let first = try setting.group.createFirst()
        try first.push(to: setting.remote)
        var vaults = [first]
        for index in 1..<count {
            vaults.append(try setting.fixture.join(setting.group, name: "device-\(index)").0)
        }
        for vault in vaults { try vault.push(to: setting.remote) }
        return vaults
    }

    /// One round of edits on `vault`: items rewritten and a blob replaced.
    func edit(_ vault: Vault, round: Int, generator: inout SplitMix64) throws {
        for index in 0..<5 {
            try vault.keychain.setPassword(
                "round \(round) by \(vault.deviceID)",
                service: "service-\(generator.next() % 20)",
                account: "ann-\(index)",
                scope: .syncable
            )
        }
        let size = 64 << 10
        let bytes = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        try vault.blobs.write("blob-\(generator.next() % 6)", data: bytes)
    }

    @Test(
        "Five devices edit in rounds; after compaction the store holds at most 1.2x the live data, and newcomers and a device that stayed away converge",
        arguments: RemoteCompactionTests.servers
    )
    func roundsThenCompact(server: String) throws {
        let setting = try Setting(server: server)
        let (fixture, group, remote) = (setting.fixture, setting.group, setting.remote)
        let vaults = try devices(5, setting)
        var generator = SplitMix64(seed: 23)
        // The last device pushes its first edits, then stays away (no pull) for the rest.
        let away = vaults[4]
        try edit(away, round: 0, generator: &generator)
        try away.push(to: remote)
        for round in 1...4 {
            for vault in vaults.dropLast() {
                try edit(vault, round: round, generator: &generator)
                try vault.push(to: remote)
            }
            for vault in vaults.dropLast() { try vault.pull(from: remote) }
        }
        let beforeCompaction = try storedBytes(setting)
        let summary = try vaults[0].compact(remote: remote)
        #expect(summary.deletedObjects > 0 && summary.storedBytesAfter < beforeCompaction, "\(summary)")
        #expect(
            Double(summary.storedBytesAfter) <= 1.2 * Double(summary.checkpointBytes),
            "store \(summary.storedBytesAfter) B, live data \(summary.checkpointBytes) B"
        )
        for vault in vaults.dropLast() { try vault.pull(from: remote) }
        let state = try vaults[0].syncableState()
        for vault in vaults.dropLast() { #expect(try vault.syncableState() == state) }

        // A newcomer downloads the checkpoint and what came after it.
        let (newcomer, pulled) = try fixture.join(group, name: "newcomer")
        #expect(pulled.checkpoints.count == 1)
        #expect(Double(pulled.bytes) <= 1.2 * Double(summary.checkpointBytes), "downloaded \(pulled.bytes) B")
        #expect(try newcomer.syncableState() == state)

        // The device that stayed away converges from the checkpoint, and nothing it pushed is lost.
        let back = try away.pull(from: remote)
        #expect(back.checkpoints.count == 1)
        #expect(try away.syncableState() == state)
        try edit(away, round: 9, generator: &generator)
        try away.push(to: remote)
        for vault in vaults.dropLast() + [newcomer] { try vault.pull(from: remote) }
        let final = try away.syncableState()
        for vault in vaults.dropLast() + [newcomer] { #expect(try vault.syncableState() == final) }
    }

    @Test(
        "A push racing a compaction is never lost; a second compaction in the middle of the first leaves a consistent store",
        arguments: RemoteCompactionTests.servers
    )
    func racingCompactions(server: String) throws {
        let setting = try Setting(server: server)
        let (fixture, group, remote) = (setting.fixture, setting.group, setting.remote)
        let vaults = try devices(3, setting)
        var generator = SplitMix64(seed: 5)
        for vault in vaults {
            try edit(vault, round: 1, generator: &generator)
            try vault.push(to: remote)
        }
        for vault in vaults { try vault.pull(from: remote) }
        // While the first device compacts (its checkpoint written, nothing deleted yet): the second
        // pushes new changes, and the third runs a whole compaction of its own.
        _ = try vaults[0].compact(remote: remote, progress: nil) { () throws(CofferError) in
            do {
                try edit(vaults[1], round: 2, generator: &generator)
                try vaults[1].push(to: remote)
                try vaults[2].compact(remote: remote)
            } catch let error as CofferError {
                throw error
            } catch {
                throw CofferError(.internalError, "\(error)")
            }
        }
        let checkpoints = try fixture.client().list(prefix: fixture.prefix + "/").filter { $0.key.hasSuffix(".cut") }
        #expect(!checkpoints.isEmpty && checkpoints.count <= 2, "\(checkpoints.map(\.key))")
        for vault in vaults { try vault.pull(from: remote) }
        let state = try vaults[1].syncableState()
        for vault in vaults { #expect(try vault.syncableState() == state) }
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == state, "the racing push reached the newcomer")
        // Compacting again leaves one checkpoint.
        try vaults[0].compact(remote: remote)
        #expect(try fixture.client().list(prefix: fixture.prefix + "/").filter { $0.key.hasSuffix(".cut") }.count == 1)
        let (late, _) = try fixture.join(group, name: "late")
        #expect(try late.syncableState() == state)
    }

    @Test(
        "A pull racing a compaction that deletes what it just listed starts again from the checkpoint",
        arguments: RemoteCompactionTests.servers
    )
    func pullRacingCompaction(server: String) throws {
        let setting = try Setting(server: server)
        let remote = setting.remote
        let vaults = try devices(3, setting)
        var generator = SplitMix64(seed: 9)
        for vault in vaults.dropLast() {
            try edit(vault, round: 1, generator: &generator)
            try vault.push(to: remote)
        }
        try vaults[0].pull(from: remote)
        try vaults[1].pull(from: remote)
        var compacted = false
        let pulled = try vaults[2].pull(from: remote, progress: nil) { () throws(CofferError) in
            guard !compacted else { return }
            compacted = true
            let summary = try vaults[0].compact(remote: remote)
            #expect(summary.deletedObjects > 0)
        }
        #expect(compacted && pulled.checkpoints.count == 1, "\(pulled)")
        let state = try vaults[0].syncableState()
        #expect(try vaults[2].syncableState() == state)
    }

    /// Two devices, where the first holds back the second's record: the first deletes blob `x` while
    /// the second renames it to `y`, so the second's bundle names chunks the first no longer has.
    func renameHeldBack(_ setting: Setting) throws -> (Vault, Vault) {
        let remote = setting.remote
        let vaults = try devices(2, setting)
        let (a, b) = (vaults[0], vaults[1])
        try a.blobs.write("x", data: Data(SplitMix64.bytes(200_000, seed: 17)))
        try a.push(to: remote)
        try b.pull(from: remote)
        try b.keychain.setPassword("b", service: "b", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.blobs.delete("x")
        try b.blobs.rename("x", to: "y")
        try b.push(to: remote)
        #expect(try a.pull(from: remote).bundles.last?.imported.held == 1)
        return (a, b)
    }

    @Test(
        "A vault holding records back for want of chunks refuses to compact until they arrive",
        arguments: RemoteCompactionTests.servers
    )
    func heldRecordsRefuse(server: String) throws {
        let setting = try Setting(server: server)
        let (fixture, group, remote) = (setting.fixture, setting.group, setting.remote)
        let (a, b) = try renameHeldBack(setting)
        let before = try storedBytes(setting)
        let refused = #expect(throws: CofferError.self) { try a.compact(remote: remote) }
        #expect(refused?.message.contains("holds 1 record back") == true, "\(refused?.message ?? "")")
        // a's push asks for the chunks, b answers, a applies y: then it compacts.
        try a.push(to: remote)
        try b.pull(from: remote)
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.blobs.contains("y"))
        #expect(try storedBytes(setting) >= before)
        try a.compact(remote: remote)
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.blobs.contains("y"))
        #expect(try newcomer.syncableState() == a.syncableState())
    }

    @Test("A record held back that a revoked device sent does not stop compaction, which leaves that device's bundles")
    func heldFromRevokedSenderCompacts() throws {
        // Final outside test of issue 37, F1: once the sender was revoked, nothing could end the
        // wait, and compaction refused for good.
        let setting = try Setting(server: "seaweedfs")
        let remote = setting.remote
        let (a, b) = try renameHeldBack(setting)
        _ = try a.revoke(device: b.deviceID)
        let (client, layout) = (try setting.fixture.client(), RemoteLayout(location: remote.location))
        let bundlesBefore = layout.devices(in: try client.list(prefix: layout.listingPrefix))[b.deviceID]?.bundles
        let summary = try a.compact(remote: remote)
        #expect(summary.deletedObjects > 0)
        #expect(layout.devices(in: try client.list(prefix: layout.listingPrefix))[b.deviceID]?.bundles == bundlesBefore)
    }

    @Test("A record held back that an active member relayed still stops compaction after its author is revoked")
    func heldFromRelayStillRefuses() throws {
        // Outside test of the F1 fix, finding 2: the held record noted only its last sender, so
        // revoking that one let compaction delete the active relay's bundle that carried it.
        let setting = try Setting(server: "seaweedfs")
        let remote = setting.remote
        let vaults = try devices(3, setting)
        let (a, b, c) = (vaults[0], vaults[1], vaults[2])
        try a.blobs.write("x", data: Data(SplitMix64.bytes(200_000, seed: 37)))
        try a.push(to: remote)
        // Everyone has x, and has pushed since: their bundles leave x's chunks out.
        for vault in [b, c] {
            try vault.pull(from: remote)
            try vault.keychain.setPassword("pulled", service: "s", account: "\(vault.deviceID)", scope: .syncable)
            try vault.push(to: remote)
        }
        try a.pull(from: remote)
        try a.blobs.delete("x")
        try b.blobs.rename("x", to: "y")
        // c gets b's rename from a bundle file and pushes it first; then b pushes.
        let file = setting.group.bundle("b-to-c")
        try b.export(to: file)
        try c.import(from: file)
        try c.push(to: remote)
        #expect(try a.pull(from: remote).bundles.last?.imported.heldBySender.map(\.deviceID) == [c.deviceID])
        try b.push(to: remote)
        let both = try a.pull(from: remote).bundles.last?.imported.heldBySender.map(\.deviceID).sorted {
            $0.uuidString < $1.uuidString
        }
        #expect(both == [b.deviceID, c.deviceID].sorted { $0.uuidString < $1.uuidString })
        _ = try a.revoke(device: b.deviceID)
        let refused = #expect(throws: CofferError.self) { try a.compact(remote: remote) }
        #expect(refused?.message.contains("holds 1 record back") == true, "\(refused?.message ?? "")")
    }

    @Test(
        "A record held back for chunks that only a checkpoint holds applies from it, when its sender will never answer"
    )
    func heldRecordAppliesFromCheckpoint() throws {
        // Outside test of G5's fix, F2: the pull passed over the checkpoint (its cut named nothing this
        // vault lacked), so the record waited, and compaction refused, until another member pushed.
        let setting = try Setting(server: "seaweedfs")
        let remote = setting.remote
        let vaults = try devices(3, setting)
        let (a, b, c) = (vaults[0], vaults[1], vaults[2])
        let content = Data(SplitMix64.bytes(200_000, seed: 29))
        try a.blobs.write("x", data: content)
        try a.push(to: remote)
        for _ in 0..<2 {
            for vault in vaults {
                try vault.pull(from: remote)
                try vault.push(to: remote)
            }
        }
        // a deletes x, then b writes the same content as y: b's bundle leaves out chunks every device
        // held, and a no longer does. b is revoked before it can send them; c holds y whole and
        // compacts.
        try a.blobs.delete("x")
        try b.blobs.write("y", data: content)
        try b.push(to: remote)
        try c.pull(from: remote)
        #expect(try c.blobs.contains("y"))
        #expect(try a.pull(from: remote).bundles.last?.imported.held == 1)
        _ = try a.revoke(device: b.deviceID)
        try c.compact(remote: remote)
        try a.push(to: remote)
        let pulled = try a.pull(from: remote)
        #expect(pulled.checkpoints.count == 1, "\(pulled)")
        #expect(try a.blobs.contains("y"))
        try a.compact(remote: remote)
    }

    @Test("Push and pull work with credentials that cannot delete; compaction then fails saying so, losing nothing")
    func appendOnly() throws {
        // moto does not enforce bucket policies: SeaweedFS only.
        let setting = try Setting(server: "seaweedfs")
        let (fixture, group) = (setting.fixture, setting.group)
        let bucket = "coffer-tests-append-only"
        let server = try SeaweedFS.shared()
        var remote = S3Remote(
            try S3Location(bucket: bucket, prefix: fixture.prefix),
            credentials: try S3Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            endpoint: server.endpoint,
            region: "us-east-1"
        )
        remote.partSize = 5 << 20
        let client = S3Client(remote)
        try client.createBucketIfMissing()
        try client.putBucketPolicy(
            """
            {"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":["s3:DeleteObject"],\
            "Resource":["arn:aws:s3:::\(bucket)/*"]}]}
            """
        )
        let probe = remote.location.key("probe")
        try client.put(probe, body: Array("x".utf8))
        let refused = #expect(throws: CofferError.self) { try client.delete(probe) }
        #expect(refused?.code == .authFailed, "the store refuses deletes")

        let a = try group.createFirst()
        try a.keychain.setPassword("first", service: "mail", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let (b, _) = try Vault.join(
            remote: remote,
            at: group.directory.path("b"),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration
        )
        try b.keychain.setPassword("second", service: "mail", account: "ann", scope: .syncable)
        // A push stopped before its head, then retried: still nothing to delete.
        _ = try? b.push(to: remote, progress: nil) { () throws(CofferError) in throw CofferError(.io, "killed") }
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "mail", account: "ann") == "second")
        let failed = #expect(throws: CofferError.self) { try a.compact(remote: remote) }
        #expect(failed?.code == .authFailed)
        #expect(failed?.message.contains("s3:DeleteObject") == true, "\(failed?.message ?? "")")
        let (c, _) = try Vault.join(
            remote: remote,
            at: group.directory.path("c"),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration
        )
        #expect(try c.syncableState() == a.syncableState())
    }

    @Test("A frozen device's compaction writes no checkpoint and deletes nothing (red team round 6, M2 and M3)")
    func frozenDeviceDoesNotCompact() throws {
        let setting = try Setting(server: "moto")
        let (fixture, remote) = (setting.fixture, setting.remote)
        let vaults = try devices(2, setting)
        try vaults[1].keychain.setPassword("kept", service: "before", account: "ann", scope: .syncable)
        try vaults[1].push(to: remote)
        // A stolen copy of device 1 fills the log; device 0 hears it and is frozen.
        try vaults[1].floodGroupLog(to: GroupLog.maximumEntries)
        try vaults[1].push(to: remote)
        let before = Set(try fixture.client().list(prefix: fixture.prefix + "/").map(\.key))
        let refused = #expect(throws: CofferError.self) { try vaults[0].compact(remote: remote) }
        #expect(refused?.message.contains("no checkpoint was written and nothing was deleted") == true)
        #expect(try vaults[0].syncGroupIsFrozen())
        let after = Set(try fixture.client().list(prefix: fixture.prefix + "/").map(\.key))
        #expect(before.subtracting(after).isEmpty, "deleted: \(before.subtracting(after))")
        #expect(!after.contains { $0.contains("checkpoints/") })
    }

    @Test(
        "A checkpoint whose writer is then revoked, or rekeys, stops counting: the next push writes what it held again, and a newcomer gets every acknowledged write (red team round 17, F1)",
        arguments: ["revoked", "rekeyed"]
    )
    func voidedCheckpointIsWrittenAgain(ending: String) throws {
        let setting = try Setting(server: "moto")
        let (group, remote) = (setting.group, setting.remote)
        let vaults = try devices(3, setting)
        let (a, b, c) = (vaults[0], vaults[1], vaults[2])
        for (vault, name) in [(a, "a1"), (b, "b1-acknowledged"), (c, "c1")] {
            try vault.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try vault.push(to: remote)
        }
        for vault in vaults { try vault.pull(from: remote) }
        // The compaction deletes every device's bundles; then its writer's cut stops counting.
        let compactor = ending == "revoked" ? c : a
        let compacted = try compactor.compact(remote: remote)
        #expect(compacted.deletedObjects > 0)
        if ending == "revoked" {
            try a.revoke(device: c.deviceID)
        } else {
            try a.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "a new passphrase for a")
        }
        let pushed = try a.push(to: remote)
        #expect(pushed.repairCheckpoint != nil, "\(pushed.notices)")
        #expect(pushed.notices.contains { $0.contains("The store had lost") && $0.contains("no longer counts") })
        if ending == "rekeyed" {
            #expect(pushed.notices.contains { $0.contains("has replaced since (a rekey)") }, "\(pushed.notices)")
        }
        // Once written again, a later push finds nothing lost.
        try b.pull(from: remote)
        #expect(try b.push(to: remote).repairCheckpoint == nil)

        let newcomer = try setting.fixture.approvedJoin(group, name: "newcomer", by: a)
        try newcomer.pull(from: remote)
        for name in ["a1", "b1-acknowledged", "c1"] {
            #expect(try newcomer.keychain.password(service: name, account: "ann") == name)
        }
        #expect(try newcomer.syncableState() == a.syncableState())
        #expect(try b.syncableState() == a.syncableState())
    }

    @Test(
        "A newcomer approved by a member that has not heard of the compactor's rekey gets the repair checkpoint once that member pulls and pushes (red team round 18)"
    )
    func newcomerOfAnUninformedMemberGetsTheRepair() throws {
        let setting = try Setting(server: "moto")
        let (group, remote) = (setting.group, setting.remote)
        let vaults = try devices(2, setting)
        let (a, b) = (vaults[0], vaults[1])
        try b.keychain.setPassword("b1", service: "b1", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.compact(remote: remote)
        try a.rekey(passphrase: SyncGroupFixture.passphrase)
        #expect(try a.push(to: remote).repairCheckpoint != nil)
        // b has not pulled the rekey when it approves the newcomer.
        let newcomer = try setting.fixture.approvedJoin(group, name: "newcomer", by: b)
        // Its first pull goes on past what it cannot open yet, and says what waits (red team round
        // 19, N4: it stopped at the checkpoint).
        let waiting = try newcomer.pull(from: remote)
        #expect(waiting.isIncomplete)
        #expect(
            waiting.notices.contains { $0.contains("Could not open the checkpoint") || $0.contains("Waiting for") },
            "\(waiting.notices)"
        )
        try b.pull(from: remote)
        try b.push(to: remote)
        try newcomer.pull(from: remote)
        #expect(try newcomer.keychain.password(service: "b1", account: "ann") == "b1")
        try a.pull(from: remote)
        #expect(try newcomer.syncableState() == a.syncableState())
    }
}
