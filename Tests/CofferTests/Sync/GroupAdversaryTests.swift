import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The membership log against a revoked or copied device that knows the passphrase, keeps old
/// bundles and races the members (issue 37; docs/FORMAT.md, "What a log means").
@Suite("Sync group adversaries: rejoining from old bundles, racing revocations")
struct GroupAdversaryTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    func password(_ service: String, _ value: String = "secret") -> KeychainItem {
        SyncGroupFixture.password(service, value)
    }

    func exchange(_ from: Vault, _ to: Vault, _ name: String) throws -> ImportSummary {
        try group.exchange(from, to, name)
    }

    /// Imports, returning the refusal instead of throwing it.
    func offer(_ from: Vault, _ to: Vault, _ name: String) throws -> CofferError? {
        let bundle = group.bundle(name)
        try from.export(to: bundle)
        do {
            _ = try to.import(from: bundle)
            return nil
        } catch {
            return error
        }
    }

    /// How many entries `vault`'s membership log holds.
    func entryCount(_ vault: Vault) throws -> Int {
        try vault.changeGroup("reading") { context, _, _ in context.log.entries.count }
    }

    /// How many revocations of `target` by `author` `vault`'s membership log holds.
    func revocations(of target: Vault, in vault: Vault, by author: Vault) throws -> Int {
        try vault.changeGroup("reading") { context, _, _ in
            context.log.entries.filter { $0.author == author.deviceID && $0.change.revokedDevice == target.deviceID }
                .count
        }
    }

    func active(_ vault: Vault, in viewer: Vault) throws -> Bool {
        try viewer.members().first { $0.deviceID == vault.deviceID }?.isActive == true
    }

    /// `a` founded the group with one item and `b` joined by passphrase, known to `a`; `old` is the
    /// bundle `b` joined from.
    func foundedPair() throws -> (a: Vault, b: Vault, old: URL) {
        let a = try group.createFirst()
        try a.keychain.add(password("before"))
        let old = group.bundle("old")
        try a.export(to: old)
        let (b, _) = try group.join("b", from: old)
        _ = try exchange(b, a, "b-to-a")
        return (a, b, old)
    }

    /// `a` founded the group with one item, `b` and `c` joined by passphrase, and everyone knows
    /// everyone; `old` is a bundle of `a`'s from before any change.
    func foundedTrio() throws -> (a: Vault, b: Vault, c: Vault, old: URL) {
        let (a, b, old) = try foundedPair()
        let start = group.bundle("start")
        try a.export(to: start)
        let (c, _) = try group.join("c", from: start)
        _ = try exchange(c, a, "c-to-a")
        _ = try exchange(a, b, "a-to-b")
        _ = try exchange(a, c, "a-to-c")
        return (a, b, c, old)
    }

    @Test(
        "A revoked device's owner who knows the passphrase makes a new vault from an old bundle: it is never admitted",
        arguments: ["a bundle of a member", "a bundle of the revoked vault itself"]
    )
    func rejoinFromOldBundle(source: String) throws {
        let (a, b, c, old) = try foundedTrio()
        // b's owner keeps a bundle b made before the revocation too.
        let fromB = group.bundle("from-b-before")
        try b.export(to: fromB)
        try a.revoke(device: b.deviceID)
        try a.keychain.add(password("after", "written after the revocation"))
        let (rejoined, _) = try group.join("b-again", from: source == "a bundle of a member" ? old : fromB)
        try rejoined.keychain.add(password("planted", "from the rejoined vault"))
        // c, which has not heard of the revocation, takes it in (it cannot know better).
        _ = try exchange(rejoined, c, "rejoined-to-c")

        // a refuses it, and its next bundle seals nothing new to it.
        let refused = try offer(rejoined, a, "rejoined-to-a")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(try !active(rejoined, in: a))
        #expect(try a.keychain.password(service: "planted", account: "ann") == nil)
        let told = try offer(a, rejoined, "a-to-rejoined")
        #expect(told?.code == .notTrusted, "\(told?.message ?? "accepted")")
        #expect(try rejoined.keychain.password(service: "after", account: "ann") == nil)

        // Once c hears from a, the rejoined vault is out there too.
        _ = try exchange(a, c, "a-to-c-after")
        #expect(try !active(rejoined, in: c))
        try c.keychain.add(password("from-c-later"))
        let cut = try offer(c, rejoined, "c-to-rejoined")
        #expect(cut?.code == .notTrusted, "\(cut?.message ?? "accepted")")
        #expect(try rejoined.keychain.password(service: "from-c-later", account: "ann") == nil)
        _ = try exchange(c, a, "c-to-a-after")
        #expect(try !active(rejoined, in: a))
        #expect(try a.keyRing().currentEpoch(.sync) == c.keyRing().currentEpoch(.sync))
        // No key of an epoch started after the revocation reached the new vault.
        let held = Set(try rejoined.keyRing().epochs(.sync))
        #expect(!held.contains(try a.keyRing().currentEpoch(.sync)))
    }

    @Test(
        "Entries without effect in a refused bundle's log are not kept: a vault whose join does not count, or a revoked device's stale copy, cannot fill the log to its cap"
    )
    func refusedLogsKeepOnlyWhatCounts() throws {
        let (a, b, c, old) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        let (voided, _) = try group.join("voided", from: old)
        let logSize = { (vault: Vault) throws -> Int in
            try GroupLog(group: vault.syncGroupID, decoding: try vault.readMetaIfPresent(GroupContext.Meta.log) ?? [])
                .entries.count
        }
        let before = try logSize(a)
        // A modified client signs a long chain of entries that would each count in its own view.
        var stale: GroupContext?
        for vault in [voided, b] {
            try vault.changeGroup("growing the log") { context, _, _ in
                if vault === b { stale = context }
                for _ in 0..<150 { try context.append(.policy(.passphrase)) }
            }
        }
        for (vault, name) in [(voided, "voided-to-a"), (b, "stale-to-a")] {
            let refused = try offer(vault, a, name)
            #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
            #expect(refused?.message.contains("nothing was changed") == true, "\(refused?.message ?? "")")
            #expect(
                refused?.message.contains(vault === voided ? "whose join does not count" : "revoked") == true,
                "\(refused?.message ?? "")"
            )
        }
        #expect(try logSize(a) == before, "a keeps none of the entries without effect")
        // What has effect still reaches a: the stale copy's revocation of its revoker (both lose),
        // made on its stale heads (one made on top of its chain would bring the chain, and is not
        // kept: red team round 11, F1).
        try b.changeGroup("revoking the revoker") { context, _, _ in
            var revoking = try #require(stale)
            try revoking.append(.revoked(device: a.deviceID, clock: 1))
            context.adopt(try context.log.union(revoking.log))
        }
        _ = try offer(b, a, "stale-revokes-a")
        #expect(try logSize(a) > before)
        #expect(try a.members().first { $0.deviceID == a.deviceID }?.isActive == false)
        _ = c
    }

    @Test(
        "A join proven with a forged key, and its revocation of a member, count for nothing: in the log's meaning and in what devices lists (red team round 4, N1)"
    )
    func forgedProofJoinListsNoOne() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        try a.setJoinPolicy(.passphrase, passphrase: SyncGroupFixture.passphrase)
        _ = try exchange(a, c, "a-to-c")
        // A modified client joins on c's log proving a key of its own under the current epoch's id,
        // then revokes a; c is offered that log in a bundle it refuses.
        var intruder = try c.changeGroup("reading") { context, _, _ in context }
        intruder = try GroupContext(
            log: intruder.log,
            roots: intruder.roots.merging([try intruder.state().currentEpoch: SecureBytes.random(count: 32)]) { $1 },
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try intruder.appendJoined(name: "x")
        try intruder.append(.revoked(device: a.deviceID, clock: 0))
        let forged = intruder.log
        try c.changeGroup("merging a refused bundle's log") { context, _, _ in try context.mergeEffective(forged) }
        let members = try c.members()
        #expect(!members.contains { $0.deviceID == intruder.device })
        #expect(members.first { $0.deviceID == a.deviceID }?.isActive == true)
        #expect(try c.joinPolicy() == .passphrase)
        _ = try exchange(c, a, "c-to-a")
        #expect(try a.members().first { $0.deviceID == a.deviceID }?.isActive == true)
    }

    @Test(
        "Outsiders with made-up device ids and unproven joins add nothing to a member's log, in a rotated group or at epoch 0 (red team round 5, R1, m1)",
        arguments: [true, false]
    )
    func outsidersAddNothing(rotated: Bool) throws {
        let (a, b, c, _) = try foundedTrio()
        if rotated { try a.rotateGroupKey() }
        let logSize = { (vault: Vault) throws -> Int in
            try GroupLog(group: vault.syncGroupID, decoding: try vault.readMetaIfPresent(GroupContext.Meta.log) ?? [])
                .entries.count
        }
        let before = try logSize(a)
        let epochBefore = try a.keyRing().currentEpoch(.sync)
        // Whoever saw a bundle's clear log makes device ids at will: each joins with a proof made
        // with a random key and closes the door.
        let seen = try a.changeGroup("reading") { context, _, _ in context }
        let offered = try seen.withOutsiders(12, closing: true)
        try a.changeGroup("merging a refused bundle's log") { context, _, _ in try context.mergeEffective(offered) }
        #expect(try logSize(a) == before, "a keeps none of the outsiders' entries")
        #expect(try a.keyRing().currentEpoch(.sync) == epochBefore, "nothing made a start a new epoch")
        #expect(try a.joinPolicy() == .passphrase)
        // A member that takes the whole log (a bundle of an active member) reads it, and means the same.
        let joinsOnly = try seen.withOutsiders(3, closing: false)
        try c.changeGroup("merging a member's log") { context, _, _ in try context.merge(joinsOnly) }
        #expect(try c.members().count == 3)
        // An epoch started now is sealed to the members, not to the outsiders, and is a valid entry.
        try c.rotateGroupKey()
        _ = try exchange(c, a, "c-to-a")
        #expect(try a.members().filter(\.isActive).count == 3)
        _ = b
    }

    @Test("A passphrase join from a bundle made before approval-only was set is void once that is known")
    func joinAcrossPolicyChange() throws {
        let (a, _, _, old) = try foundedTrio()
        try a.setJoinPolicy(.approval)
        let (late, _) = try group.join("late", from: old)
        let refused = try offer(late, a, "late-to-a")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(try !active(late, in: a))
        let told = try offer(a, late, "a-to-late")
        #expect(told?.message.contains("join no longer counts") == true, "\(told?.message ?? "accepted")")
    }

    @Test("Two devices revoking each other at once are both revoked, in every exchange order; the rest carry on")
    func mutualRevocation() throws {
        for order in 0..<3 {
            let trio = try GroupAdversaryTests().foundedTrio()
            let (a, b, c) = (trio.a, trio.b, trio.c)
            try a.revoke(device: b.deviceID)
            try b.revoke(device: a.deviceID)
            switch order {
            case 0:
                _ = try? exchange(a, c, "o0-a-c")
                _ = try? exchange(b, c, "o0-b-c")
            case 1:
                _ = try? exchange(b, c, "o1-b-c")
                _ = try? exchange(a, c, "o1-a-c")
            default:
                _ = try? exchange(a, b, "o2-a-b")
                _ = try? exchange(b, c, "o2-b-c")
            }
            for vault in [a, b] { _ = try? exchange(vault, c, "final-\(order)-\(vault.deviceID)") }
            let members = try c.members()
            #expect(members.first { $0.deviceID == a.deviceID }?.isActive == false, "order \(order)")
            #expect(members.first { $0.deviceID == b.deviceID }?.isActive == false, "order \(order)")
            #expect(members.first { $0.deviceID == c.deviceID }?.isActive == true, "order \(order)")
            // c started an epoch neither holds, and carries on alone.
            let epoch = try c.keyRing().currentEpoch(.sync)
            for revoked in [a, b] {
                #expect(!(try revoked.keyRing().epochs(.sync)).contains(epoch), "order \(order)")
            }
            try c.keychain.add(password("c-alone-\(order)"))
            #expect(try offer(a, c, "late-a-\(order)")?.code == .notTrusted)
        }
    }

    @Test("A thief's copy that revokes the revoker does not stay a member and gets no later key")
    func thiefRevokesRevoker() throws {
        let (a, b, c, _) = try foundedTrio()
        // The thief's copy of b, not yet told, revokes a while a revokes b.
        try a.revoke(device: b.deviceID)
        try b.revoke(device: a.deviceID)
        // c hears from the thief first, then from a.
        _ = try exchange(b, c, "thief-to-c")
        _ = try? exchange(a, c, "a-to-c")
        #expect(try !active(b, in: c))
        try c.keychain.add(password("secret-after"))
        let refused = try offer(c, b, "c-to-thief")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(try b.keychain.password(service: "secret-after", account: "ann") == nil)
        #expect(!(try b.keyRing().epochs(.sync)).contains(try c.keyRing().currentEpoch(.sync)))
    }

    @Test(
        "A thief's stale copy revokes a device that rekeyed and then revoked it: both are out, in either order of arrival, and the thief gets no later key (red team round 15, N1)",
        arguments: [false, true]
    )
    func thiefRevokesARekeyedRevoker(thiefFirst: Bool) throws {
        let (a, b, c, _) = try foundedTrio()
        // a rekeys (it fears a leak), tells c, then revokes b; the thief's copy of b, which never
        // heard of the rekey, revokes a.
        try a.rekey(passphrase: SyncGroupFixture.passphrase)
        _ = try exchange(a, c, "rekey-to-c")
        try a.revoke(device: b.deviceID)
        try b.revoke(device: a.deviceID)
        if thiefFirst {
            _ = try? exchange(b, c, "thief-to-c")
            _ = try? exchange(a, c, "a-to-c")
        } else {
            _ = try? exchange(a, c, "a-to-c")
            _ = try? exchange(b, c, "thief-to-c")
        }
        #expect(try !active(b, in: c), "the thief stays a member at c")
        #expect(try !active(a, in: c), "two devices revoking each other are both revoked")
        try c.keychain.add(password("secret-after"))
        let refused = try offer(c, b, "c-to-thief")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(try b.keychain.password(service: "secret-after", account: "ann") == nil)
        #expect(!(try b.keyRing().epochs(.sync)).contains(try c.keyRing().currentEpoch(.sync)))
    }

    @Test(
        "A thief's copy forges an epoch under the id of its revoker's new epoch: the member that hears it first still learns the revocation and reads on, and seals nothing the thief reads"
    )
    func forgedEpochID() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        try a.keychain.add(password("after", "written after the revocation"))
        let real = try a.keyRing().currentEpoch(.sync)
        // A modified client on the thief's copy of b, not yet told: it reads `real` in a bundle
        // header and starts an epoch under that id with a key of its own, sealed to every member.
        let forged = try b.forgeEpoch(real)
        _ = try exchange(b, c, "thief-to-c")
        try c.keychain.add(password("between", "written by c before it heard of the revocation"))
        _ = try exchange(a, c, "a-to-c")
        #expect(try !active(b, in: c), "c learns of the revocation")
        #expect(try c.keychain.password(service: "after", account: "ann") == "written after the revocation")
        try c.keychain.add(password("later", "written by c afterwards"))
        _ = try exchange(c, a, "c-to-a")
        #expect(try a.keychain.password(service: "between", account: "ann") != nil)
        #expect(try a.keychain.password(service: "later", account: "ann") == "written by c afterwards")
        // Nothing c seals from now on opens with a key the thief holds, and c never sealed with the
        // forged one.
        let current = try c.keyRing().currentEpoch(.sync)
        let sealing = try c.keyRing().root(.sync, epoch: current)
        let thiefRoot = try? b.keyRing().root(.sync, epoch: current)
        #expect(thiefRoot.map { !$0.constantTimeEquals(sealing) } ?? true)
        #expect(!sealing.constantTimeEquals(forged))
        #expect(try c.keyRing().root(.sync, epoch: real).constantTimeEquals(try a.keyRing().root(.sync, epoch: real)))
        let refused = try offer(c, b, "c-to-thief")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(try b.keychain.password(service: "later", account: "ann") == nil)
    }

    @Test(
        "A member holding a forged key under a real epoch's id, and no longer the key its box was sealed to, is told the key is missing, not that the bundle is damaged, and reads on after one round trip (model seed 982578)"
    )
    func forgedKeyHeldAfterRekey() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        try a.keychain.add(password("after", "written after the revocation"))
        let real = try a.keyRing().currentEpoch(.sync)
        // c hears the thief's forgery first, then rekeys: the real epoch's box, sealed to c's old
        // key, no longer opens for it.
        try b.forgeEpoch(real)
        _ = try exchange(b, c, "thief-to-c")
        try c.rekey(passphrase: SyncGroupFixture.passphrase)
        let refused = try offer(a, c, "a-to-c")
        #expect(refused?.code == .keyUnavailable, "\(refused?.message ?? "accepted")")
        #expect(refused?.message.contains("does not open it") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains("damaged") == false)
        // c's log reaches a, which seals a new epoch to c's new key, carrying the real key.
        _ = try exchange(c, a, "c-to-a")
        _ = try exchange(a, c, "a-to-c-again")
        #expect(try c.keychain.password(service: "after", account: "ann") == "written after the revocation")
        #expect(try c.keyRing().root(.sync, epoch: real).constantTimeEquals(try a.keyRing().root(.sync, epoch: real)))
    }

    @Test("After a leak of a member's files and passphrase, rekey and rotate shut the leaked copy out")
    func leakedCopyAfterRekey() throws {
        let (a, b, c, _) = try foundedTrio()
        // b's files and passphrase leak.
        // b's owner rekeys with a new passphrase; a rotates, as docs/SYNC.md advises.
        let (owner, leak) = try group.leakThenRekey(b, name: "b")
        #expect(try owner.joinPolicy() == .approval, "a rekey closes passphrase joins, as a revocation does")
        _ = try exchange(owner, a, "rekeyed-to-a")
        try a.rotateGroupKey()
        try a.keychain.add(password("after-leak", "written after the leak"))
        _ = try exchange(a, owner, "a-to-owner")
        _ = try exchange(a, c, "a-to-c")
        #expect(try owner.keychain.password(service: "after-leak", account: "ann") == "written after the leak")

        // The leaked copy, opened with the old passphrase, reads nothing new and plants nothing.
        try leak.keychain.add(password("planted", "by the thief"))
        for (member, name) in [(a, "leak-to-a"), (c, "leak-to-c"), (owner, "leak-to-owner")] {
            let refused = try offer(leak, member, name)
            #expect(refused?.code == .notTrusted, "\(name): \(refused?.message ?? "accepted")")
            #expect(try member.keychain.password(service: "planted", account: "ann") == nil, "\(name)")
        }
        let told = try offer(a, leak, "a-to-leak")
        #expect(told != nil, "the leaked copy took a's bundle")
        #expect(try leak.keychain.password(service: "after-leak", account: "ann") == nil)
        let current = try a.keyRing().currentEpoch(.sync)
        #expect(!(try leak.keyRing().epochs(.sync)).contains(current))
        // Even a leaked copy that revokes a member at the same time achieves nothing: its entries
        // are concurrent with the rekey.
        _ = try? leak.revoke(device: c.deviceID)
        _ = try? offer(leak, a, "leak-revokes")
        _ = try exchange(a, c, "a-to-c-last")
        #expect(try active(c, in: a))
        #expect(try active(owner, in: a))
    }

    @Test(
        "A second founder is merged only while nothing could be voided: before logs existed, both count; after a key change, refused"
    )
    func secondFounder() throws {
        let groupID = UUID()
        let root = SecureBytes.random(count: 32)
        func founder(_ name: String) throws -> GroupContext {
            var context = try GroupContext(
                log: GroupLog(group: groupID),
                roots: [.original: root],
                device: UUID(),
                deviceKeys: DeviceKeys.generate()
            )
            try context.appendJoined(name: name)
            return context
        }
        // Two devices of a group made before membership logs existed each found a log.
        var first = try founder("first")
        var second = try founder("second")
        try first.merge(second.log)
        try second.merge(first.log)
        #expect(first.log == second.log)
        #expect(Set(try first.state().activeMembers.map(\.device)) == [first.device, second.device])
        // After a rotation, a usurper's founding entry, with a policy of its own that would void
        // every join concurrent with it, is refused, and the log is as it was.
        try first.startEpoch()
        var usurper = try founder("usurper")
        try usurper.append(.policy(.approval))
        let before = first.log
        let refusal = #expect(throws: CofferError.self) { try first.merge(usurper.log) }
        #expect(refusal?.code == .notTrusted && refusal?.message.contains("second founding entry") == true)
        #expect(first.log == before)
        // Nor in a group that never changed: the usurper's own policy is a change.
        var fresh = try founder("fresh")
        #expect(throws: CofferError.self) { try fresh.merge(usurper.log) }
        #expect(try fresh.state().activeMembers.map(\.device) == [fresh.device])
    }

    @Test(
        "A leaked copy's late rekey does not undo the revocations its owner made before or after rekeying (red team round 8, N1)",
        arguments: [false, true]
    )
    func leakedRekeyKeepsOwnersRevocations(revokeFirst: Bool) throws {
        let (a, b, c, _) = try foundedTrio()
        // The owner revokes a stolen device from b, before or after rekeying b (the copy leaked
        // before either).
        let (owner, leak) = try group.leakThenRekey(b, name: "b") { owner in
            if revokeFirst { try owner.revoke(device: c.deviceID) }
        }
        if !revokeFirst { try owner.revoke(device: c.deviceID) }
        _ = try exchange(owner, a, "owner-to-a")
        #expect(try !active(c, in: a))
        // Long after, the leaked copy rekeys on its stale log and offers it.
        try leak.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's own")
        _ = try offer(leak, a, "leak-to-a")
        #expect(try !active(c, in: a), "the revoked device stays revoked")
        try a.keychain.add(password("after"))
        _ = try offer(a, c, "a-to-c")
        #expect(try c.keychain.password(service: "after", account: "ann") == nil)
        #expect(!(try c.keyRing().epochs(.sync)).contains(try a.keyRing().currentEpoch(.sync)))
    }

    @Test(
        "A leaked copy's rekey, made after its owner's reached the members, has no effect: the owner's device and the devices it approved stay (red team round 8, N2)"
    )
    func leakedCopysLateRekeyLoses() throws {
        let (a, b, c, _) = try foundedTrio()
        let (owner, leak) = try group.leakThenRekey(b, name: "b")
        _ = try exchange(owner, a, "owner-to-a")
        _ = try exchange(owner, c, "owner-to-c")
        // The owner approves a new device after its rekey.
        let (d, request) = try Vault.requestJoin(
            at: group.directory.path("d"),
            passphrase: SyncGroupFixture.passphrase,
            name: "d",
            group: try owner.groupReference(),
            configuration: group.fixture.configuration
        )
        try owner.approve(request)
        #expect(try exchange(owner, d, "owner-to-d").joinedGroup)
        _ = try exchange(owner, a, "approval-to-a")
        _ = try exchange(a, c, "a-to-c")
        _ = try exchange(a, owner, "a-to-owner")
        _ = try exchange(owner, d, "owner-to-d-again")
        // Long after (every member has acknowledged the owner's rekey), the leaked copy rekeys on its
        // stale log and offers it to everyone.
        try leak.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's own")
        for (member, name) in [(a, "a"), (c, "c"), (owner, "owner"), (d, "d")] {
            let refused = try offer(leak, member, "leak-to-\(name)")
            #expect(refused != nil, "\(name) accepted the leaked copy's bundle")
            #expect(try active(owner, in: member), "the owner's device stays a member at \(name)")
            #expect(try active(d, in: member), "the device the owner approved stays a member at \(name)")
        }
        // The owner's bundles, whose log now holds the copy's losing rekey, still count.
        try owner.keychain.add(password("from-owner"))
        _ = try exchange(owner, a, "owner-to-a-after")
        #expect(try a.keychain.password(service: "from-owner", account: "ann") == "secret")
        try a.keychain.add(password("after"))
        _ = try exchange(a, d, "a-to-d")
        _ = try exchange(a, owner, "a-to-owner-after")
        #expect(try d.keychain.password(service: "after", account: "ann") == "secret")
        #expect(try owner.keychain.password(service: "after", account: "ann") == "secret")
        #expect(try offer(a, leak, "a-to-leak") != nil)
        #expect(try leak.keychain.password(service: "after", account: "ann") == nil)
    }

    @Test(
        "A leaked copy whose late rekey lost signs many entries with its new key: a member keeps only the rekey, and its log stays far from full (red team round 9, F1)"
    )
    func losingCopysFillerIsNotKept() throws {
        let (a, b, c, _) = try foundedTrio()
        let (owner, leak) = try group.leakThenRekey(b, name: "b")
        _ = try exchange(owner, a, "owner-to-a")
        _ = try exchange(owner, c, "owner-to-c")
        let before = try entryCount(a)
        // The copy rekeys on its stale log, then (a modified client) signs 200 entries with its new key.
        try leak.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's own")
        try leak.changeGroup("filling the log") { context, _, _ in
            for _ in 0..<200 { try context.append(.policy(.approval)) }
        }
        let refused = try offer(leak, a, "filler-to-a")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        let after = try entryCount(a)
        #expect(after - before <= 1, "a kept \(after - before) entries of the copy's")
        #expect(try active(owner, in: a))
        #expect(try !a.syncGroupIsFrozen())
    }

    @Test(
        "A copy restored from before its device's rekey is told it is the older copy, not that its own rekey lost (red team round 9, m1)"
    )
    func restoredPreRekeyCopyIsToldTheTruth() throws {
        let (a, b, _, _) = try foundedTrio()
        let (owner, restored) = try group.leakThenRekey(b, name: "b")
        _ = try exchange(owner, a, "owner-to-a")
        let refused = try offer(a, restored, "a-to-restored")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(refused?.message.contains("this copy is older") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains("this copy's rekey") == false)
    }

    @Test(
        "A revoked device's copy signs many closings side by side on its stale heads: a member keeps only a few, and its log stays far from full"
    )
    func siblingClosingsAreNotKept() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        _ = try exchange(a, c, "revocation-to-c")
        let before = try entryCount(a)
        // A modified client on b's stale copy: 60 revocations of c, each on the same heads, so that
        // none precedes another (each is a "first" closing).
        var stale: GroupContext?
        try b.changeGroup("signing closings side by side") { context, _, _ in
            stale = context
            context.adopt(
                try (context).sideBySide(0..<60) { .revoked(device: c.deviceID, clock: UInt64($0 + 1)) }
            )
        }
        _ = try offer(b, a, "siblings-to-a")
        let after = try entryCount(a)
        // Besides what b wrote before its revocation (its acknowledgement of c's join), only a few.
        let kept = try revocations(of: c, in: a, by: b)
        #expect(kept <= GroupContext.keptVoidedClosingsPerDevice, "a kept \(kept) of the closings")
        #expect(after - before <= kept + 1, "a kept \(after - before) entries")
        #expect(try active(c, in: a))
        #expect(try !a.syncGroupIsFrozen())
        // A second bundle of new siblings on the same stale heads adds nothing more.
        try b.changeGroup("signing more closings") { context, _, _ in
            context.adopt(
                try (try #require(stale)).sideBySide(60..<100) { .revoked(device: c.deviceID, clock: UInt64($0 + 1)) }
            )
        }
        _ = try offer(b, a, "more-siblings-to-a")
        let last = try entryCount(a)
        #expect(last == after, "a kept \(last - after) more entries")

    }

    @Test(
        "A revoked device's copy revokes its revoker many times side by side: those have effect (both lose), and a member keeps a few"
    )
    func siblingRevocationsOfTheRevoker() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        _ = try exchange(a, c, "revocation-to-c")
        let before = try entryCount(c)
        try b.changeGroup("revoking the revoker, many times") { context, _, _ in
            context.adopt(
                try (context).sideBySide(0..<60) { .revoked(device: a.deviceID, clock: UInt64($0 + 1)) }
            )
        }
        _ = try offer(b, c, "revocations-of-a-to-c")
        let after = try entryCount(c)
        #expect(after - before <= 2 * GroupContext.keptVoidedClosingsPerDevice, "c kept \(after - before)")
        #expect(try !active(a, in: c) && !active(b, in: c), "both lose")
        #expect(try !c.syncGroupIsFrozen())
    }

    @Test(
        "Made-up devices joining from an old log with the passphrase each revoke the member that closed joins: a member keeps a few, and its log stays far from full (red team round 10, F1)"
    )
    func madeUpDevicesRevokingTheCloser() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        _ = try exchange(a, c, "revocation-to-c")
        let before = try entryCount(c)
        // On b's stale copy (it holds the group key a passphrase join block gives): 100 made-up
        // devices, each joining on the stale heads and revoking a, the closer (both lose).
        try b.changeGroup("making up devices") { context, _, _ in
            var union = context.log
            for index in 0..<100 {
                var outsider = try GroupContext(
                    log: context.log,
                    roots: context.roots,
                    device: UUID(),
                    deviceKeys: DeviceKeys.generate()
                )
                try outsider.appendJoined(name: "o\(index)")
                try outsider.append(.revoked(device: a.deviceID, clock: 1))
                union = try union.union(outsider.log)
            }
            context.adopt(union)
        }
        _ = try offer(b, c, "made-up-to-c")
        let after = try entryCount(c)
        // A few revocations, each with its join, and c's own new epoch (a is out): not 200.
        #expect(after - before <= 2 * GroupContext.keptVoidedClosingsPerDevice + 2, "c kept \(after - before) entries")
        #expect(try !c.syncGroupIsFrozen())
    }

    @Test(
        "After a member closes joins, made-up devices join one after another on the old heads and the last revokes the closer: none gets in, and joins stay closed (red team round 12, F1)"
    )
    func chainedJoinsBehindARevokedCloser() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.setJoinPolicy(.approval)
        _ = try exchange(a, c, "approval-to-c")
        // b has not heard of the policy: its log is the old one an outsider has in an old bundle,
        // with the group key the passphrase opens from that bundle's join block.
        var madeUp: [UUID] = []
        try b.changeGroup("chaining made-up joins") { context, _, _ in
            var chain = context.log
            for index in 0..<4 {
                let device = UUID()
                madeUp.append(device)
                var outsider = try GroupContext(
                    log: chain,
                    roots: context.roots,
                    device: device,
                    deviceKeys: DeviceKeys.generate()
                )
                try outsider.appendJoined(name: "pad\(index)")
                // The last one revokes the closer, on top of the chain.
                if index == 3 { try outsider.append(.revoked(device: a.deviceID, clock: 1)) }
                chain = outsider.log
            }
            context.adopt(try context.log.union(chain))
        }
        _ = try offer(b, c, "chain-to-c")
        let members = try c.members()
        for device in madeUp {
            #expect(members.first { $0.deviceID == device }?.isActive != true, "a made-up device is active in c")
        }
        #expect(try c.joinPolicy() == .approval, "the closer's policy no longer counts")
        // Nothing c seals from now on opens for them: the epoch it seals with is sealed to members only.
        #expect(try !c.syncGroupIsFrozen())
    }

    @Test(
        "Made-up devices joining on old heads revoke the closer and one another: a member keeps a few entries, bundle after bundle, and refuses each at once (red team rounds 12 and 13, F2 and F3)",
        arguments: [false, true]
    )
    func madeUpMeshDoesNotGrowTheLog(pairwise: Bool) throws {
        let (a, b, c, oldBundle) = try foundedTrio()
        try a.setJoinPolicy(.approval)
        _ = try exchange(a, c, "approval-to-c")
        let before = try entryCount(c)
        // The outsider joins from an old bundle with the passphrase (its join does not count, so c
        // refuses its bundles), and builds every mesh on the log of a bundle made just before a
        // closed joins (b's: b has not heard of it), knowing everything a knew then.
        let (outsider, _) = try group.join("outsider", from: oldBundle)
        let old = try b.changeGroup("reading") { context, _, _ in context.log }
        for round in 0..<3 {
            try outsider.changeGroup("a mesh of made-up devices") { context, _, _ in
                var outsiders: [GroupContext] = []
                for _ in 0..<12 {
                    var outsider = try GroupContext(
                        log: old,
                        roots: context.roots,
                        device: UUID(),
                        deviceKeys: DeviceKeys.generate()
                    )
                    try outsider.appendJoined(name: "mesh")
                    outsiders.append(outsider)
                }
                var joins = old
                for outsider in outsiders { joins = try joins.union(outsider.log) }
                var union = joins
                for var outsider in outsiders {
                    if pairwise {
                        // Each revocation knows only its author's join and its target's (the shape of
                        // round 13: every made-up device's admission then lies on a cycle).
                        let own = outsider.log
                        try outsider.append(.revoked(device: a.deviceID, clock: 1))
                        union = try union.union(outsider.log)
                        for other in outsiders where other.device != outsider.device {
                            var revoking = outsider
                            revoking.adopt(try own.union(other.log))
                            try revoking.append(.revoked(device: other.device, clock: 2))
                            union = try union.union(revoking.log)
                        }
                    } else {
                        // Each on the joins alone, side by side with the others' revocations.
                        outsider.adopt(joins)
                        try outsider.append(.revoked(device: a.deviceID, clock: 1))
                        for other in outsiders.prefix(3) where other.device != outsider.device {
                            try outsider.append(.revoked(device: other.device, clock: 2))
                        }
                        union = try union.union(outsider.log)
                    }
                }
                context.adopt(try context.log.union(union))
            }
            _ = try offer(outsider, c, "mesh-\(round)-to-c")
        }
        let after = try entryCount(c)
        #expect(after - before <= 2 * GroupContext.keptVoidedClosingsPerDevice + 2, "c kept \(after - before) entries")
        #expect(try !c.syncGroupIsFrozen())
        // They may take the closer out with them (both lose, as one made-up device may), never
        // anyone else.
        #expect(try active(b, in: c) && active(c, in: c))
    }

    @Test(
        "A member sealed a new key to a device whose join the rules now void (an older Coffer admitted it): the log stays valid, and members start a key without it (red team round 13, m2)"
    )
    func epochSealedToAVoidedJoinStaysReadable() throws {
        let (a, _, c, oldBundle) = try foundedTrio()
        try a.setJoinPolicy(.approval)
        _ = try exchange(a, c, "approval-to-c")
        // An outsider joins from an old bundle: its join is voided by a's policy.
        let (outsider, _) = try group.join("outsider", from: oldBundle)
        let outsiderLog = try outsider.changeGroup("reading") { context, _, _ in context.log }
        // c merges its log and, following older rules that admitted it, seals a new key to it too.
        let sealed = try c.changeGroup("an epoch sealed to a voided join") { context, _, _ -> KeyEpoch in
            context.adopt(try context.log.union(outsiderLog))
            let state = try context.state()
            #expect(state.member(outsider.deviceID) == nil, "the outsider's join counts")
            let root = SecureBytes.random(count: 32)
            let epoch = try #require(GroupKeys.committedEpoch(for: root, group: context.log.group))
            var boxes: [UUID: [UInt8]] = [:]
            for member in state.activeMembers {
                boxes[member.device] = try GroupKeys.box(root, epoch: epoch, to: member.keys, group: context.log.group)
            }
            let outsiderKeys = try outsider.changeGroup("reading") { context, _, _ in context.publicKeys }
            boxes[outsider.deviceID] = try GroupKeys.box(root, epoch: epoch, to: outsiderKeys, group: context.log.group)
            let history = try GroupKeys.sealHistory([:], under: root, epoch: epoch, group: context.log.group)
            try context.append(.epochStarted(epoch: epoch, boxes: boxes, history: history))
            context.learnKeys(from: context.log)
            return epoch
        }
        // a takes the log in: valid, the outsider no member, and a new key without it.
        _ = try exchange(c, a, "sealed-to-a")
        #expect(try a.members().contains { $0.deviceID == outsider.deviceID } == false)
        let current = try a.changeGroup("reading") { context, _, _ in try context.state().currentEpoch }
        #expect(current != sealed, "a kept the key sealed to the outsider")
        #expect(try a.changeGroup("reading") { context, _, _ in try context.state().needsNewEpoch } == false)
    }

    @Test(
        "A stolen member carries made-up devices that joined on old heads and revoke the closer: the closer's policy, rotation and rekey stand, and its revocation of the thief reaches every member (red team round 14, F5)",
        arguments: [1, 2, 10]
    )
    func stolenMemberCarriesMadeUpRevokers(count: Int) throws {
        let (a, b, c, oldBundle) = try foundedTrio()
        let old = try b.changeGroup("reading") { context, _, _ in context.log }
        try a.setJoinPolicy(.approval)
        try a.rotateGroupKey()
        try a.rekey(passphrase: SyncGroupFixture.passphrase)
        _ = try exchange(a, b, "closed-to-b")
        _ = try exchange(a, c, "closed-to-c")
        let rekeyed = try a.members().first { $0.deviceID == a.deviceID }?.identity
        // The thief holds b's files: made-up devices join on the old heads, each revoking a, and b's
        // copy signs and sends them.
        let (outsider, _) = try group.join("outsider", from: oldBundle)
        let roots = try outsider.changeGroup("reading") { context, _, _ in context.roots }
        try b.changeGroup("carrying made-up revokers") { context, _, _ in
            var union = context.log
            for _ in 0..<count {
                var madeUp = try GroupContext(log: old, roots: roots, device: UUID(), deviceKeys: DeviceKeys.generate())
                try madeUp.appendJoined(name: "made-up")
                try madeUp.append(.revoked(device: a.deviceID, clock: 1))
                union = try union.union(madeUp.log)
            }
            context.adopt(union)
        }
        _ = try offer(b, c, "carried-to-c")
        #expect(try c.joinPolicy() == .approval, "the closer's policy was dropped")
        #expect(try c.members().first { $0.deviceID == a.deviceID }?.identity == rekeyed, "a's rekey lost")
        // The theft is noticed: a revokes b, and the revocation reaches c.
        #expect(try offer(c, a, "carried-to-a") == nil)
        try a.revoke(device: b.deviceID)
        #expect(try offer(a, c, "revocation-to-c") == nil)
        #expect(try !active(b, in: c), "the thief stays a member at c")
        try b.keychain.add(password("planted", "by the thief"))
        #expect(try offer(b, c, "planted-to-c") != nil)
        #expect(try c.keychain.password(service: "planted", account: "ann") == nil)
    }

    @Test(
        "A stolen member carries a mesh of made-up devices that joined on old heads and revoke the closer and one another, and signs on top of it: a member imports it, stays a member, keeps the closer's policy, and shuts the thief out (red team round 14, F6)"
    )
    func stolenMemberCarriesAMesh() throws {
        let count = ProcessInfo.processInfo.environment["COFFER_MESH_SIZE"].flatMap { Int($0) } ?? 16
        let (a, b, c, oldBundle) = try foundedTrio()
        let old = try b.changeGroup("reading") { context, _, _ in context.log }
        try a.setJoinPolicy(.approval)
        _ = try exchange(a, b, "closed-to-b")
        _ = try exchange(a, c, "closed-to-c")
        let (outsider, _) = try group.join("outsider", from: oldBundle)
        let roots = try outsider.changeGroup("reading") { context, _, _ in context.roots }
        var made: [GroupContext] = []
        for _ in 0..<count {
            var device = try GroupContext(log: old, roots: roots, device: UUID(), deviceKeys: DeviceKeys.generate())
            try device.appendJoined(name: "mesh")
            made.append(device)
        }
        var logs: [GroupLog] = []
        for var device in made {
            // Each revocation knows only its author's join and its target's.
            let own = device.log
            try device.append(.revoked(device: a.deviceID, clock: 1))
            logs.append(device.log)
            for other in made where other.device != device.device {
                var revoking = device
                revoking.adopt(try own.union(other.log))
                try revoking.append(.revoked(device: other.device, clock: 2))
                logs.append(revoking.log)
            }
        }
        // Joined pairwise, so no log is sorted again once per revocation.
        while logs.count > 1 {
            logs = try stride(from: 0, to: logs.count, by: 2).map { index in
                index + 1 < logs.count ? try logs[index].union(logs[index + 1]) : logs[index]
            }
        }
        let mesh = logs[0]
        // The thief's copy of b adopts the mesh and signs on top of it (a rotation folds its heads).
        try b.changeGroup("carrying a mesh") { context, _, _ in context.adopt(try context.log.union(mesh)) }
        try b.rotateGroupKey()
        #expect(try offer(b, c, "mesh-to-c") == nil, "a member's bundle is accepted whole")
        #expect(try active(c, in: c), "c was shut out")
        #expect(try c.joinPolicy() == .approval, "the closer's policy was dropped")
        #expect(try !c.syncGroupIsFrozen())
        for device in made { #expect(try !c.members().contains { $0.deviceID == device.device && $0.isActive }) }
        // The theft is noticed: c revokes b, and b's later records are refused.
        try c.revoke(device: b.deviceID)
        try b.keychain.add(password("planted", "by the thief"))
        #expect(try offer(b, c, "planted-to-c") != nil)
        #expect(try c.keychain.password(service: "planted", account: "ann") == nil)
        try c.keychain.add(password("after"))
        _ = try offer(c, b, "c-to-thief")
        #expect(try b.keychain.password(service: "after", account: "ann") == nil)
    }

    @Test(
        "Two made-up devices joining on old heads revoke each other and every member: their joins are in doubt, so their revocations do not count (red team round 13, F4)"
    )
    func madeUpPairRevokesNoMember() throws {
        let (a, b, c, oldBundle) = try foundedTrio()
        try a.setJoinPolicy(.approval)
        _ = try exchange(a, c, "approval-to-c")
        let (outsider, _) = try group.join("outsider", from: oldBundle)
        let old = try b.changeGroup("reading") { context, _, _ in context.log }
        try outsider.changeGroup("a pair of made-up devices") { context, _, _ in
            let pair = try (0..<2).map { index -> GroupContext in
                var device = try GroupContext(
                    log: old,
                    roots: context.roots,
                    device: UUID(),
                    deviceKeys: DeviceKeys.generate()
                )
                try device.appendJoined(name: "pair\(index)")
                return device
            }
            let joins = try pair[0].log.union(pair[1].log)
            var union = joins
            for (index, var device) in pair.enumerated() {
                device.adopt(joins)
                try device.append(.revoked(device: pair[1 - index].device, clock: 1))
                for member in [a, b, c] { try device.append(.revoked(device: member.deviceID, clock: 2)) }
                union = try union.union(device.log)
            }
            context.adopt(try context.log.union(union))
        }
        _ = try offer(outsider, c, "pair-to-c")
        #expect(try active(b, in: c) && active(c, in: c), "the pair revoked members who never closed anything")
    }

    @Test(
        "A revoked device's copy puts one closing on a chain of entries without effect: a member keeps neither the chain nor the closing (red team round 11, F1)"
    )
    func closingOnAChainIsNotKept() throws {
        let (a, b, c, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        let before = try entryCount(a)
        // On b's stale copy: 100 made-up devices, each joining after the last, then b's revocation
        // of c on top of them all.
        try b.changeGroup("chaining made-up joins") { context, _, _ in
            var chain = context.log
            for index in 0..<100 {
                var outsider = try GroupContext(
                    log: chain,
                    roots: context.roots,
                    device: UUID(),
                    deviceKeys: DeviceKeys.generate()
                )
                try outsider.appendJoined(name: "o\(index)")
                chain = outsider.log
            }
            context.adopt(try context.log.union(chain))
            try context.append(.revoked(device: c.deviceID, clock: 1))
        }
        _ = try offer(b, a, "chain-to-a")
        let after = try entryCount(a)
        #expect(after - before <= GroupContext.keptVoidedClosingsPerDevice + 2, "a kept \(after - before) entries")
        #expect(try active(c, in: a))
        #expect(try !a.syncGroupIsFrozen())
    }

    @Test(
        "Two rekeys of one device that each reached a member before the other are a race: the device is revoked, and the thief's copy with it"
    )
    func rekeyRaceRevokes() throws {
        let (a, b, c, _) = try foundedTrio()
        let (owner, leak) = try group.leakThenRekey(b, name: "b")
        try leak.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's own")
        // a hears the owner's rekey first, c the copy's; each acknowledges what it heard.
        _ = try exchange(owner, a, "owner-to-a")
        _ = try exchange(leak, c, "leak-to-c")
        _ = try? exchange(a, c, "a-to-c")
        _ = try? exchange(c, a, "c-to-a")
        #expect(try !active(owner, in: a) && !active(owner, in: c), "the device is revoked everywhere")
        try a.keychain.add(password("after"))
        _ = try offer(a, leak, "a-to-leak")
        #expect(try leak.keychain.password(service: "after", account: "ann") == nil)
    }

    @Test(
        "A copy whose rekey reached the group first holds the device: the owner's later rekey has no effect, the owner is told, and a member's revocation shuts the copy out"
    )
    func copysEarlierRekeyWins() throws {
        let (a, b, c, _) = try foundedTrio()
        let (owner, leak) = try group.leakThenRekey(b, name: "b") { _ in }
        // The owner's rekey happened locally, but the copy's replacement reached the members first.
        try leak.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's own")
        _ = try exchange(leak, a, "leak-to-a")
        _ = try exchange(a, c, "a-to-c")
        let refused = try offer(owner, a, "owner-to-a")
        #expect(refused?.code == .notTrusted, "\(refused?.message ?? "accepted")")
        #expect(refused?.message.contains("whose replacement of the device's keys has no effect") == true)
        let told = try offer(a, owner, "a-to-owner")
        #expect(told?.code == .notTrusted, "\(told?.message ?? "accepted")")
        #expect(told?.message.contains("another copy of this vault") == true, "\(told?.message ?? "")")
        // A member revokes the device: the copy gets nothing written afterwards.
        try a.revoke(device: b.deviceID)
        try a.keychain.add(password("after"))
        _ = try offer(a, leak, "a-to-leak")
        #expect(try leak.keychain.password(service: "after", account: "ann") == nil)
        _ = try exchange(a, c, "a-to-c-after")
        #expect(try c.keychain.password(service: "after", account: "ann") == "secret")
    }

    @Test("A lone honest device revoked by a thief it revoked founds a new group; the thief cannot follow")
    func loneDeviceRecovers() throws {
        let (a, b, old) = try foundedPair()
        // Mutual revocation: both are out, and no member is left.
        try a.revoke(device: b.deviceID)
        try b.revoke(device: a.deviceID)
        _ = try? exchange(b, a, "thief-to-a")
        #expect(try !active(a, in: a))
        #expect(throws: CofferError.self) { try a.rotateGroupKey() }
        // Written in the epoch a started with its revocation of b: the new group carries its key.
        try a.keychain.add(password("between"))
        #expect(try a.keyRing().currentEpoch(.sync) != .original)

        let fresh = try a.startNewGroup()
        #expect(fresh.id != b.syncGroupID && a.syncGroupID == fresh.id)
        #expect(try a.members().filter(\.isActive).map(\.deviceID) == [a.deviceID])
        #expect(try a.joinPolicy() == .approval)
        try a.keychain.add(password("after"))
        #expect(try a.keychain.password(service: "before", account: "ann") == "secret")

        // A new device joins by approval, naming the new group, and reads everything.
        let ofGroup = group.bundle("of-new-group")
        try a.export(to: ofGroup)
        #expect(try GroupReference(bundle: ofGroup) == fresh)
        let (c, request) = try Vault.requestJoin(
            at: group.directory.path("c"),
            passphrase: SyncGroupFixture.passphrase,
            name: "c",
            group: fresh,
            configuration: group.fixture.configuration
        )
        try a.approve(request)
        #expect(try exchange(a, c, "a-to-c").joinedGroup)
        #expect(try c.keychain.password(service: "before", account: "ann") == "secret")
        #expect(try c.keychain.password(service: "after", account: "ann") == "secret")
        #expect(try c.keychain.password(service: "between", account: "ann") == "secret")

        // The thief: its bundles are another group's, the new group's bundles carry no join block, and
        // a vault it makes from an old bundle is of the old group.
        #expect(throws: CofferError.self) { try exchange(b, a, "thief-to-new") }
        #expect(throws: CofferError.self) { try exchange(a, b, "new-to-thief") }
        #expect(try b.keychain.password(service: "after", account: "ann") == nil)
        #expect(throws: CofferError.self) { _ = try group.join("thief-joins", from: ofGroup) }
        let (fromOld, _) = try group.join("thief-old", from: old)
        #expect(throws: CofferError.self) { try exchange(fromOld, a, "old-to-new") }
        #expect(!(try b.keyRing().epochs(.sync)).contains(try a.keyRing().currentEpoch(.sync)))
    }

    @Test("A revoked device's stale keys sign a chain of additions 40 deep: no device of the chain is admitted")
    func chainOfAdditions() throws {
        let (a, b, c, _) = try foundedTrio()
        let stale = try GroupLog(
            group: b.syncGroupID,
            decoding: try #require(try b.readMetaIfPresent(GroupContext.Meta.log))
        )
        let root = try b.keyRing().root(.sync, epoch: .original)
        try a.revoke(device: b.deviceID)
        // The thief, holding b's keys, signs b adds d1, d1 adds d2, ..., d40 adds t.
        var log = stale
        var author = (id: b.deviceID, keys: try b.deviceKeys())
        var chain: [UUID] = []
        for depth in 0...40 {
            let next = (id: UUID(), keys: DeviceKeys.generate())
            let keys = DevicePublicKeys(
                agreement: try next.keys.agreement.publicKey(),
                signing: try next.keys.signing.publicKey()
            )
            var context = try GroupContext(
                log: log,
                roots: [.original: root],
                device: author.id,
                deviceKeys: author.keys
            )
            try context.append(
                .added(
                    device: next.id,
                    keys: keys,
                    name: "d\(depth)",
                    epoch: .original,
                    box: try GroupKeys.box(root, epoch: .original, to: keys, group: log.group)
                )
            )
            log = context.log
            author = next
            chain.append(next.id)
        }
        // a merges it (a bundle carrying it is refused, but its log is signed and kept).
        let stored = try GroupLog(
            group: a.syncGroupID,
            decoding: try #require(try a.readMetaIfPresent(GroupContext.Meta.log))
        )
        let merged = try stored.union(log)
        let state = try merged.state(roots: { _ in nil })
        for (depth, device) in chain.enumerated() {
            #expect(state.member(device)?.isActive != true, "depth \(depth) is admitted")
        }
        #expect(state.member(b.deviceID)?.isActive == false)
        #expect(Set(state.activeMembers.map(\.device)) == [a.deviceID, c.deviceID])
        #expect(!state.needsNewEpoch, "no epoch is needed for devices that were never admitted")
    }

    @Test("A revoked device's stale copy approves a request made from a bundle that shows the revocation: refused")
    func staleApproval() throws {
        let (a, b, _, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        let afterRevocation = group.bundle("after-revocation")
        try a.export(to: afterRevocation)
        let reference = try GroupReference(bundle: afterRevocation)
        let (w, request) = try Vault.requestJoin(
            at: group.directory.path("w"),
            passphrase: SyncGroupFixture.passphrase,
            name: "w",
            group: reference,
            configuration: group.fixture.configuration
        )
        #expect(!(request.group?.seenHeads.isEmpty ?? true))
        #expect(try JoinRequest(text: request.text).group?.seenHeads == request.group?.seenHeads)
        // The stale copy of b has not heard of its revocation; it approves and exports.
        try b.approve(request)
        let fromStale = group.bundle("from-stale")
        try b.export(to: fromStale)
        let refused = #expect(throws: CofferError.self) { try w.import(from: fromStale) }
        #expect(refused?.message.contains("has not heard") == true, "\(refused?.message ?? "")")
        #expect(try w.pendingJoinRequest() != nil)
        // A member that has heard approves it; it joins.
        try a.approve(request)
        #expect(try exchange(a, w, "a-to-w").joinedGroup)
    }
}

extension GroupContext {
    /// A modified client: one entry of this device for each of `indices`, each on this log's heads
    /// (none follows another), with this log.
    func sideBySide(_ indices: Range<Int>, _ change: (Int) -> GroupEntry.Change) throws -> GroupLog {
        var union = log
        for index in indices {
            var sibling = self
            try sibling.append(change(index))
            union = try union.union(sibling.log)
        }
        return union
    }
}
