import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Copies of a vault (restored from a file copy, or cloned and used side by side), forged heads and a
/// store rolled back (docs/FORMAT.md, "Remote layout"): nothing acknowledged is lost, and no head but
/// a member's own counts.
@Suite("Vault copies, forged heads and rolled-back stores against a real SeaweedFS")
struct RemoteCopiesTests {
    @Test("A revoked device's forged head (the original key, a huge cursor) is ignored: the member's pushes go on")
    func forgedHeadByRevokedDevice() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.push(to: remote)
        // C joins from a log that already has B (no fork of the membership log).
        let (c, _) = try fixture.join(group, name: "c")
        try c.push(to: remote)
        try a.pull(from: remote)
        try a.revoke(device: b.deviceID)
        try a.push(to: remote)
        try c.pull(from: remote)
        #expect(try c.members().first { $0.deviceID == b.deviceID }?.isActive == false)
        let client = try fixture.client()
        let headKey = RemoteLayout(location: remote.location).headKey(a.deviceID)
        // B still holds the original epoch's key: a version-2 head under it authenticates.
        let huge = RemoteLayout.BundleName(first: 1, last: 999_999_999)
        let body =
            "coffer-remote-head 2\ndevice \(a.deviceID.uuidString.lowercased())\nepoch \(KeyEpoch.original)\n"
            + "sent-through 999999999\nlatest \(huge.fileName)\n"
        let originalKey = try b.keyRing().root(.sync, epoch: .original)
        try client.put(
            headKey,
            body: try AuthenticatedText.seal(Array(body.utf8), label: "coffer/v1/remote-head", root: originalKey)
        )
        try a.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        let pushed = try a.push(to: remote)
        #expect(pushed.object != nil)
        #expect(pushed.notices.contains { $0.contains("Ignored this device's head") })

        // A version-3 head signed with B's own key does not pass for A's either.
        var forged = RemoteHead(device: a.deviceID, sentThrough: 999_999_999, latest: huge)
        forged.push = String(repeating: "0", count: 32)
        try client.put(
            headKey,
            body: try forged.encoded(epoch: .original, root: originalKey, signer: try b.deviceKeys().signing)
        )
        let ignored = try c.pull(from: remote)
        #expect(ignored.notices.contains { $0.contains("Ignored device \(a.deviceID.uuidString.lowercased())") })
        try a.keychain.setPassword("later", service: "later", account: "ann", scope: .syncable)
        #expect(try a.push(to: remote).object != nil)
        try c.pull(from: remote)
        #expect(try c.keychain.password(service: "after", account: "ann") == "after")
        #expect(try c.keychain.password(service: "later", account: "ann") == "later")
    }

    @Test(
        "A head re-signed with the device's own keys (a thief's copy) that keeps the owner's push id but raises the cursor is refused: the owner's pushes go on, warn and reach the group (red team round 22, F1)",
        arguments: [UInt64(1_000), UInt64.max]
    )
    func resignedOwnHead(sentThrough: UInt64) throws {
        let (_, remote, _, a, b) = try Self.pushedPair()
        try a.keychain.setPassword("2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let client = S3Client(remote)
        let headKey = RemoteLayout(location: remote.location).headKey(a.deviceID)
        // The thief holds what the owner's files hold: the device's signing key and the group key.
        var forged = try a.trustedHead(try #require(try client.get(headKey)), key: headKey, device: a.deviceID)
        forged.sentThrough = sentThrough
        try Self.plant(forged, signedWithKeysOf: a, at: headKey, client)
        for write in 3...4 {
            try a.keychain.setPassword("\(write)", service: "a\(write)", account: "ann", scope: .syncable)
            let pushed = try a.push(to: remote)
            #expect(pushed.object != nil, "\(pushed.notices)")
            // 2^64 - 1 is past any change sequence: the head does not even read.
            let warning = sentThrough == .max ? "Ignored this device's head" : "signed it"
            #expect(write == 4 || pushed.notices.contains { $0.contains(warning) }, "\(pushed.notices)")
        }
        try b.pull(from: remote)
        for write in 2...4 {
            #expect(try b.keychain.password(service: "a\(write)", account: "ann") == "\(write)")
        }
    }

    @Test(
        "After a rekey, a head a thief's copy signs with the old keys naming the owner's own newest bundle is ignored, and the notice does not say the copy pushed that bundle (red team round 22)"
    )
    func oldKeyHeadNamingOwnBundle() throws {
        let (_, remote, group, a, b) = try Self.pushedPair()
        // A knows B before it rekeys (a rekey voids passphrase joins it has not heard of).
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.keychain.setPassword("2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let owner = try Self.copy(a, to: group.directory.path("thief"), group)
        let thief = try Self.restore(group.directory.path("thief"), over: nil, group)
        try owner.rekey(passphrase: SyncGroupFixture.passphrase)
        let client = S3Client(remote)
        let headKey = RemoteLayout(location: remote.location).headKey(owner.deviceID)
        // The owner's head, written before its rekey: the thief's copy still reads it.
        let stored = try thief.trustedHead(try #require(try client.get(headKey)), key: headKey, device: owner.deviceID)
        // A fresh push id, the owner's cursor and newest bundle, the keys the thief's copy holds.
        let forged = RemoteHead(device: owner.deviceID, sentThrough: stored.sentThrough, latest: stored.latest)
        try Self.plant(forged, signedWithKeysOf: thief, at: headKey, client)
        let pushed = try owner.push(to: remote)
        #expect(pushed.notices.contains { $0.contains("the copy pushed no bundle there") }, "\(pushed.notices)")
        #expect(!pushed.notices.contains { $0.hasPrefix("Warning: a copy") }, "\(pushed.notices)")
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "a2", account: "ann") == "2")
    }

    @Test(
        "A checkpoint cut a revoked device wrote (its key, the original epoch's) is ignored: no cursor moves past a bundle"
    )
    func forgedCutByRevokedDevice() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.push(to: remote)
        // C joins from a log that already has B (no fork of the membership log).
        let (c, _) = try fixture.join(group, name: "c")
        try c.push(to: remote)
        try a.pull(from: remote)
        try a.revoke(device: b.deviceID)
        try a.push(to: remote)
        try c.pull(from: remote)
        #expect(try c.members().first { $0.deviceID == b.deviceID }?.isActive == false)
        // B writes a checkpoint whose cut says it holds everything A will ever push.
        let layout = RemoteLayout(location: remote.location)
        let cut = RemoteCut(id: RemoteCut.freshID(), device: b.deviceID, through: [a.deviceID: 999_999_999])
        let file = group.directory.path("forged.bundle")
        try b.export(to: file)
        let client = try fixture.client()
        try client.put(layout.checkpointBundleKey(cut.id), body: Array(try Data(contentsOf: file)))
        try client.put(
            layout.checkpointCutKey(cut.id),
            body: try cut.encoded(
                epoch: .original,
                root: try b.keyRing().root(.sync, epoch: .original),
                signer: try b.deviceKeys().signing
            )
        )
        try a.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let pulled = try c.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("Ignored the checkpoint \(cut.id)") }, "\(pulled.notices)")
        #expect(pulled.checkpoints.isEmpty)
        #expect(try c.keychain.password(service: "after", account: "ann") == "after")
        // A compaction leaves it alone, and what it deletes the new checkpoint holds.
        try a.compact(remote: remote)
        #expect(try client.get(layout.checkpointCutKey(cut.id)) != nil)
        try c.pull(from: remote)
        #expect(try c.syncableState() == a.syncableState())
    }

    @Test(
        "A vault restored from an older file copy re-enrols, sends what it wrote since, and gets its later pushes back",
        arguments: [false, true]
    )
    func restoredCopy(compacting: Bool) throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try a.keychain.setPassword("one", service: "one", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let backup = group.directory.path("backup")
        let live = try Self.copy(a, to: backup, group)
        try live.keychain.setPassword("two", service: "two", account: "ann", scope: .syncable)
        try live.push(to: remote)
        let original = live.deviceID
        live.close()

        let restored = try Self.restore(backup, over: live.directory, group)
        try restored.keychain.setPassword("three", service: "three", account: "ann", scope: .syncable)
        var notices: [String]
        if compacting {
            notices = try restored.compact(remote: remote).notices
        } else {
            let summary = try restored.push(to: remote)
            #expect(summary.object != nil)
            notices = summary.notices
        }
        #expect(
            notices.contains { $0.contains("restored or cloned copy of device \(original.uuidString.lowercased())") }
        )
        #expect(restored.deviceID != original)
        #expect(try restored.keychain.password(service: "two", account: "ann") == "two")
        let active = Set(try restored.members().filter(\.isActive).map(\.deviceID))
        #expect(active.isSuperset(of: [original, restored.deviceID]))
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "three", account: "ann") == "three")
        #expect(try b.syncableState() == restored.syncableState())
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == restored.syncableState())
        // Settled: nothing more to push.
        #expect(try restored.push(to: remote).object == nil)
    }

    @Test("A device's own head from before its rekey is ignored with a notice that says so, not called a forgery")
    func ownHeadAfterRekey() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.push(to: remote)
        try b.rekey(passphrase: SyncGroupFixture.passphrase)
        try b.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        let pushed = try b.push(to: remote)
        #expect(!pushed.notices.contains { $0.contains("forged") }, "\(pushed.notices)")
        #expect(pushed.notices.contains { $0.contains("before its rekey") }, "\(pushed.notices)")
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "after", account: "ann") == "after")
        #expect(try b.push(to: remote).notices.isEmpty, "the next push finds the head it wrote")
    }

    @Test(
        "A member rekeys and pushes nothing else: the others pull its older objects, signed with the keys it had then, and learn the rekey (red team round 14, F7)",
        arguments: [false, true]
    )
    func othersPullAfterRekey(writesAfter: Bool) throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.keychain.setPassword("before", service: "before", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try b.rekey(passphrase: SyncGroupFixture.passphrase)
        if writesAfter { try b.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable) }
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "before", account: "ann") == "before")
        let keys = try b.members().first { $0.deviceID == b.deviceID }?.identity
        #expect(try a.members().first { $0.deviceID == b.deviceID }?.identity == keys, "a did not learn b's new keys")
        try a.keychain.setPassword("from-a", service: "from-a", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "from-a", account: "ann") == "from-a")
        try b.keychain.setPassword("later", service: "later", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "later", account: "ann") == "later")
    }

    @Test(
        "A leaked copy pushes between its owner's rekey and the owner's first push: the owner is warned, the others pull on, apply the owner's changes and learn the rekey, and the copy's later objects are skipped (red team round 15, N2)",
        arguments: [false, true]
    )
    func leakPushesBeforeOwnersFirstPush(rekeyKnownFirst: Bool) throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.keychain.setPassword("before", service: "before", account: "ann", scope: .syncable)
        try b.push(to: remote)
        let (owner, leak) = try group.leakThenRekey(b, name: "second")
        try leak.keychain.setPassword("planted", service: "planted", account: "ann", scope: .syncable)
        try leak.push(to: remote)
        try a.pull(from: remote)
        if rekeyKnownFirst {
            // a hears of the rekey from a bundle first: the owner's head then checks at once, and
            // names an object whose `last` the copy's object took.
            let bundle = group.bundle("owner-to-a")
            try owner.export(to: bundle)
            _ = try a.import(from: bundle)
        }
        try owner.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        let pushed = try owner.push(to: remote)
        #expect(pushed.notices.contains { $0.contains("a copy of this vault still holding") }, "\(pushed.notices)")
        let pulled = try a.pull(from: remote)
        #expect(try a.keychain.password(service: "after", account: "ann") == "after", "\(pulled.notices)")
        let keys = try owner.members().first { $0.deviceID == owner.deviceID }?.identity
        #expect(try a.members().first { $0.deviceID == owner.deviceID }?.identity == keys)
        try leak.keychain.setPassword("later", service: "later", account: "ann", scope: .syncable)
        _ = try? leak.push(to: remote)
        let again = try a.pull(from: remote)
        #expect(try a.keychain.password(service: "later", account: "ann") == nil, "\(again.notices)")
        try a.keychain.setPassword("from-a", service: "from-a", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try owner.pull(from: remote)
        #expect(try owner.keychain.password(service: "from-a", account: "ann") == "from-a")
        try owner.keychain.setPassword("last", service: "last", account: "ann", scope: .syncable)
        try owner.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "last", account: "ann") == "last")
    }

    @Test(
        "A member that applied a leaked copy's records before hearing of the rekey sends them again: every member converges, and a compaction keeps the owner's later writes (red team round 16)"
    )
    func membersConvergeAfterALeakedPush() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        let (c, _) = try fixture.join(group, name: "third")
        try c.push(to: remote)
        try b.pull(from: remote)  // b knows c before its rekey, which closes passphrase joins
        try b.keychain.setPassword("before", service: "z", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        try c.pull(from: remote)
        let (owner, leak) = try group.leakThenRekey(b, name: "second")
        try owner.keychain.setPassword("owner", service: "z", account: "ann", scope: .syncable)
        try owner.keychain.setPassword("owner-only", service: "o", account: "ann", scope: .syncable)
        try leak.keychain.setPassword("copy", service: "z", account: "ann", scope: .syncable)
        try leak.keychain.setPassword("planted", service: "c1", account: "ann", scope: .syncable)
        try leak.push(to: remote)
        try a.pull(from: remote)  // before the owner's push: a applies the copy's records
        try owner.push(to: remote)
        try c.pull(from: remote)  // after it: c skips the copy's object
        for _ in 0..<2 {
            for vault in [a, c, owner] {
                try vault.push(to: remote)
                try vault.pull(from: remote)
            }
        }
        #expect(try a.syncableState() == c.syncableState())
        #expect(try owner.syncableState() == c.syncableState())
        #expect(try c.keychain.password(service: "o", account: "ann") == "owner-only")
        _ = try a.compact(remote: remote)
        try owner.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        try owner.push(to: remote)
        for vault in [a, c] { try vault.pull(from: remote) }
        #expect(try a.syncableState() == owner.syncableState())
        #expect(try c.syncableState() == owner.syncableState())
    }

    @Test(
        "A device's head that is no head (cut short, or overwritten) is reported and ignored: the pull applies the other devices' objects, and the device's next push repairs it"
    )
    func garbledHeadIsIgnored() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        let (c, _) = try fixture.join(group, name: "third")
        for vault in [b, c] { try vault.push(to: remote) }
        try a.pull(from: remote)
        try c.keychain.setPassword("from-c", service: "c", account: "ann", scope: .syncable)
        try c.push(to: remote)
        try fixture.client().put(RemoteLayout(location: remote.location).headKey(a.deviceID), body: Array("coff".utf8))
        let pulled = try b.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("Ignored device \(a.deviceID.uuidString.lowercased())") })
        #expect(try b.keychain.password(service: "c", account: "ann") == "from-c")
        try a.keychain.setPassword("from-a", service: "a", account: "ann", scope: .syncable)
        #expect(try a.push(to: remote).notices.contains { $0.contains("Ignored this device's head") })
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "a", account: "ann") == "from-a")
    }

    @Test(
        "A made-up device's head, copied from a real one, and an object that is no bundle, planted without keys: pulls and joins go on (red team round 18)",
        arguments: [false, true]
    )
    func plantedHeadAndJunk(sortsFirst: Bool) throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        try b.push(to: remote)
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let realHead = try #require(try client.get(layout.headKey(a.deviceID)))
        let fake = UUID(
            uuidString: sortsFirst ? "00000000-0000-4000-8000-000000000001" : "ffffffff-ffff-4fff-bfff-ffffffffffff"
        )!
        let text = String(decoding: realHead, as: UTF8.self)
            .replacingOccurrences(of: a.deviceID.uuidString.lowercased(), with: fake.uuidString.lowercased())
        try client.put(layout.headKey(fake), body: Array(text.utf8))
        let junk = layout.bundleKey(fake, RemoteLayout.BundleName(first: 1, last: 1))
        try client.put(junk, body: SecureRandom.bytes(count: 900))
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let pulled = try b.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains(fake.uuidString.lowercased()) }, "\(pulled.notices)")
        #expect(try b.keychain.password(service: "a2", account: "ann") == "a2")
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.keychain.password(service: "a2", account: "ann") == "a2")
    }

    @Test(
        "A checkpoint pair that is no checkpoint, planted without keys, stops no pull, join or compaction (red team round 19)"
    )
    func plantedJunkCheckpoint() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        try b.push(to: remote)
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let id = SecureRandom.bytes(count: 16).hexEncoded
        try client.put(layout.checkpointBundleKey(id), body: SecureRandom.bytes(count: 900))
        try client.put(layout.checkpointCutKey(id), body: SecureRandom.bytes(count: 300))
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let pulled = try b.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("Ignored the checkpoint \(id)") }, "\(pulled.notices)")
        #expect(try b.keychain.password(service: "a2", account: "ann") == "a2")
        try b.compact(remote: remote)
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.keychain.password(service: "a2", account: "ann") == "a2")
    }

    @Test(
        "An object planted without keys over a device's next changes, among its real bundles, holds up nothing: pulls and joins pass it over (red team round 24, F1)"
    )
    func plantedJunkAmongRealBundles() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let head =
            layout.devices(in: try client.list(prefix: layout.listingPrefix))[a.deviceID]?.bundles
            .map(\.last).max() ?? 0
        let junk = layout.bundleKey(a.deviceID, RemoteLayout.BundleName(first: head + 1, last: head + 3))
        try client.put(junk, body: SecureRandom.bytes(count: 900))
        for name in ["a2", "a3", "a4"] {
            try a.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try a.push(to: remote)
        }
        #expect(layout.devices(in: try client.list(prefix: layout.listingPrefix))[a.deviceID]?.bundles.count ?? 0 >= 4)
        let pulled = try b.pull(from: remote)
        #expect(pulled.waitingDevices.isEmpty, "\(pulled.notices)")
        #expect(pulled.notices.contains { $0.contains("Passed over \(junk)") }, "\(pulled.notices)")
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        for vault in [b, newcomer] {
            #expect(try vault.keychain.password(service: "a4", account: "ann") == "a4")
        }
    }

    @Test(
        "A bundle a thief holding a member's keys puts inside the member's range reaches the member too, not only the others (red team round 24, F2)"
    )
    func thiefBundleInsideOwnersRange() throws {
        let (fixture, remote, group, original, b) = try Self.pushedPair()
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let headKey = layout.headKey(original.deviceID)
        let ownersHead = try #require(try client.get(headKey))
        // The thief's copy pushes two changes; a modified client would upload only the bundle, and
        // later: the head goes back, and the bundle comes back after the owner's own pushes.
        let a = try Self.copy(original, to: group.directory.path("thief"), group)
        let thief = try Self.restore(group.directory.path("thief"), over: nil, group)
        for name in ["t1", "t2"] {
            try thief.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
        }
        let planted = try #require(try thief.push(to: remote).object)
        let bytes = try #require(try client.get(planted))
        try client.delete(planted)
        try client.put(headKey, body: ownersHead)
        thief.close()
        for name in ["a2", "a3"] {
            try a.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
            try a.push(to: remote)
        }
        try client.put(planted, body: bytes)
        for vault in [b, a] { try vault.pull(from: remote) }
        for vault in [a, b] {
            for name in ["t1", "t2", "a3"] {
                #expect(try vault.keychain.password(service: name, account: "ann") == name, "\(name)")
            }
        }
        #expect(try a.syncableState() == b.syncableState())
    }

    @Test(
        "A device's newest bundle overwritten with junk holds up that device's later changes alone; pulls and joins go on, and the device's compaction writes the changes again (red team round 19, N3)"
    )
    func overwrittenNewestBundle() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        try b.push(to: remote)
        let client = try fixture.client()
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        let junk = try #require(try a.push(to: remote).object)
        try client.put(junk, body: SecureRandom.bytes(count: 900))
        let (c, _) = try fixture.join(group, name: "c")
        try c.keychain.setPassword("c1", service: "c1", account: "cat", scope: .syncable)
        try c.push(to: remote)
        try a.keychain.setPassword("a3", service: "a3", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let pulled = try b.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("Stopped at \(junk)") }, "\(pulled.notices)")
        #expect(pulled.waitingDevices == [a.deviceID])
        #expect(try b.keychain.password(service: "c1", account: "cat") == "c1")
        // Not a3 either: applying it would step over a2, which the store no longer has.
        #expect(try b.keychain.password(service: "a2", account: "ann") == nil)
        #expect(try b.keychain.password(service: "a3", account: "ann") == nil)
        try a.compact(remote: remote)
        #expect(try b.pull(from: remote).isIncomplete == false)
        #expect(try b.keychain.password(service: "a2", account: "ann") == "a2")
        #expect(try b.keychain.password(service: "a3", account: "ann") == "a3")
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == b.syncableState())
    }

    @Test(
        "Another device's bundle copied over a device's newest one, by someone who may write to the store, is damage, not a copy: the device does not re-enrol"
    )
    func anotherDevicesBundleOverOurs() throws {
        let (fixture, remote, _, a, b) = try Self.pushedPair()
        try b.keychain.setPassword("b1", service: "b1", account: "bob", scope: .syncable)
        let theirs = try #require(try b.push(to: remote).object)
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        let ours = try #require(try a.push(to: remote).object)
        let client = try fixture.client()
        try client.put(ours, body: try #require(try client.get(theirs)))
        let device = a.deviceID
        try a.keychain.setPassword("a3", service: "a3", account: "ann", scope: .syncable)
        let pushed = try a.push(to: remote)
        #expect(a.deviceID == device, "\(pushed.notices)")
        #expect(!pushed.notices.contains { $0.contains("restored or cloned copy") }, "\(pushed.notices)")
    }

    @Test(
        "A checkpoint's bundle overwritten with junk, its cut intact: pulls and joins go on past it, and the next push of a member that holds the changes writes them again (red team round 20, R20-3)"
    )
    func overwrittenCheckpointBundle() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        _ = try Self.overwriteCheckpoint(fixture, remote, a, b)
        let repaired = try a.push(to: remote)
        #expect(repaired.repairCheckpoint != nil, "\(repaired.notices)")
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.keychain.password(service: "b1", account: "bob") == "b1")
        #expect(try newcomer.keychain.password(service: "a2", account: "ann") == "a2")
        #expect(try newcomer.syncableState() == a.syncableState())
    }

    @Test(
        "A pull that needed a checkpoint it could not use, with every bundle it stood for compacted away, is incomplete until a member writes the changes again (red team rounds 43 and 44, F3)"
    )
    func unusableCheckpointLeavesPullIncomplete() throws {
        // C joins now, and pulls nothing more until the end.
        let (fixture, remote, _, a, b, c) = try Self.pushedTrio()
        try a.pull(from: remote)
        let checkpoint = try Self.overwriteCheckpoint(fixture, remote, a, b)

        // The checkpoint alone held B's and A's changes, and C cannot even check its cut (B's
        // admission lay in it): A's head says what C lacks of A, and the pull is incomplete.
        let waiting = try c.pull(from: remote)
        #expect(waiting.isIncomplete && waiting.waitingDevices == [a.deviceID], "\(waiting.notices)")
        #expect(try c.keychain.password(service: "a2", account: "ann") == nil)

        // A's next push writes what it holds again. B's last change (pushed as it compacted) lies
        // only in the overwritten checkpoint, whose cut C can check now: still incomplete, naming B.
        let repaired = try a.push(to: remote)
        #expect(repaired.repairCheckpoint != nil, "\(repaired.notices)")
        let partly = try c.pull(from: remote)
        #expect(try c.keychain.password(service: "b1", account: "bob") == "b1")
        #expect(try c.keychain.password(service: "a2", account: "ann") == "a2")
        #expect(partly.waitingCheckpoints == [checkpoint], "\(partly.notices)")
        #expect(partly.waitingDevices == [b.deviceID], "\(partly.notices)")
        let notice = partly.notices.first { $0.hasPrefix("Waiting for changes") }
        #expect(notice?.contains("of device \(b.deviceID.uuidString.lowercased())") == true, "\(partly.notices)")
        #expect(partly.notices.filter { $0.hasPrefix("Waiting for changes") }.count == 1, "named once")

        // B's next push writes its own again; C's next pull is complete.
        #expect(try b.push(to: remote).repairCheckpoint != nil)
        let complete = try c.pull(from: remote)
        #expect(!complete.isIncomplete, "\(complete.notices)")
        try a.pull(from: remote)
        #expect(try c.syncableState() == a.syncableState())
    }

    @Test(
        "A checkpoint bundle damaged past its header (cut short, or one byte changed) stops counting for the pushes that check the store: the next push writes its changes again (red team round 44, F3)",
        arguments: [false, true]
    )
    func checkpointDamagedPastItsHeader(cutShort: Bool) throws {
        let (fixture, remote, _, a, b, c) = try Self.pushedTrio()
        try a.pull(from: remote)
        let checkpoint = try Self.compactedAfterWrites(remote, a, b)
        // Its header, and so whose full export it is, stays intact.
        try Self.damage(checkpoint, cutShort: cutShort, try fixture.client())

        let waiting = try c.pull(from: remote)
        #expect(waiting.isIncomplete, "\(waiting.notices)")
        #expect(waiting.notices.contains { $0.contains("Ignored the checkpoint") }, "\(waiting.notices)")
        // B holds everything the checkpoint held (A lacks what B pushed as it compacted): its next
        // push sees the checkpoint no longer counts and writes it again. Before cuts recorded their
        // bundle, a damaged bundle whose header was intact still counted, and no push wrote again.
        let repaired = try b.push(to: remote)
        #expect(repaired.repairCheckpoint != nil, "\(repaired.notices)")
        #expect(repaired.notices.contains { $0.contains("its cut recorded") }, "\(repaired.notices)")
        let complete = try c.pull(from: remote)
        #expect(!complete.isIncomplete, "\(complete.notices)")
        #expect(try c.keychain.password(service: "b1", account: "bob") == "b1")
        #expect(try c.keychain.password(service: "a2", account: "ann") == "a2")
        #expect(try c.syncableState() == a.syncableState())
    }

    @Test(
        "A device's older head put back in the store after it compacted: its own signed cut shows the head is old, and a pull that lacks what lies between says so, or takes it from the checkpoint (red team round 44, F3)",
        arguments: [false, true]
    )
    func olderHeadPutBackAfterCompaction(checkpointDamaged: Bool) throws {
        let (fixture, remote, _, a, b, c) = try Self.pushedTrio()
        try b.push(to: remote)
        try c.pull(from: remote)
        let client = try fixture.client()
        let headKey = RemoteLayout(location: remote.location).headKey(b.deviceID)
        let older = try #require(try client.get(headKey))
        try b.keychain.setPassword("b2", service: "b2", account: "bob", scope: .syncable)
        let checkpoint = try b.compact(remote: remote).checkpoint
        // Someone who may write to the store puts B's older head back (genuinely signed by B).
        try client.put(headKey, body: older)
        if checkpointDamaged { try Self.damage(checkpoint, cutShort: true, client) }

        let pulled = try c.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("the store holds an older head of it") }, "\(pulled.notices)")
        #expect(!pulled.notices.contains { $0.contains("went back") }, "\(pulled.notices)")
        if checkpointDamaged {
            // Before the cut counted as the device's word, this pull exited 0 without b2.
            #expect(pulled.isIncomplete && pulled.waitingDevices == [b.deviceID], "\(pulled.notices)")
            #expect(try c.keychain.password(service: "b2", account: "bob") == nil)
            // B's next push notices its head went back and sends its changes again.
            try b.push(to: remote)
        } else {
            #expect(!pulled.isIncomplete, "\(pulled.notices)")
            #expect(pulled.checkpoints == [checkpoint], "\(pulled.notices)")
            // The checkpoint is applied once, not again at every pull while the old head stays.
            let again = try c.pull(from: remote)
            #expect(!again.isIncomplete && again.checkpoints.isEmpty, "\(again.notices)")
            #expect(!again.notices.contains { $0.contains("went back") }, "\(again.notices)")
            try b.push(to: remote)
        }
        let complete = try c.pull(from: remote)
        #expect(!complete.isIncomplete, "\(complete.notices)")
        #expect(try c.keychain.password(service: "b2", account: "bob") == "b2")
        try a.pull(from: remote)
        #expect(try c.syncableState() == b.syncableState())
        #expect(try a.syncableState() == b.syncableState())
    }

    @Test(
        "A device's own cut shows its put-back head is old, and its checkpoint is damaged: a member that holds the changes repairs, and the wait ends without the device (outside test of round 44's F3 fix, F2)"
    )
    func repairByAnotherMemberEndsTheWait() throws {
        let (fixture, remote, group, a, b, c) = try Self.pushedTrio()
        try a.pull(from: remote)
        try a.keychain.setPassword("a1", service: "a1", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try b.pull(from: remote)
        let client = try fixture.client()
        let headKey = RemoteLayout(location: remote.location).headKey(a.deviceID)
        let older = try #require(try client.get(headKey))
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try a.keychain.setPassword("a3", service: "a3", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try c.pull(from: remote)
        let checkpoint = try a.compact(remote: remote).checkpoint
        try client.put(headKey, body: older)
        try Self.damage(checkpoint, cutShort: false, client)

        let waiting = try b.pull(from: remote)
        #expect(waiting.isIncomplete && waiting.waitingDevices == [a.deviceID], "\(waiting.notices)")
        // C holds A's changes: its push writes them again, and B need not wait for A.
        #expect(try c.push(to: remote).repairCheckpoint != nil)
        let complete = try b.pull(from: remote)
        #expect(!complete.isIncomplete, "\(complete.notices)")
        #expect(try b.keychain.password(service: "a3", account: "ann") == "a3")
        // Applied once: the next pull downloads no checkpoint.
        let again = try b.pull(from: remote)
        #expect(!again.isIncomplete && again.checkpoints.isEmpty, "\(again.notices)")
        let (newcomer, joined) = try fixture.join(group, name: "newcomer")
        #expect(!joined.isIncomplete, "\(joined.notices)")
        #expect(try newcomer.keychain.password(service: "a3", account: "ann") == "a3")
    }

    @Test(
        "A vault restored from a copy older than its last push and compaction, with its older head put back: its own cut shows it is a copy, it re-enrols, and its compaction deletes nothing only the old checkpoint held (outside test of round 44's F3 fix, F1)"
    )
    func restoredCopyFindsItsOwnCutAhead() throws {
        let (fixture, remote, group, a, b, device, _) = try Self.restoredAfterItsCompaction(writing: ["a2", "a3"])
        try a.keychain.setPassword("x1", service: "x1", account: "ann", scope: .syncable)
        let pushed = try a.push(to: remote)
        #expect(pushed.notices.contains { $0.contains("restored or cloned copy") }, "\(pushed.notices)")
        #expect(a.deviceID != device)
        try a.pull(from: remote)
        try a.compact(remote: remote)
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        for vault in [a, b, newcomer] {
            try vault.pull(from: remote)
            for name in ["a2", "a3", "x1"] {
                #expect(try vault.keychain.password(service: name, account: "ann") == name, "\(name)")
            }
        }
    }

    @Test(
        "A re-enrolled copy's compaction keeps its former id's checkpoint, saying it is its own old id and to revoke it; once revoked, the next compaction deletes it and nothing is lost (outside test of round 44's F3 fix, G5)"
    )
    func formerIdsCheckpointGoesOnceRevoked() throws {
        let (fixture, remote, group, a, b, former, old) = try Self.restoredAfterItsCompaction(writing: ["a2"])
        let client = try fixture.client()
        try a.pull(from: remote)
        #expect(a.deviceID != former, "the restored copy re-enrols")

        let kept = try a.compact(remote: remote)
        let writer = former.uuidString.lowercased()
        #expect(kept.keptCheckpoints.contains(old), "\(kept.notices)")
        #expect(
            kept.notices.contains {
                $0.contains("Device \(writer) is this vault's own id before it re-enrolled")
                    && $0.contains("revoke it (") && $0.contains("which this vault has applied")
            },
            "\(kept.notices)"
        )
        #expect(
            try b.compact(remote: remote).notices.contains { $0.contains("a head was put back to an older one") },
            "another member's notice names both causes"
        )
        _ = try a.revoke(device: former)
        try b.pull(from: remote)
        let deleted = try a.compact(remote: remote)
        #expect(
            deleted.notices.contains { $0.contains("Deleted the checkpoint") && $0.contains("revoked") },
            "\(deleted.notices)"
        )
        #expect(!(try client.list(prefix: old).contains { $0.key == old }))
        // Nor does this vault's own checkpoint since, which names the old id, stay for good (F1).
        #expect(deleted.keptCheckpoints.isEmpty, "\(deleted.notices)")
        try Self.expectAfterRevocation(a, b, approving: b, fixture, remote, group, have: ("a2", "ann"))
    }

    @Test(
        "After a revocation, a member's checkpoint naming the revoked device's changes goes with the next compaction of a vault that holds them, and a newcomer still gets them (outside test of the G5 fix, F1)"
    )
    func checkpointNamingARevokedDeviceGoes() throws {
        let (fixture, remote, group, a, b, c) = try Self.pushedTrio()
        let client = try fixture.client()
        try c.keychain.setPassword("c1", service: "c1", account: "cy", scope: .syncable)
        try c.push(to: remote)
        try b.pull(from: remote)
        let old = try b.compact(remote: remote).checkpoint
        try a.pull(from: remote)
        _ = try a.revoke(device: c.deviceID)
        try b.pull(from: remote)

        let compacted = try a.compact(remote: remote)
        #expect(!compacted.keptCheckpoints.contains(old), "\(compacted.notices)")
        #expect(!(try client.list(prefix: old).contains { $0.key == old }))
        try Self.expectAfterRevocation(a, b, approving: a, fixture, remote, group, have: ("c1", "cy"))
    }

    @Test(
        "A revoked device restored from a copy reused its change numbers: the checkpoint that alone holds its later record is kept by a vault whose cursor counts the earlier one (second outside test of the G5 fix, F1)"
    )
    func revokedDevicesReusedNumbersKeepTheirCheckpoint() throws {
        let (fixture, remote, group, h, b, first) = try Self.pushedTrio()
        let client = try fixture.client()
        // Two rounds, so each knows every join and its acknowledgements.
        for _ in 0..<2 {
            for vault in [h, b, first] {
                try vault.pull(from: remote)
                try vault.push(to: remote)
            }
        }
        let headKey = RemoteLayout(location: remote.location).headKey(first.deviceID)
        let older = try #require(try client.get(headKey))
        let backup = group.directory.path("r-last-night")
        var r = try Self.copy(first, to: backup, group)
        try r.keychain.setPassword("r1", service: "r1", account: "rob", scope: .syncable)
        try r.push(to: remote)
        try h.pull(from: remote)
        // R's disk dies; its older head is put back and last night's copy writes under the same
        // change number.
        try client.put(headKey, body: older)
        let target = r.directory
        r.close()
        r = try Self.restore(backup, over: target, group)
        try r.keychain.setPassword("r2", service: "r2", account: "rob", scope: .syncable)
        try r.push(to: remote)
        try b.pull(from: remote)
        _ = try h.revoke(device: r.deviceID)
        let only = try b.compact(remote: remote).checkpoint
        try h.push(to: remote)
        try h.pull(from: remote)

        let compacted = try h.compact(remote: remote)
        #expect(compacted.keptCheckpoints.contains(only), "\(compacted.notices)")
        #expect(
            compacted.notices.contains { $0.contains("may hold the only copy") },
            "\(compacted.notices)"
        )
    }

    @Test(
        "A revoked device's genuine cut copied over a member's checkpoint's cut is ignored and named as another checkpoint's cut, not as that checkpoint's own (outside test of the G5 fix, F3)"
    )
    func revokedDevicesCutCopiedOverAnother() throws {
        let (fixture, remote, _, a, b, c) = try Self.pushedTrio()
        let client = try fixture.client()
        let revokedCheckpoint = try c.compact(remote: remote).checkpoint
        let revokedCut = try #require(
            try client.get(revokedCheckpoint.replacingOccurrences(of: ".bundle", with: ".cut"))
        )
        try a.pull(from: remote)
        _ = try a.revoke(device: c.deviceID)
        try b.pull(from: remote)
        let honest = try b.compact(remote: remote).checkpoint
        let honestID = String(honest.split(separator: "/").last!.dropLast(".bundle".count))
        try client.put(honest.replacingOccurrences(of: ".bundle", with: ".cut"), body: revokedCut)

        let pulled = try a.pull(from: remote)
        #expect(
            pulled.notices.contains {
                $0.contains("Ignored the checkpoint \(honestID)") && $0.contains("copied over this one's")
            },
            "\(pulled.notices)"
        )
    }

    /// After a revocation: a newcomer joins, approved by `approver` (a revocation makes the group
    /// approval-only), the members pull and push (sealing the key epoch they started at the
    /// revocation to it), and then every one of them pulls completely and has the item `have`
    /// (service, account), whose value is its service.
    static func expectAfterRevocation(
        _ a: Vault,
        _ b: Vault,
        approving approver: Vault,
        _ fixture: RemoteFixture,
        _ remote: S3Remote,
        _ group: SyncGroupFixture,
        have item: (service: String, account: String)
    ) throws {
        let newcomer = try fixture.approvedJoin(group, name: "newcomer", by: approver)
        for member in [a, b] {
            try member.pull(from: remote)
            try member.push(to: remote)
        }
        for (name, vault) in [("a", a), ("b", b), ("newcomer", newcomer)] {
            let pulled = try vault.pull(from: remote)
            #expect(!pulled.isIncomplete, "\(name): \(pulled.notices)")
            #expect(
                try vault.keychain.password(service: item.service, account: item.account) == item.service,
                "\(name)"
            )
        }
    }

    @Test(
        "A checkpoint bundle uploaded again with the same bytes in other parts (a copied bucket): pulls still use it, and the push that cannot tell says so (outside test of round 44's F3 fix, F4)"
    )
    func checkpointUploadedAgainUnchanged() throws {
        let (fixture, remote, _, a, b, c) = try Self.pushedTrio()
        try a.pull(from: remote)
        let checkpoint = try Self.compactedAfterWrites(remote, a, b)
        let client = try fixture.client()
        let bytes = try #require(try client.get(checkpoint))
        let upload = try client.startUpload(checkpoint)
        let part = try client.uploadPart(checkpoint, uploadID: upload, number: 1, body: bytes)
        try client.completeUpload(checkpoint, uploadID: upload, parts: [part])

        let pulled = try c.pull(from: remote)
        #expect(!pulled.isIncomplete && pulled.checkpoints == [checkpoint], "\(pulled.notices)")
        #expect(try c.keychain.password(service: "a2", account: "ann") == "a2")
        let pushed = try b.push(to: remote)
        #expect(pushed.notices.contains { $0.contains("cannot tell apart without reading it") }, "\(pushed.notices)")
    }

    @Test(
        "A checkpoint whose cut is another checkpoint's, copied over it, loses that cut to the next compaction instead of being named by every pull for good, and keeps its bundle (outside test of round 44's F3 fix, F5 and G1)"
    )
    func misnamedCutGoesWithTheNextCompaction() throws {
        let (fixture, remote, _, a, b) = try Self.pushedPair()
        let client = try fixture.client()
        let layout = RemoteLayout(location: remote.location)
        let first = try a.compact(remote: remote).checkpoint
        let firstCut = try #require(try client.get(first.replacingOccurrences(of: ".bundle", with: ".cut")))
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        let second = try a.compact(remote: remote).checkpoint
        let secondCut = second.replacingOccurrences(of: ".bundle", with: ".cut")
        try client.put(secondCut, body: firstCut)
        #expect(try b.pull(from: remote).notices.contains { $0.contains("not its own") })

        let compacted = try b.compact(remote: remote)
        #expect(compacted.notices.contains { $0.contains("copied over its own") }, "\(compacted.notices)")
        // Its bundle may be the only copy of changes no member holds any more: it stays.
        let left = Set(try client.list(prefix: layout.checkpointFolder + "/").map(\.key))
        #expect(left.contains(second) && !left.contains(secondCut), "\(left)")
        // What only it held (nothing usable: its cut is not its own) comes again from A's push.
        #expect(try a.push(to: remote).repairCheckpoint != nil)
        let pulled = try b.pull(from: remote)
        #expect(!pulled.isIncomplete && !pulled.notices.contains { $0.contains("not its own") }, "\(pulled.notices)")
        #expect(try b.keychain.password(service: "a2", account: "ann") == "a2")
    }

    @Test(
        "An older checkpoint's bundle of the same size put in place of a newer one's: no pull takes it for the newer, and the next push writes the changes again (outside test of round 44's F3 fix, G4)"
    )
    func olderCheckpointBundleOfTheSameSize() throws {
        let (fixture, remote, group, a, _) = try Self.pairKnowingEachOther()
        let client = try fixture.client()
        try a.keychain.setPassword("v1", service: "a2", account: "ann", scope: .syncable)
        let older = try a.compact(remote: remote).checkpoint
        let olderBytes = try #require(try client.get(older))
        try a.keychain.setPassword("v2", service: "a2", account: "ann", scope: .syncable)
        let newer = try a.compact(remote: remote).checkpoint
        #expect(try client.size(of: newer) == Int64(olderBytes.count), "the two exports differ in size")
        try client.put(newer, body: olderBytes)

        let (newcomer, joined) = try fixture.join(group, name: "newcomer")
        #expect(joined.isIncomplete, "\(joined.notices)")
        #expect(joined.notices.contains { $0.contains("another export") }, "\(joined.notices)")
        #expect(try newcomer.keychain.password(service: "a2", account: "ann") != "v1")
        #expect(try a.push(to: remote).repairCheckpoint != nil)
        let complete = try newcomer.pull(from: remote)
        #expect(!complete.isIncomplete, "\(complete.notices)")
        #expect(try newcomer.keychain.password(service: "a2", account: "ann") == "v2")
    }

    @Test(
        "A device's bundle whose header's membership log had one byte changed in the store: pulls go on with the rest and wait for that device's changes, and its compaction heals it"
    )
    func alteredMembershipLogInABundle() throws {
        let (fixture, remote, _, a, b) = try Self.pairKnowingEachOther()
        try b.keychain.setPassword("b1", service: "b1", account: "bob", scope: .syncable)
        let key = try #require(try b.push(to: remote).object)
        let client = try fixture.client()
        var bytes = try #require(try client.get(key))
        var source = DataSource(bytes)
        let headerLength = try BundleHeader.read(from: &source).1.count
        // Within the membership log, the header's last field.
        bytes[headerLength * 9 / 10] ^= 0x01
        try client.put(key, body: bytes)
        try a.keychain.setPassword("a1", service: "a1", account: "ann", scope: .syncable)
        try a.push(to: remote)

        // Before, the refusal of that one object stopped the whole pull.
        let others = try b.pull(from: remote)
        #expect(!others.isIncomplete, "\(others.notices)")
        #expect(try b.keychain.password(service: "a1", account: "ann") == "a1")
        let stuck = try a.pull(from: remote)
        #expect(stuck.isIncomplete && stuck.waitingDevices == [b.deviceID], "\(stuck.notices)")
        try b.compact(remote: remote)
        let healed = try a.pull(from: remote)
        #expect(!healed.isIncomplete, "\(healed.notices)")
        #expect(try a.keychain.password(service: "b1", account: "bob") == "b1")
    }

    @Test(
        "A device's genuine cut copied from another store it pushes to is no sign of a copy: the device stays itself (second outside test of round 44's F3 fix, G2)"
    )
    func ownCutCopiedFromAnotherStore() throws {
        let (fixture, remote, _, a, _) = try Self.pushedPair()
        let otherFixture = try RemoteFixture()
        let other = try otherFixture.remote()
        try a.push(to: other)
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let bundleKey = try a.compact(remote: remote).checkpoint
        let id = String(bundleKey.split(separator: "/").last!.dropLast(".bundle".count))
        let (here, there) = (RemoteLayout(location: remote.location), RemoteLayout(location: other.location))
        let (from, to) = (try fixture.client(), try otherFixture.client())
        for (source, target) in [
            (here.checkpointBundleKey(id), there.checkpointBundleKey(id)),
            (here.checkpointCutKey(id), there.checkpointCutKey(id)),
        ] {
            try to.put(target, body: try #require(try from.get(source)))
        }
        let device = a.deviceID
        let pushed = try a.push(to: other)
        #expect(!pushed.notices.contains { $0.contains("restored or cloned copy") }, "\(pushed.notices)")
        #expect(a.deviceID == device)
    }

    @Test(
        "A second group made with the same passphrase and pushed to the same prefix: a join refuses to guess, also when the real group is approval-only and no object of it opens with the passphrase (red team rounds 19 and 20)",
        arguments: [false, true]
    )
    func joinRefusesTwoGroups(realGroupClosed: Bool) throws {
        let (fixture, remote, group, a, _) = try Self.pushedPair()
        if realGroupClosed {
            // No object of the real group carries a join block any more.
            try a.setJoinPolicy(.approval)
            try a.compact(remote: remote)
        }
        let planted = try Vault.create(
            at: group.directory.path("planted"),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration
        )
        try planted.push(to: remote)
        let refused = #expect(throws: CofferError.self) { try fixture.join(group, name: "newcomer") }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains("holds objects of 2 sync groups") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains(a.syncGroupID.uuidString.lowercased()) == true)
        #expect(
            !FileManager.default.fileExists(
                atPath: group.directory.path("newcomer").appendingPathComponent("data.mdb").path
            )
        )
    }

    @Test("Two running copies of one vault both write: one becomes a new device, and both histories are kept")
    func clonedCopies() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        let original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        try original.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        try clone.keychain.setPassword("y", service: "y", account: "ann", scope: .syncable)
        try original.push(to: remote)
        let pushed = try clone.push(to: remote)
        #expect(pushed.notices.contains { $0.contains("restored or cloned copy") })
        #expect(clone.deviceID != original.deviceID)
        try original.pull(from: remote)
        try b.pull(from: remote)
        for vault in [original, clone, b] {
            #expect(try vault.keychain.password(service: "x", account: "ann") == "x")
            #expect(try vault.keychain.password(service: "y", account: "ann") == "y")
        }
        #expect(try original.syncableState() == clone.syncableState())
        #expect(try b.syncableState() == clone.syncableState())
    }

    @Test(
        "A leaked copy that re-enrolled as a new device goes with its owner's rekey: revoked, and it reads nothing written after (red team round 17, F2)"
    )
    func rekeyRevokesAReenrolledCopy() throws {
        let (_, remote, group, a, b) = try Self.pushedPair()
        let original = try Self.copy(a, to: group.directory.path("thief"), group)
        let thief = try Self.restore(group.directory.path("thief"), over: nil, group)
        try original.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try original.push(to: remote)
        try thief.keychain.setPassword("t1", service: "t1", account: "ann", scope: .syncable)
        #expect(try thief.push(to: remote).notices.contains { $0.contains("restored or cloned copy") })
        try b.pull(from: remote)
        try b.push(to: remote)
        try original.pull(from: remote)
        #expect(try original.members().first { $0.deviceID == thief.deviceID }?.isActive == true)

        try original.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "a new passphrase")
        let copy = try #require(try original.members().first { $0.deviceID == thief.deviceID })
        #expect(!copy.isActive && copy.revokedBy == original.deviceID, "the rekey revokes the copy")
        try original.push(to: remote)
        try original.keychain.setPassword("a3", service: "a3", account: "ann", scope: .syncable)
        try original.push(to: remote)
        try b.pull(from: remote)
        #expect(try b.members().first { $0.deviceID == thief.deviceID }?.isActive == false)
        try b.keychain.setPassword("b1", service: "b1", account: "ann", scope: .syncable)
        try b.push(to: remote)

        _ = try? thief.pull(from: remote)
        for name in ["a3", "b1"] {
            let read = Result { () throws(CofferError) in try thief.keychain.password(service: name, account: "ann") }
            #expect((try? read.get()) == nil, "the copy read \(name)")
        }
        try original.pull(from: remote)
        #expect(try original.syncableState() == b.syncableState())
    }

    @Test(
        "A vault restored from a copy made before another member's rekey, its head in the store sealed in the new epoch, pulls or pushes first, re-enrols and syncs on",
        arguments: [false, true]
    )
    func restoredFromBeforeAnotherRekey(pushesFirst: Bool) throws {
        let (_, remote, group, a, b) = try Self.pairKnowingEachOther()
        let backup = group.directory.path("a-backup")
        let running = try Self.copy(a, to: backup, group)
        try b.rekey(passphrase: SyncGroupFixture.passphrase)
        try b.keychain.setPassword("after-rekey", service: "b", account: "ann", scope: .syncable)
        try b.push(to: remote)
        // The running copy learns the new epoch and writes its head under it.
        try running.pull(from: remote)
        try running.keychain.setPassword("a-later", service: "a", account: "ann", scope: .syncable)
        try running.push(to: remote)
        let directory = running.directory
        running.close()
        let restored = try Self.restore(backup, over: directory, group)
        if pushesFirst {
            try restored.keychain.setPassword("restored", service: "r", account: "ann", scope: .syncable)
            let pushed = try restored.push(to: remote)
            #expect(pushed.notices.contains { $0.contains("restored or cloned copy") }, "\(pushed.notices)")
            try b.pull(from: remote)
            #expect(try b.keychain.password(service: "r", account: "ann") == "restored")
        } else {
            let pulled = try restored.pull(from: remote)
            #expect(pulled.notices.contains { $0.contains("restored or cloned copy") }, "\(pulled.notices)")
        }
        #expect(try restored.keychain.password(service: "b", account: "ann") == "after-rekey")
        #expect(try restored.keychain.password(service: "a", account: "ann") == "a-later")
    }

    @Test(
        "A thief's copy that approves a device of its own: the owner's rekey revokes the copy's identity and what it admitted, whichever copy pushed first (red team round 18)",
        arguments: [false, true]
    )
    func rekeyRevokesWhatACopyAdmitted(thiefPushesFirst: Bool) throws {
        let (fixture, remote, group, a, b) = try Self.pairKnowingEachOther()
        let owner = try Self.copy(b, to: group.directory.path("thief"), group)
        let thief = try Self.restore(group.directory.path("thief"), over: nil, group)
        let first = thiefPushesFirst ? thief : owner
        let second = thiefPushesFirst ? owner : thief
        try first.keychain.setPassword("first", service: "first", account: "ann", scope: .syncable)
        try first.push(to: remote)
        try second.keychain.setPassword("second", service: "second", account: "ann", scope: .syncable)
        #expect(try second.push(to: remote).notices.contains { $0.contains("restored or cloned copy") })
        // The thief admits a device of its own, with whichever identity it has now.
        let puppet = try fixture.approvedJoin(group, name: "puppet", by: thief)
        try puppet.pull(from: remote)
        try puppet.push(to: remote)
        try owner.pull(from: remote)
        try a.pull(from: remote)
        let thiefID = thief.deviceID
        try owner.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the owner's new passphrase")
        let members = try owner.members()
        for device in [thiefID, puppet.deviceID] {
            #expect(members.first { $0.deviceID == device }?.isActive == false, "\(device) stays a member")
        }
        #expect(members.first { $0.deviceID == owner.deviceID }?.isActive == true)
        try owner.push(to: remote)
        try owner.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        try owner.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "after", account: "ann") == "after")
        for vault in [thief, puppet] {
            _ = try? vault.pull(from: remote)
            let read = Result { () throws(CofferError) in try vault.keychain.password(service: "after", account: "ann")
            }
            #expect((try? read.get()) == nil, "a copy's device read what the owner wrote after the rekey")
        }
    }

    @Test(
        "Two copies push the same bundle name at the same moment: the overtaken one notices, the other's acknowledged push stands or is sent again, and nothing is lost, even when that copy is then restored from an older file copy",
        arguments: [false, true]
    )
    func copiesPushingAtOnce(cloneFinishesLast: Bool) throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        var original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        let stale = group.directory.path("original-before")
        original = try Self.copy(original, to: stale, group)
        try original.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        try clone.keychain.setPassword("y", service: "y", account: "ann", scope: .syncable)
        // The original's whole push lands in the middle of the clone's, under the same bundle name:
        // between the clone's upload and its head, or, when the clone's upload finishes last, just
        // before it finishes (after the clone's last look at the head).
        let race: () throws(CofferError) -> Void = { () throws(CofferError) in _ = try original.push(to: remote) }
        let raced = try clone.push(
            to: remote,
            progress: nil,
            beforeFinish: cloneFinishesLast ? race : {},
            beforeHead: cloneFinishesLast ? {} : race
        )
        #expect(raced.notices.contains { $0.contains("restored or cloned copy") }, "\(raced.notices)")
        #expect(clone.deviceID != original.deviceID)
        if cloneFinishesLast {
            // The clone's bundle replaced the original's acknowledged one: the head is set back, and
            // the original's next push finds from its lineage that the head follows the one both
            // pushes read, not its own: it re-enrols too, and sends its change again.
            let before = original.deviceID
            let repaired = try original.push(to: remote)
            #expect(repaired.notices.contains { $0.contains("restored or cloned copy") }, "\(repaired.notices)")
            #expect(original.deviceID != before)
        } else {
            // The original's bundle and head stand: the store keeps what its push acknowledged, though
            // the original is restored from a file copy made before it wrote `x` (the clone used to set
            // the head back over the original's bundle, and `x` was lost).
            original = try Self.restore(stale, over: original.directory, group)
            #expect(try original.keychain.password(service: "x", account: "ann") == nil)
        }
        try Self.syncAndCheckXY([original, clone, b], remote: remote, fixture: fixture, group: group)
    }

    @Test(
        "Two copies' pushes of the same bundle name both pass every look at the head and both write a head: the copy whose bundle was replaced finds out and sends its changes again (red team round 20, R20-2)"
    )
    func copiesPushingUnseen() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        let original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        try original.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        try clone.keychain.setPassword("y", service: "y", account: "ann", scope: .syncable)
        // The clone's push starts before the original's bundle is up (so its look at its own folder
        // finds nothing of the original's) and finishes once the original passed its last look at
        // the head, its upload replacing the original's bundle; the original's head goes up last.
        // Its look at its bundle after that finds the clone's: it becomes a new device and sends its
        // change again before it returns.
        var clonePush: PausedPush?
        let raced = try original.push(
            to: remote,
            progress: nil,
            beforeFinish: { clonePush = PausedPush(clone, to: remote, pausingAt: .beforeFinish) },
            beforeHead: {},
            beforeHeadWrite: { () throws(CofferError) in _ = try clonePush?.finish() }
        )
        #expect(raced.notices.contains { $0.contains("its upload replaced this vault's") }, "\(raced.notices)")
        #expect(original.deviceID != clone.deviceID)
        try Self.syncAndCheckXY([original, clone, b], remote: remote, fixture: fixture, group: group)
    }

    @Test(
        "Two copies push bundles of different names that both pass every look at the head, one head over the other, in both orders: every device gets both copies' changes, the copy that keeps the device's id included",
        arguments: [false, true]
    )
    func copiesPushingUnseenDifferentNames(cloneHeadLast: Bool) throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        let original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        try original.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        try clone.keychain.setPassword("y", service: "y", account: "ann", scope: .syncable)
        try clone.keychain.setPassword("z", service: "z", account: "ann", scope: .syncable)
        // Both pushes pass their last look at the head; the inner one's head goes up first, the
        // outer one's over it. Their bundles have different names, so no salt tells them apart:
        // only the heads' lineages show where the two histories part.
        let (outer, inner) = cloneHeadLast ? (clone, original) : (original, clone)
        _ = try outer.push(
            to: remote,
            progress: nil,
            beforeHead: {},
            beforeHeadWrite: { () throws(CofferError) in _ = try inner.push(to: remote) }
        )
        try Self.syncAndCheckXY([original, clone, b], remote: remote, fixture: fixture, group: group)
        for vault in [original, clone, b] {
            #expect(try vault.keychain.password(service: "z", account: "ann") == "z")
        }
        #expect(original.deviceID != clone.deviceID)
    }

    @Test(
        "A copy whose head its twin's overwrote is lost before it syncs again: its pushed writes still reach every device, the twin that keeps the device's id included, and devices joining later",
        arguments: [false, true],
        [false, true]
    )
    func overwrittenCopyLost(twinPushesOn: Bool, besideTheHead: Bool) throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        let original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        // The clone's head goes up first and the original's over it. When the clone holds more
        // changes, its bundle lies past the head that stands. When it holds fewer, uploads first and
        // writes its head only after the original's last look, its bundle lies beside the head's
        // own, from the same cursor.
        let (more, fewer) = besideTheHead ? (original, clone) : (clone, original)
        for name in (0..<12).map({ "q\($0)" }) + ["u"] {
            try more.keychain.setPassword(name, service: name, account: "ann", scope: .syncable)
        }
        try fewer.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        if besideTheHead {
            var clonePush: PausedPush?
            _ = try original.push(
                to: remote,
                progress: nil,
                beforeFinish: { clonePush = PausedPush(clone, to: remote, pausingAt: .beforeHeadWrite) },
                beforeHead: {},
                beforeHeadWrite: { () throws(CofferError) in _ = try clonePush?.finish() }
            )
        } else {
            _ = try original.push(
                to: remote,
                progress: nil,
                beforeHead: {},
                beforeHeadWrite: { () throws(CofferError) in _ = try clone.push(to: remote) }
            )
        }
        let layout = RemoteLayout(location: remote.location)
        let client = try fixture.client()
        let headKey = layout.headKey(original.deviceID)
        let head = try original.trustedHead(
            try #require(try client.get(headKey)),
            key: headKey,
            device: original.deviceID
        )
        let listed = layout.devices(in: try client.list(prefix: layout.listingPrefix))[original.deviceID]?.bundles ?? []
        #expect(listed.filter { $0.isPast(head) }.count == (besideTheHead ? 0 : 1), "\(listed), head \(head.latest)")
        #expect(listed.filter { $0.isOtherCopys(beside: head) }.count == 1, "\(listed), head \(head.latest)")
        // The clone is lost (its disk died, or it was restored from an older backup) before it
        // syncs again.
        let lost = clone.directory
        clone.close()
        try FileManager.default.removeItem(at: lost)
        if twinPushesOn {
            try original.keychain.setPassword("w", service: "w", account: "ann", scope: .syncable)
            try original.push(to: remote)
        }
        for _ in 0..<2 {
            for vault in [original, b] {
                try vault.push(to: remote)
                try vault.pull(from: remote)
            }
        }
        try b.compact(remote: remote)
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        try original.pull(from: remote)
        for vault in [original, b, newcomer] {
            for name in ["q0", "u", "x"] {
                #expect(try vault.keychain.password(service: name, account: "ann") == name, "\(name)")
            }
        }
        #expect(try original.syncableState() == b.syncableState())
        #expect(try newcomer.syncableState() == b.syncableState())
    }

    @Test(
        "A store rolled back to before a push, then a clone pushes the same bundle name: the original re-enrols and sends its change again, and everyone gets the clone's (red team round 20, R20-2)"
    )
    func rolledBackThenClonePushes() throws {
        let (fixture, remote, group, a, b) = try Self.pushedPair()
        try b.push(to: remote)
        let original = try Self.copy(a, to: group.directory.path("clone"), group)
        let clone = try Self.restore(group.directory.path("clone"), over: nil, group)
        let client = try fixture.client()
        let prefix = RemoteLayout(location: remote.location).listingPrefix
        var saved: [String: [UInt8]] = [:]
        for object in try client.list(prefix: prefix) { saved[object.key] = try client.get(object.key) }
        try original.keychain.setPassword("x", service: "x", account: "ann", scope: .syncable)
        try original.push(to: remote)
        try b.pull(from: remote)
        // The bucket goes back to the saved copy; the clone then pushes the name the original had.
        for object in try client.list(prefix: prefix) where saved[object.key] == nil { try client.delete(object.key) }
        for (key, bytes) in saved { try client.put(key, body: bytes) }
        try clone.keychain.setPassword("y", service: "y", account: "ann", scope: .syncable)
        try clone.push(to: remote)
        try Self.syncAndCheckXY([original, clone, b], remote: remote, fixture: fixture, group: group)
        #expect(original.deviceID != clone.deviceID)
    }

    @Test(
        "A store rolled back together with a device restored from a copy of the same time: the other member notices the device's head went back and sends its later records again, and the restored device's new write reaches everyone, compacted or pushed (red team round 35, F2)",
        arguments: [false, true]
    )
    func rolledBackWithRestoredDevice(compacting: Bool) throws {
        let (fixture, remote, group, a, b) = try Self.pairKnowingEachOther()
        let client = try fixture.client()
        let prefix = RemoteLayout(location: remote.location).listingPrefix
        var saved: [String: [UInt8]] = [:]
        for object in try client.list(prefix: prefix) { saved[object.key] = try client.get(object.key) }
        let backup = group.directory.path("b-backup")
        let live = try Self.copy(b, to: backup, group)
        for name in ["b2", "b3"] {
            try live.keychain.setPassword(name, service: name, account: "bob", scope: .syncable)
            try live.push(to: remote)
        }
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "b3", account: "bob") == "b3")
        let directory = live.directory
        live.close()
        // The bucket and the device both go back to the saved moment.
        for object in try client.list(prefix: prefix) where saved[object.key] == nil { try client.delete(object.key) }
        for (key, bytes) in saved { try client.put(key, body: bytes) }
        let restored = try Self.restore(backup, over: directory, group)
        try restored.keychain.setPassword("b4", service: "b4", account: "bob", scope: .syncable)
        if compacting { _ = try restored.compact(remote: remote) } else { try restored.push(to: remote) }
        _ = try a.push(to: remote)
        let pulled = try a.pull(from: remote)
        #expect(pulled.notices.contains { $0.contains("went back") }, "\(pulled.notices)")
        for _ in 0..<2 {
            for vault in [restored, a] {
                _ = try vault.pull(from: remote)
                _ = try vault.push(to: remote)
            }
        }
        _ = try a.compact(remote: remote)
        for vault in [restored, a] { _ = try vault.pull(from: remote) }
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        for (vault, name) in [(a, "a"), (restored, "the restored device"), (newcomer, "a newcomer")] {
            for write in ["b2", "b3", "b4"] {
                #expect(try vault.keychain.password(service: write, account: "bob") == write, "\(name) lacks \(write)")
            }
        }
        #expect(try newcomer.syncableState() == a.syncableState())
        #expect(try restored.syncableState() == a.syncableState())
    }

    @Test(
        "Records of a device whose passphrase join a closing voided since travel on: the member that pulled them pushes them again, and the others get them from the store (red team round 37)"
    )
    func voidedJoinsRecordsTravelOn() throws {
        let (fixture, remote, group, a, b) = try Self.pairKnowingEachOther()
        // c joins by passphrase from the store and writes; a pulls it; b, which has not heard of c,
        // switches to approval-only joins at the same time: c's join no longer counts.
        let (c, _) = try fixture.join(group, name: "c")
        try c.keychain.setPassword("from c", service: "from-c", account: "cat", scope: .syncable)
        try c.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.keychain.password(service: "from-c", account: "cat") == "from c")
        try b.setJoinPolicy(.approval)
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try !a.members().contains { $0.deviceID == c.deviceID && $0.isActive }, "c's join still counts")
        try a.push(to: remote)
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "from-c", account: "cat") == "from c", "b never got c's record")
        #expect(try b.syncableState() == a.syncableState())
    }

    @Test("A store rolled back to an older copy is noticed from the signed heads and filled again by the next pushes")
    func rolledBackStore() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        try b.push(to: remote)
        let client = try fixture.client()
        let prefix = RemoteLayout(location: remote.location).listingPrefix
        var saved: [String: [UInt8]] = [:]
        for object in try client.list(prefix: prefix) { saved[object.key] = try client.get(object.key) }

        try a.keychain.setPassword("lost", service: "lost", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try b.pull(from: remote)
        try b.keychain.setPassword("lost too", service: "lost-too", account: "bob", scope: .syncable)
        try b.push(to: remote)
        // The bucket goes back to the saved copy.
        for object in try client.list(prefix: prefix) where saved[object.key] == nil { try client.delete(object.key) }
        for (key, bytes) in saved { try client.put(key, body: bytes) }

        // B alone fills the store again, with what it had pulled from A.
        let summary = try b.push(to: remote)
        #expect(summary.object != nil)
        #expect(summary.notices.contains { $0.contains("was rolled back") })
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.keychain.password(service: "lost", account: "ann") == "lost")
        #expect(try newcomer.keychain.password(service: "lost-too", account: "bob") == "lost too")
        #expect(try a.push(to: remote).notices.contains { $0.contains("was rolled back") })
        try a.pull(from: remote)
        try newcomer.pull(from: remote)
        #expect(try newcomer.syncableState() == a.syncableState())
    }

    @Test(
        "Restored and cloned copies used at random with pushes, pulls, compactions and rekeys, and a store whose heads are put back and checkpoints damaged, lose no acknowledged write",
        arguments: ModelSeeds.seeds("COFFER_COPIES_MODEL_SEEDS", defaults: [17, 2026, 99])
    )
    func copiesModel(seed: UInt64) throws {
        let replay: Comment = "seed \(seed): replay with COFFER_COPIES_MODEL_SEEDS=\(seed),\(seed)"
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (first, second) = try fixture.firstPushedAndJoined(group)
        let originals: Set<UUID> = [first.deviceID, second.deviceID]
        // Each running vault, with the writes it holds (fresh names only, so holding is having).
        var vaults: [(vault: Vault, writes: Set<Int>)] = [(first, []), (second, [])]
        var backups: [(url: URL, writes: Set<Int>, device: UUID)] = []
        // Devices with a running copy made of them (a clone, or a restored backup): a rekey of one
        // revokes the copies that re-enrolled in its name, which this model does not follow.
        var copied: Set<UUID> = []
        var stored: Set<Int> = []
        var generator = SplitMix64(seed: seed)
        // Two devices that rekey before hearing of each other seal their new epochs to each other's
        // old keys: each refuses the other's objects until the other pulls and seals its epoch to
        // the new keys (the error says so). Such refusals are allowed once a rekey happened, and the
        // exchange counts for nothing.
        var rekeyed = false
        var forged = false
        // Every head a device wrote, for someone who may write to the store to put back later.
        let client = try fixture.client()
        let layout = RemoteLayout(location: remote.location)
        var writtenHeads: [(key: String, bytes: [UInt8])] = []
        var damaged = false
        func exchanged(_ body: () throws(CofferError) -> Void) throws -> Bool {
            switch Result(catching: body) {
            case .success: return true
            case .failure(let error) where rekeyed && error.code == .keyUnavailable: return false
            case .failure(let error): throw error
            }
        }
        // Two copies of one device push at the same moment, or the vault at `index` alone: the other
        // pushes between this one's bundle and its last look at the head, or after that look, so
        // that both pass it and the other's head goes up first, this one's over it. A push with
        // nothing to send uploads no bundle: the other does not push then, and its writes are not in
        // the store (this model counted them as if they were, and seed 34 "lost" one).
        func racePush(_ index: Int) throws {
            let vault = vaults[index].vault
            let twin = vaults.indices.first { $0 != index && vaults[$0].vault.deviceID == vault.deviceID }
            let other = twin.map { vaults[$0].vault }
            let unseen = generator.next() % 2 == 0
            var twinPushed = false
            let race: () throws(CofferError) -> Void = { () throws(CofferError) in
                if let other { try other.push(to: remote) }
                twinPushed = true
            }
            let nothing: () throws(CofferError) -> Void = {}
            let pushed = try exchanged { () throws(CofferError) in
                _ = try vault.push(
                    to: remote,
                    progress: nil,
                    beforeHead: unseen ? nothing : race,
                    beforeHeadWrite: unseen ? race : nothing
                )
            }
            if pushed {
                stored.formUnion(vaults[index].writes)
                if let twin, twinPushed { stored.formUnion(vaults[twin].writes) }
            }
        }
        for step in 0..<60 {
            let index = Int(generator.next() % UInt64(vaults.count))
            let vault = vaults[index].vault
            let headKey = layout.headKey(vault.deviceID)
            if let head = try client.get(headKey), writtenHeads.last?.bytes != head {
                writtenHeads.append((headKey, head))
            }
            switch generator.next() % 18 {
            case 0...3:
                try vault.keychain.setPassword("\(step)", service: "w\(step)", account: "ann", scope: .syncable)
                vaults[index].writes.insert(step)
            case 4, 5:
                if try exchanged({ () throws(CofferError) in try vault.push(to: remote) }) {
                    stored.formUnion(vaults[index].writes)
                }
            case 6, 7:
                // A pull that says it is incomplete (a checkpoint damaged, a head put back) holds
                // what it applied, which this model does not follow: only a complete one counts.
                var complete = false
                if try exchanged({ () throws(CofferError) in complete = try !vault.pull(from: remote).isIncomplete }),
                    complete
                {
                    vaults[index].writes.formUnion(stored)
                }
            case 8:
                var complete = false
                if try exchanged({ () throws(CofferError) in
                    complete = try !vault.pull(from: remote).isIncomplete
                    try vault.compact(remote: remote)
                }) {
                    if complete { vaults[index].writes.formUnion(stored) }
                    stored.formUnion(vaults[index].writes)
                }
            case 9:
                let url = group.directory.path("backup-\(step)")
                vaults[index].vault = try Self.copy(vault, to: url, group)
                backups.append((url, vaults[index].writes, vault.deviceID))
            case 10 where !backups.isEmpty:
                // Restored from an older file copy (of any device): what it held since is gone.
                let backup = backups[Int(generator.next() % UInt64(backups.count))]
                // Once a checkpoint was damaged, what only this vault held may have been in the store
                // only there: it goes with this vault unless another holds it.
                if damaged {
                    let others = vaults.indices.filter { $0 != index }.reduce(into: backup.writes) {
                        $0.formUnion(vaults[$1].writes)
                    }
                    stored.subtract(vaults[index].writes.subtracting(others))
                }
                let target = vault.directory
                vault.close()
                let copy = group.directory.path("copy-\(step)")
                try FileManager.default.copyItem(at: backup.url, to: copy)
                copied.insert(backup.device)
                vaults[index] = (try Self.restore(copy, over: target, group), backup.writes)
            case 11 where vaults.count < 4:
                copied.insert(vault.deviceID)
                let url = group.directory.path("clone-\(step)")
                vaults[index].vault = try Self.copy(vault, to: url, group)
                vaults.append((try Self.restore(url, over: nil, group), vaults[index].writes))
                // Half the time both copies write (a different number of records each, often) and
                // race their first pushes.
                if generator.next() % 2 == 0 {
                    for copy in [index, vaults.count - 1] {
                        for write in 0..<Int(generator.next() % 3) {
                            let name = step * 10 + write + (copy == index ? 1_000 : 2_000)
                            try vaults[copy].vault.keychain.setPassword(
                                "\(name)",
                                service: "w\(name)",
                                account: "ann",
                                scope: .syncable
                            )
                            vaults[copy].writes.insert(name)
                        }
                    }
                    try racePush(index)
                }
            case 12:
                try racePush(index)
            case 13 where !copied.contains(vault.deviceID) && !forged:
                // A rekey voids the device's checkpoints (cuts signed with its old keys): what they
                // held comes back from the next pushes (red team round 17, F1). Its older backups
                // would be stale copies that can no longer sync, and are dropped.
                // It rekeys once it knows every running device: a passphrase join or a copy's
                // re-enrolment it did not know of would be void (docs/FORMAT.md, rule 5).
                // Only one of the two devices the model starts with rekeys, and only while no running
                // vault is a device it admitted (a re-enrolled copy): a rekey revokes every identity
                // whose keys were in the vault's files, copies included, which this model does not
                // follow.
                let members = try vault.members()
                let known = Set(members.filter(\.isActive).map(\.deviceID))
                let admittedHere = Set(members.filter { $0.addedBy == vault.deviceID }.map(\.deviceID))
                guard originals.contains(vault.deviceID), vaults.allSatisfy({ known.contains($0.vault.deviceID) }),
                    !vaults.contains(where: { admittedHere.contains($0.vault.deviceID) }),
                    !vaults.contains(where: { $0.vault !== vault && $0.vault.deviceID == vault.deviceID })
                else { break }
                try vault.rekey(passphrase: SyncGroupFixture.passphrase)
                rekeyed = true
                backups.removeAll { $0.device == vault.deviceID }
            case 14 where !rekeyed:
                // A thief holding a copy of this vault's files plants a checkpoint: the vault's
                // export, under a cut signed with its keys that claims every device's changes, far
                // past what the export holds (red team round 23). Kept apart from rekeys: a rekey
                // voids the honest checkpoints its device wrote, and while the forged cut counts it
                // hides their loss from the repair (docs/FORMAT.md, "A checkpoint that stops
                // counting"). The vault pushes first: records a forged checkpoint alone holds reach
                // only the devices that import it (docs/FORMAT.md, "Compaction"), and this model
                // checks that every device converges.
                guard try exchanged({ () throws(CofferError) in try vault.push(to: remote) }) else { break }
                stored.formUnion(vaults[index].writes)
                let scratch = group.directory.path("forged-\(step).bundle")
                try vault.export(to: scratch)
                let claim: UInt64 = 1 << 40
                try LeakedKeyCheckpointTests.plant(
                    RemoteCut(
                        id: String(repeating: generator.next() % 2 == 0 ? "0" : "f", count: 28)
                            + String(format: "%04x", step),
                        device: vault.deviceID,
                        through: Dictionary(vaults.map { ($0.vault.deviceID, claim) }) { first, _ in first }
                    ),
                    bundle: scratch,
                    signedWithKeysOf: vault,
                    remote: remote,
                    fixture.client()
                )
                forged = true
            case 15 where !writtenHeads.isEmpty:
                // Someone who may write to the store puts back an older head a device signed: the
                // device's next push notices, and pulls go by its own cuts meanwhile (red team round
                // 44, F3).
                let older = writtenHeads[Int(generator.next() % UInt64(writtenHeads.count))]
                try client.put(older.key, body: older.bytes)
            case 16:
                // ... or damages a checkpoint's bundle past its header: the next push of a member
                // that holds its changes writes them again. What only the store held (a device
                // restored from a copy older than its push since) may be lost with it, and no longer
                // counts as acknowledged.
                let checkpoints = try client.list(prefix: layout.listingPrefix).map(\.key)
                    .filter { $0.contains("/checkpoints/") && $0.hasSuffix(".bundle") }
                guard !checkpoints.isEmpty else { break }
                let checkpoint = checkpoints[Int(generator.next() % UInt64(checkpoints.count))]
                try Self.damage(checkpoint, cutShort: generator.next() % 2 == 0, client)
                stored.formIntersection(vaults.reduce(into: Set<Int>()) { $0.formUnion($1.writes) })
                damaged = true
            case 17:
                // A vault that re-enrolled revokes its former id, as its notices ask, once no running
                // vault runs as it or was admitted by it (but itself, which re-enrolled in its name),
                // right after a complete pull: it holds what
                // that id pushed, and its pushes log it again. The checkpoints naming the id then
                // go with later compactions (outside test of the G5 fix).
                let members = try vault.members()
                let running = Set(vaults.map(\.vault.deviceID))
                let former = try vault.environment.read { txn in
                    try GroupContext.formerIdentities(in: txn, schema: vault.schema)
                }.filter { id in
                    !running.contains(id)
                        && members.contains { $0.deviceID == id && $0.isActive }
                        && !members.contains {
                            $0.addedBy == id && $0.deviceID != vault.deviceID && running.contains($0.deviceID)
                        }
                }
                guard let id = former.first else { break }
                var complete = false
                guard
                    try exchanged({ () throws(CofferError) in complete = try !vault.pull(from: remote).isIncomplete }),
                    complete
                else { break }
                vaults[index].writes.formUnion(stored)
                // The pull may have brought another copy's revocation of it.
                if try vault.members().contains(where: { $0.deviceID == id && $0.isActive }) {
                    try vault.revoke(device: id)
                }
                backups.removeAll { $0.device == id }
                // A revocation starts a key epoch, as a rekey does: a copy that has not heard of it
                // is refused what is sealed in it until a pull brings it.
                rekeyed = true
            default:
                break
            }
        }
        // Every write a running vault holds or the store was sent is acknowledged.
        let acknowledged = vaults.reduce(stored) { $0.union($1.writes) }
        try Self.converge(vaults.map(\.vault), remote: remote, replay: replay)
        // A rekey closes passphrase joins: the newcomer then asks to be approved.
        let newcomer: Vault
        if try vaults[0].vault.joinPolicy() == .passphrase {
            newcomer = try fixture.join(group, name: "newcomer").0
        } else {
            newcomer = try fixture.approvedJoin(group, name: "newcomer", by: vaults[0].vault)
            try newcomer.pull(from: remote)
        }
        let state = try newcomer.syncableState()
        for write in acknowledged {
            #expect(try newcomer.keychain.password(service: "w\(write)", account: "ann") == "\(write)", replay)
        }
        for entry in vaults { #expect(try entry.vault.syncableState() == state, replay) }
    }

    /// Rounds of pushes and pulls by every vault until one goes through with no refusal (a device
    /// admitted on a branch of the membership log that lost a fork, or a clone that re-enrolled as a
    /// device of its own, is refused until a member that knows it vouches for it, a round or two
    /// later), at most six; then one more push and pull each.
    static func converge(_ vaults: [Vault], remote: S3Remote, replay: Comment) throws {
        var refusals: [String] = []
        for _ in 0..<6 {
            refusals = []
            for vault in vaults {
                do { try vault.push(to: remote) } catch { refusals.append("push: \(error)") }
            }
            for vault in vaults {
                do { try vault.pull(from: remote) } catch { refusals.append("pull: \(error)") }
            }
            if refusals.isEmpty { break }
        }
        #expect(refusals.isEmpty, "\(replay): \(refusals)")
        for vault in vaults { try vault.push(to: remote) }
        for vault in vaults { try vault.pull(from: remote) }
    }

    /// Two rounds of push and pull by every vault of `vaults`; then each holds `x` and `y`, and a
    /// newcomer joined from the store holds what the last of them does.
    static func syncAndCheckXY(
        _ vaults: [Vault],
        remote: S3Remote,
        fixture: RemoteFixture,
        group: SyncGroupFixture
    ) throws {
        for _ in 0..<2 {
            for vault in vaults {
                try vault.push(to: remote)
                try vault.pull(from: remote)
            }
        }
        for vault in vaults {
            #expect(try vault.keychain.password(service: "x", account: "ann") == "x")
            #expect(try vault.keychain.password(service: "y", account: "ann") == "y")
        }
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == vaults.last?.syncableState())
    }

    /// Puts `head` at `key`, sealed and signed with the keys `vault`'s files hold (its current epoch's
    /// group key and its device key), as a thief holding a copy of those files can.
    static func plant(_ head: RemoteHead, signedWithKeysOf vault: Vault, at key: String, _ client: S3Client) throws {
        let keys = try vault.keyRing()
        let epoch = keys.currentEpoch(.sync)
        let body = try head.encoded(
            epoch: epoch,
            root: try keys.root(.sync, epoch: epoch),
            signer: try vault.deviceKeys().signing
        )
        try client.put(key, body: body)
    }

    /// ``compactedAfterWrites(_:_:_:)``, then the checkpoint's bundle is overwritten with junk, its
    /// cut intact. Returns the checkpoint's key.
    static func overwriteCheckpoint(
        _ fixture: RemoteFixture,
        _ remote: S3Remote,
        _ a: Vault,
        _ b: Vault
    ) throws
        -> String
    {
        let checkpoint = try compactedAfterWrites(remote, a, b)
        try fixture.client().put(checkpoint, body: SecureRandom.bytes(count: 700))
        return checkpoint
    }

    /// B writes `b1` and pushes, A pulls, writes `a2` and pushes, then B pulls and compacts: the
    /// checkpoint's bundle key.
    static func compactedAfterWrites(_ remote: S3Remote, _ a: Vault, _ b: Vault) throws -> String {
        try b.keychain.setPassword("b1", service: "b1", account: "bob", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        try a.keychain.setPassword("a2", service: "a2", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try b.pull(from: remote)
        return try b.compact(remote: remote).checkpoint
    }

    /// ``pushedPair()``, then C joins and pushes, and B pulls.
    static func pushedTrio() throws -> (RemoteFixture, S3Remote, SyncGroupFixture, Vault, Vault, Vault) {
        let (fixture, remote, group, a, b) = try pushedPair()
        let (c, _) = try fixture.join(group, name: "c")
        try c.push(to: remote)
        try b.pull(from: remote)
        return (fixture, remote, group, a, b, c)
    }

    /// Damages the object `key` past its first bytes: its last third cut off, or one bit of it
    /// flipped near its end.
    static func damage(_ key: String, cutShort: Bool, _ client: S3Client) throws {
        var bytes = try #require(try client.get(key))
        if cutShort {
            bytes.removeLast(bytes.count / 3)
        } else {
            bytes[bytes.count - 100] ^= 0x01
        }
        try client.put(key, body: bytes)
    }

    /// A store, a group, its first vault pushed there and a second joined from there.
    static func pushedPair() throws -> (RemoteFixture, S3Remote, SyncGroupFixture, Vault, Vault) {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        return (fixture, remote, group, a, b)
    }

    /// ``pushedPair()``, after `b` pushed and `a` pulled: each knows the other.
    static func pairKnowingEachOther() throws -> (RemoteFixture, S3Remote, SyncGroupFixture, Vault, Vault) {
        let (fixture, remote, group, a, b) = try pushedPair()
        try b.push(to: remote)
        try a.pull(from: remote)
        return (fixture, remote, group, a, b)
    }

    /// Copies `vault`'s directory to `url` as a file copy would (closed meanwhile), and returns the
    /// vault reopened.
    /// A pair's first device, copied (last night's backup), then writes `writing` as syncable items,
    /// pushes and compacts; its older head is put back; its disk dies and the copy comes back. Returns
    /// the restored vault, the other device, the id it had and its checkpoint's key.
    static func restoredAfterItsCompaction(
        writing names: [String]
    ) throws -> (RemoteFixture, S3Remote, SyncGroupFixture, Vault, Vault, UUID, String) {
        let (fixture, remote, group, first, b) = try pairKnowingEachOther()
        let client = try fixture.client()
        let headKey = RemoteLayout(location: remote.location).headKey(first.deviceID)
        let older = try #require(try client.get(headKey))
        let backup = group.directory.path("last-night")
        let a = try copy(first, to: backup, group)
        for name in names { try a.keychain.setPassword(name, service: name, account: "ann", scope: .syncable) }
        try a.push(to: remote)
        let checkpoint = try a.compact(remote: remote).checkpoint
        try client.put(headKey, body: older)
        let (device, target) = (a.deviceID, a.directory)
        a.close()
        return (fixture, remote, group, try restore(backup, over: target, group), b, device, checkpoint)
    }

    static func copy(_ vault: Vault, to url: URL, _ group: SyncGroupFixture) throws -> Vault {
        let directory = vault.directory
        vault.close()
        try FileManager.default.copyItem(at: directory, to: url)
        return try open(directory, group)
    }

    /// The vault copied at `url`, put in place of the directory `target` (or opened where it is).
    static func restore(_ url: URL, over target: URL?, _ group: SyncGroupFixture) throws -> Vault {
        guard let target else { return try open(url, group) }
        try FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: url, to: target)
        return try open(target, group)
    }

    private static func open(_ directory: URL, _ group: SyncGroupFixture) throws -> Vault {
        let vault = try Vault.open(at: directory, configuration: group.fixture.configuration)
        try vault.unlock(passphrase: SyncGroupFixture.passphrase)
        return vault
    }
}
