import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Checkpoints forged with a member's leaked keys: a thief holding a copy of device A's files (its
/// device key and the group key) plants a checkpoint whose bundle is a real export of A and whose
/// cut, signed as A, claims more than that bundle holds. Honest devices must not lose what only
/// their own checkpoints or later bundles hold (red team round 23, F1; docs/FORMAT.md, "Compaction").
@Suite("Checkpoints forged with a leaked member's keys against a real SeaweedFS")
struct LeakedKeyCheckpointTests {
    /// A checkpoint id that sorts before every random one, and one that sorts after.
    static let forgedIDs = [String(repeating: "0", count: 32), String(repeating: "f", count: 32)]

    @Test(
        "A cut forged with a member's keys claiming every change makes no compaction delete its own checkpoint, and no pull skip what lies in bundles or in honest checkpoints",
        arguments: LeakedKeyCheckpointTests.forgedIDs
    )
    func cutClaimingMoreThanItsBundle(forgedID: String) throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        let (c, _) = try fixture.join(group, name: "c")
        for (vault, name) in [(a, "a"), (b, "b"), (c, "c")] {
            try vault.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try vault.push(to: remote)
        }
        for vault in [a, b, c] { try vault.pull(from: remote) }
        // The thief's copy of A: an export of what A holds now.
        let stolen = group.directory.path("stolen.bundle")
        try a.export(to: stolen)

        // C compacts honestly; then B writes twice more, and C pulls it. The first of these bundles
        // is not B's newest, which a pull applies whatever its cursor says.
        try c.compact(remote: remote)
        for name in ["b-after", "b-later"] {
            try b.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try b.push(to: remote)
        }
        try c.pull(from: remote)

        // The thief plants A's old export as a checkpoint whose cut claims everything of everyone.
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let claim: UInt64 = 1 << 40
        let forged = RemoteCut(
            id: forgedID,
            device: a.deviceID,
            through: [a.deviceID: claim, b.deviceID: claim, c.deviceID: claim]
        )
        try Self.plant(forged, bundle: stolen, signedWithKeysOf: a, remote: remote, client)

        // A newcomer imports the honest checkpoint too, and B's later bundle: the forged cut moves
        // no cursor past a listed bundle.
        let (early, _) = try fixture.join(group, name: "early")
        #expect(try early.keychain.password(service: "b-after", account: "ann") == "b-after")
        #expect(try early.syncableState() == c.syncableState())
        // Its cursors stop at the heads, so the next pull needs the forged checkpoint no more.
        #expect(try early.pull(from: remote).checkpoints.isEmpty)

        // C compacts again: it keeps its own checkpoint, deletes the one it wrote before, leaves the
        // forged one, and says why.
        let summary = try c.compact(remote: remote)
        #expect(summary.keptCheckpoints == [layout.checkpointBundleKey(forgedID)], "\(summary)")
        #expect(
            summary.notices.contains { $0.contains("Kept the checkpoint \(forgedID)") && $0.contains("revoking") },
            "\(summary.notices)"
        )
        let cuts = try client.list(prefix: layout.checkpointFolder + "/").filter { $0.key.hasSuffix(".cut") }
        #expect(Set(cuts.map(\.key)) == [layout.checkpointCutKey(forgedID), Self.cutKey(of: summary)])

        // A (whose keys leaked), B and devices joining later all get every change. A finds a cut
        // signed with its keys naming changes it never pushed: a copy of it is about, and it goes
        // on as a new device.
        let leaked = a.deviceID
        for vault in [a, b] { try vault.pull(from: remote) }
        #expect(a.deviceID != leaked)
        let (late, _) = try fixture.join(group, name: "late")
        let state = try c.syncableState()
        for vault in [a, b, early, late] {
            #expect(try vault.keychain.password(service: "b-after", account: "ann") == "b-after")
            #expect(try vault.syncableState() == state)
        }

        // Revoking A voids the forged cut; the next compaction replaces what A's checkpoint held.
        try a.push(to: remote)
        try c.pull(from: remote)
        try c.revoke(device: leaked)
        try c.push(to: remote)
        try b.pull(from: remote)
        _ = try b.compact(remote: remote)
        // The revocation closed passphrase joins (A's owner knows the passphrase).
        let last = try fixture.approvedJoin(group, name: "last", by: b)
        try last.pull(from: remote)
        #expect(try last.keychain.password(service: "b-after", account: "ann") == "b-after")
        #expect(try last.syncableState() == b.syncableState())
    }

    @Test(
        "A compaction run inside another's deletes the first's checkpoint, which keeps the second's: no cut decides for its own checkpoint, and nothing is lost"
    )
    func compactionInsideAnother() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        for (vault, name) in [(a, "a"), (b, "b")] {
            try vault.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try vault.push(to: remote)
        }
        for vault in [a, b] { try vault.pull(from: remote) }
        // B's compaction starts after A's checkpoint is complete, and covers it; A's, which began
        // before B's checkpoint existed, leaves B's.
        var inner: CompactSummary?
        let outer = try a.compact(remote: remote, progress: nil) { () throws(CofferError) in
            inner = try b.compact(remote: remote)
        }
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let second = try #require(inner)
        #expect(second.keptCheckpoints.isEmpty && second.deletedObjects > 0, "\(second)")
        #expect(outer.keptCheckpoints == [second.checkpoint], "\(outer)")
        #expect(outer.notices.contains { $0.contains("completed while this compaction ran") }, "\(outer.notices)")
        let cuts = try client.list(prefix: layout.checkpointFolder + "/").filter { $0.key.hasSuffix(".cut") }
        #expect(cuts.map(\.key) == [Self.cutKey(of: second)])
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == a.syncableState())
        // The next compaction replaces it.
        let next = try a.compact(remote: remote)
        #expect(next.keptCheckpoints.isEmpty)
        let after = try client.list(prefix: layout.checkpointFolder + "/").filter { $0.key.hasSuffix(".cut") }
        #expect(after.map(\.key) == [Self.cutKey(of: next)])
    }

    /// The key of the cut of the checkpoint a compaction wrote.
    static func cutKey(of summary: CompactSummary) -> String {
        String(summary.checkpoint.dropLast(".bundle".count)) + ".cut"
    }

    /// Puts a checkpoint in the store as a thief holding a copy of `vault`'s files can: `bundle` (an
    /// export of that vault) under `cut`'s id, and the cut sealed and signed with the vault's keys
    /// (its current epoch's group key and its device key), as a modified client would.
    static func plant(
        _ cut: RemoteCut,
        bundle: URL,
        signedWithKeysOf vault: Vault,
        remote: S3Remote,
        _ client: S3Client
    ) throws {
        let layout = RemoteLayout(location: remote.location)
        try client.put(layout.checkpointBundleKey(cut.id), body: Array(try Data(contentsOf: bundle)))
        try client.put(layout.checkpointCutKey(cut.id), body: try vault.sealed(cut))
    }
}
