import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A copy holding a device's old keys signs a rekey of the device on an old part of the log, its own
/// founding entry, so that everything the device did since is concurrent with it (red team round 26,
/// F1). Before the fix, the rekey voided the founder's approvals, the revoker's admission with them,
/// and so the revocation: the copy came back alone, and the members it evicted sealed to it.
@Suite("Sync group: a copy's rekey signed on old entries undoes no revocation and evicts no one")
struct StaleRekeyTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    func exchange(_ from: Vault, _ to: Vault, _ name: String) throws -> ImportSummary {
        try group.exchange(from, to, name)
    }

    /// Imports, returning the refusal instead of throwing it.
    func offer(_ from: Vault, _ to: Vault, _ name: String) throws -> CofferError? {
        let bundle = group.bundle(name)
        try from.export(to: bundle)
        return Result { () throws(CofferError) in _ = try to.import(from: bundle) }.failure
    }

    func active(_ vault: Vault, in viewer: Vault) throws -> Bool {
        try viewer.members().first { $0.deviceID == vault.deviceID }?.isActive == true
    }

    /// `a` founds the group and admits `b` and `c`, by approval or by passphrase; everyone knows
    /// everyone. Returns them and a copy of `a`'s files and passphrase taken then.
    func foundedTrio(byApproval: Bool) throws -> (a: Vault, b: Vault, c: Vault, copy: Vault) {
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        var admitted: [Vault] = []
        for name in ["b", "c"] {
            if byApproval {
                if admitted.isEmpty { try a.setJoinPolicy(.approval) }
                let (device, request) = try Vault.requestJoin(
                    at: group.directory.path(name),
                    passphrase: SyncGroupFixture.passphrase,
                    name: name,
                    group: try a.groupReference(),
                    configuration: group.fixture.configuration
                )
                try a.approve(request)
                #expect(try exchange(a, device, "approval-\(name)").joinedGroup)
                admitted.append(device)
            } else {
                let bundle = group.bundle("join-\(name)")
                try a.export(to: bundle)
                admitted.append(try group.join(name, from: bundle).0)
            }
            _ = try exchange(admitted.last!, a, "\(name)-to-a")
        }
        let (b, c) = (admitted[0], admitted[1])
        _ = try exchange(a, b, "a-to-b")
        _ = try exchange(a, c, "a-to-c")
        a.close()
        let copyDirectory = group.directory.path("a-copy")
        try FileManager.default.copyItem(at: group.fixture.vaultURL, to: copyDirectory)
        let owner = try group.fixture.open()
        try owner.unlock(passphrase: SyncGroupFixture.passphrase)
        let copy = try Vault.open(at: copyDirectory, configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        return (owner, b, c, copy)
    }

    @Test(
        "A revoked founder's copy signs a rekey on its founding entry: the revocation stands, the members it approved stay, and nothing sealed after reaches the copy"
    )
    func revokedFounderRekeysOnItsFounding() throws {
        let (a, b, c, copy) = try foundedTrio(byApproval: true)
        try b.revoke(device: a.deviceID)
        _ = try exchange(b, c, "revocation-to-c")
        #expect(try !active(a, in: c))
        try forge(copy, expectingRevocationOf: a, toStandAt: b, c)
        try expectNothingLaterReaches(copy, from: c)
        _ = try exchange(c, b, "c-to-b")
        #expect(try b.keychain.password(service: "after", account: "ann") == "secret")
    }

    @Test(
        "The same with members that joined by passphrase: the founder acknowledged their joins when it merged them, so its copy's rekey closes no door on them"
    )
    func staleRekeyOnPassphraseJoins() throws {
        let (a, b, c, copy) = try foundedTrio(byApproval: false)
        try b.revoke(device: a.deviceID)
        _ = try exchange(b, c, "revocation-to-c")
        try forge(copy, expectingRevocationOf: a, toStandAt: b, c)
        try expectNothingLaterReaches(copy, from: c)
    }

    @Test(
        "Members that joined by passphrase while the founder never heard of them: the copy's rekey still closes the door on their joins (open), and the copy reads nothing they write after"
    )
    func staleRekeyOnJoinsTheFounderNeverHeardOf() throws {
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        let fromB = group.bundle("from-b")
        try b.export(to: fromB)
        let (c, _) = try group.join("c", from: fromB)
        _ = try exchange(c, b, "c-to-b")
        a.close()
        let copy = try group.fixture.open()
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        try b.revoke(device: copy.deviceID)
        _ = try exchange(b, c, "revocation-to-c")
        withKnownIssue("a closing signed on old entries by a device that never followed the joins voids them") {
            try forge(copy, expectingRevocationOf: copy, toStandAt: b, c)
        }
        try expectNothingLaterReaches(copy, from: c)
        try b.keychain.add(SyncGroupFixture.password("b-after"))
        #expect(try offer(b, copy, "b-to-copy") != nil)
        #expect(try copy.keychain.password(service: "b-after", account: "ann") == nil)
    }

    @Test(
        "Members that joined by passphrase stay when the founder wrote an entry after their joins: its copy's rekey on the founding entry forks the founder's history and closes no door it knew of"
    )
    func staleRekeyAfterTheFounderFollowedTheJoins() throws {
        let (a, b, c, copy) = try foundedTrio(byApproval: false)
        try a.rotateGroupKey()
        _ = try exchange(a, b, "rotation-to-b")
        _ = try exchange(a, c, "rotation-to-c")
        try b.revoke(device: a.deviceID)
        _ = try exchange(b, c, "revocation-to-c")
        try forge(copy, expectingRevocationOf: a, toStandAt: b, c)
        try expectNothingLaterReaches(copy, from: c)
    }

    /// `a`'s copy signs a rekey on `a`'s admission and offers its bundle to `c` and `b`, which know
    /// `a` was revoked: the revocation must stand and both stay members.
    func forge(_ copy: Vault, expectingRevocationOf a: Vault, toStandAt b: Vault, _ c: Vault) throws {
        try copy.signStaleRekey()
        for (member, name) in [(c, "c"), (b, "b")] {
            _ = try offer(copy, member, "copy-to-\(name)")
            #expect(try !active(a, in: member), "the revocation stands at \(name)")
            #expect(try active(b, in: member) && active(c, in: member), "the members stay at \(name)")
        }
    }

    @Test(
        "A revoked device's copy signs approval-only joins, or a rekey, on its own join, concurrent with its revoker's passphrase join: the revocation stands, and the founder seals nothing the copy reads (red team rounds 27 and 28, F1)",
        arguments: [false, true],
        [true, false]
    )
    func staleClosingOnOwnJoin(rekey: Bool, bHeardOfC: Bool) throws {
        try staleClosingOnOwnJoin(rekey: rekey, bHeardOfC: bHeardOfC, forgeryFirst: false)
    }

    @Test(
        "The same when the forgery reaches the founder before the revocation does: the founder's acknowledgement of the rekey vouches for nothing, since it knew the device's other branch (red team round 28)",
        arguments: [false, true]
    )
    func staleClosingBeforeTheRevocation(rekey: Bool) throws {
        try staleClosingOnOwnJoin(rekey: rekey, bHeardOfC: true, forgeryFirst: true)
    }

    func staleClosingOnOwnJoin(rekey: Bool, bHeardOfC: Bool, forgeryFirst: Bool) throws {
        let (a, c, copy) = try concurrentJoiners(bHeardOfC: bHeardOfC)
        if !forgeryFirst { _ = try exchange(c, a, "revocation-to-a") }
        if rekey { try copy.signStaleRekey() } else { try copy.signStale { _, _ in .policy(.approval) } }
        _ = try offer(copy, a, "copy-to-a")
        if forgeryFirst { _ = try exchange(c, a, "revocation-to-a") }
        #expect(try !active(copy, in: a), "the revocation stands at a")
        if bHeardOfC {
            // The copy's own log shows that its device knew c's join: c stays.
            #expect(try active(c, in: a), "the revoker stays at a")
        }
        try a.keychain.add(SyncGroupFixture.password("a-after"))
        _ = try offer(a, copy, "a-to-copy")
        #expect(try copy.keychain.password(service: "a-after", account: "ann") == nil)
        let sealing = try a.keyRing().currentEpoch(.sync)
        #expect(!(try copy.keyRing().epochs(.sync)).contains(sealing), "the copy holds epoch \(sealing)")
        let sealedTo = try a.changeGroup("reading") { context, _, _ in
            try context.state().activeMembers.map(\.device)
        }
        #expect(!sealedTo.contains(copy.deviceID), "a seals to the copy's device")
    }

    @Test(
        "A made-up device joining with the group key on the revoked device's join acknowledges the copy's stale rekey: it is no witness, and the revocation stands (red team round 29, F1)"
    )
    func madeUpWitnessVouchesForNothing() throws {
        let (a, c, copy) = try concurrentJoiners(bHeardOfC: true)
        _ = try exchange(c, a, "revocation-to-a")
        try copy.signStaleRekeyWitnessedByMadeUpDevice()
        _ = try offer(copy, a, "copy-to-a")
        #expect(try !active(copy, in: a), "the revocation stands at a")
        #expect(try active(c, in: a), "the revoker stays at a")
        let sealedTo = try a.changeGroup("reading") { context, _, _ in try context.state().activeMembers.count }
        #expect(sealedTo == 2, "a seals to \(sealedTo) devices")
    }

    @Test(
        "A device the copy approves on the revoked device's join acknowledges the copy's stale rekey: it is no witness, in either order and through a chain of approvals (red team round 30, F1)",
        arguments: [(1, false), (1, true), (2, false), (2, true)]
    )
    func approvedWitnessVouchesForNothing(chain: Int, forgeryFirst: Bool) throws {
        let (a, c, copy) = try concurrentJoiners(bHeardOfC: true, synced: true)
        if !forgeryFirst { _ = try exchange(c, a, "revocation-to-a") }
        try copy.signStaleRekeyWitnessedByApprovedDevice(chain: chain)
        _ = try offer(copy, a, "copy-to-a")
        if forgeryFirst { _ = try exchange(c, a, "revocation-to-a") }
        #expect(try !active(copy, in: a), "the revocation stands at a")
        #expect(try active(c, in: a), "the revoker stays at a")
        let sealedTo = try a.changeGroup("reading") { context, _, _ in try context.state().activeMembers.count }
        #expect(sealedTo == 2, "a seals to \(sealedTo) devices")
        _ = try exchange(a, c, "a-to-c")
        try expectNothingLaterReaches(copy, from: c)
    }

    @Test(
        "Two stolen devices: the copy of one, taken before its owner's rekey, acknowledges the other copy's stale rekey, which reaches the founder before the revocation and that rekey do: the revocation stands once they arrive (red team round 30, F2)",
        arguments: [false, true]
    )
    func preRekeyCopyVouchesForNothing(forgeryFirst: Bool) throws {
        let (a, joined) = try joinedFromOneBundle(["b", "d", "c"], syncing: ["b", "d", "c"])
        let (b, d, c) = (joined[0], joined[1], joined[2])
        var copies: [Vault] = []
        for (device, name) in [(b, "b"), (d, "d")] {
            device.close()
            let copyDirectory = group.directory.path("\(name)-copy")
            try FileManager.default.copyItem(at: group.directory.path(name), to: copyDirectory)
            let copy = try Vault.open(at: copyDirectory, configuration: group.fixture.configuration)
            try copy.unlock(passphrase: SyncGroupFixture.passphrase)
            copies.append(copy)
        }
        let (copyB, copyD) = (copies[0], copies[1])
        let owner = try Vault.open(at: group.directory.path("d"), configuration: group.fixture.configuration)
        try owner.unlock(passphrase: SyncGroupFixture.passphrase)
        try owner.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "d's new passphrase")
        try owner.unlock(passphrase: "d's new passphrase")
        _ = try exchange(owner, c, "rekey-to-c")
        try c.revoke(device: copyB.deviceID)
        if !forgeryFirst { _ = try exchange(c, a, "revocation-to-a") }
        try copyB.signStaleRekey(onAdmissionOf: copyD.deviceID, witnessedBy: copyD)
        _ = try offer(copyB, a, "copy-to-a")
        if forgeryFirst { _ = try offer(c, a, "revocation-to-a") }
        #expect(try !active(copyB, in: a), "the revocation stands at a")
        #expect(try active(c, in: a), "the revoker stays at a")
        _ = try offer(a, c, "a-to-c")
        try expectNothingLaterReaches(copyB, from: c)
    }

    @Test(
        "An honest member that was offline acknowledges a copy's stale rekey, sent without the device's later entries, before it hears of the revocation: the revocation still takes the device out, in either order, and when the rekey also follows a made-up join the revocation cannot know (red team rounds 31 and 32, F1)",
        arguments: [true, false],
        [false, true]
    )
    func idleMemberVouchesForNothing(revocationFirst: Bool, padded: Bool) throws {
        let (a, joined) = try joinedFromOneBundle(["b", "c", "d"], syncing: ["b", "c"])
        let (b, c, d) = (joined[0], joined[1], joined[2])
        b.close()
        let copy = try Vault.open(at: group.directory.path("b"), configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        try c.revoke(device: copy.deviceID)
        if revocationFirst { _ = try exchange(c, a, "revocation-to-a") }
        try copy.signStaleRekey(onAdmissionOf: d.deviceID, sendingOnlyItsPast: true, padded: padded)
        _ = try offer(copy, d, "copy-to-d")
        _ = try offer(a, d, "a-to-d")
        _ = try offer(d, a, "d-to-a-after")
        if !revocationFirst { _ = try offer(c, a, "revocation-to-a") }
        #expect(try !active(copy, in: a), "the revocation stands at a")
        let members = Set(try a.members().filter(\.isActive).map(\.deviceID))
        #expect(members.isSubset(of: [a.deviceID, c.deviceID, d.deviceID]), "a device the copy made up is in at a")
        try expectNothingLaterReaches(copy, from: a, writing: "a-after")
    }

    /// `b`'s vault as the thief holds it: its files, opened with its passphrase (`b` is lost).
    func stolen(_ b: Vault) throws -> Vault {
        b.close()
        let copy = try Vault.open(at: group.directory.path("b"), configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        return copy
    }

    /// The thief's copy closes the door with the stock client: a rekey, or approval-only joins.
    func closeTheDoor(_ copy: Vault, rekey: Bool) throws {
        if rekey {
            try copy.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "the thief's")
            try copy.unlock(passphrase: "the thief's")
        } else {
            try copy.setJoinPolicy(.approval)
        }
    }

    @Test(
        "A lost device's copy, taken before it heard of later joins, takes in a made-up device that joined from an old bundle, then rekeys or closes joins with the stock client after the revocation reached every member: both lose, and neither the copy nor the made-up device is in (red team round 34, F1)",
        arguments: [true, false]
    )
    func copyPaddedWithMadeUpJoin(rekey: Bool) throws {
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        _ = try exchange(b, a, "b-to-a")
        let copy = try stolen(b)
        let later = group.bundle("later")
        try a.export(to: later)
        let (c, _) = try group.join("c", from: later)
        let (d, _) = try group.join("d", from: later)
        for (device, name) in [(c, "c"), (d, "d")] { _ = try exchange(device, a, "\(name)-to-a") }
        for (device, name) in [(c, "c"), (d, "d")] { _ = try exchange(a, device, "a-to-\(name)") }
        try c.revoke(device: copy.deviceID)
        _ = try exchange(c, a, "revocation-to-a")
        _ = try exchange(a, d, "revocation-to-d")
        let (madeUp, _) = try group.join("m", from: start)
        _ = try offer(madeUp, copy, "m-to-copy")
        try closeTheDoor(copy, rekey: rekey)
        _ = try offer(copy, a, "copy-to-a")
        _ = try offer(madeUp, a, "m-to-a")
        for (device, name) in [(copy, "copy"), (madeUp, "made-up")] {
            #expect(try !active(device, in: a), "the \(name) device is in at a")
            try expectNothingLaterReaches(device, from: a, writing: "a-after-to-\(name)")
        }
    }

    @Test(
        "The same copy's closing reaches the founder before the revocation does, with one or two made-up devices taken in: the founder revokes the stolen device itself, as the threat model asks, and the made-up devices go with it, while the members it knew stay (red team round 35, F1)",
        arguments: [(true, 1), (true, 2), (false, 1)]
    )
    func closingBeforeTheRevocationThenRevokedByHand(rekey: Bool, madeUpDevices: Int) throws {
        // `d` joins beside `b`, and the stolen device heard of it: it stays a member throughout.
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        let (d, _) = try group.join("d", from: start)
        for (device, name) in [(b, "b"), (d, "d")] { _ = try exchange(device, a, "\(name)-to-a") }
        _ = try exchange(a, b, "a-to-b")
        _ = try exchange(b, a, "b-acknowledges")
        _ = try exchange(a, d, "a-to-d")
        let copy = try stolen(b)
        // `c` joins after the copy was taken, and revokes the device.
        let later = group.bundle("later")
        try a.export(to: later)
        let (c, _) = try group.join("c", from: later)
        _ = try exchange(c, a, "c-to-a")
        _ = try exchange(a, c, "a-to-c")
        try c.revoke(device: copy.deviceID)
        let revocation = group.bundle("revocation")
        try c.export(to: revocation)
        // The thief: made-up devices join from the oldest bundle (the second from the first's),
        // the copy takes them in and closes the door after them.
        var madeUp: [Vault] = []
        for index in 0..<madeUpDevices {
            var from = start
            if let previous = madeUp.last {
                from = group.bundle("m\(index)-from")
                try previous.export(to: from)
            }
            madeUp.append(try group.join("m\(index)", from: from).0)
        }
        for (index, device) in madeUp.enumerated() { _ = try offer(device, copy, "m\(index)-to-copy") }
        try closeTheDoor(copy, rekey: rekey)
        // The closing reaches the founder first, then the revocation.
        _ = try offer(copy, a, "copy-to-a")
        for (index, device) in madeUp.enumerated() { _ = try offer(device, a, "m\(index)-to-a") }
        _ = Result { () throws(CofferError) in _ = try a.import(from: revocation) }
        if try active(copy, in: a) {
            // The second open case of the threat model: the founder revokes the device itself.
            let revoked = try a.revoke(device: copy.deviceID)
            #expect(revoked.first == copy.deviceID)
            #expect(Set(revoked.dropFirst()) == Set(madeUp.map(\.deviceID)))
        }
        for (device, name) in [(copy, "copy")] + madeUp.enumerated().map({ ($1, "made-up \($0)") }) {
            #expect(try !active(device, in: a), "the \(name) device is in at a")
            try expectNothingLaterReaches(device, from: a, writing: "a-after-to-\(name)")
        }
        for (device, name) in [(a, "a"), (d, "d")] {
            #expect(try active(device, in: a), "\(name), a member the stolen device knew of, is out")
        }
    }

    /// `a` founds the group and the devices `names` join by passphrase from one bundle of `a`'s; each
    /// sends `a` a bundle, and those in `syncing` then exchange with `a` twice round, so that every
    /// acknowledgement among them reaches every one of them. Returns `a` and the devices, in order.
    func joinedFromOneBundle(_ names: [String], syncing: Set<String>) throws -> (a: Vault, devices: [Vault]) {
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        var devices: [Vault] = []
        for name in names {
            devices.append(try group.join(name, from: start).0)
            _ = try exchange(devices.last!, a, "\(name)-joins")
        }
        for round in 0..<2 {
            for (device, name) in zip(devices, names) where syncing.contains(name) {
                _ = try exchange(device, a, "\(name)-to-a-\(round)")
            }
            for (device, name) in zip(devices, names) where syncing.contains(name) {
                _ = try exchange(a, device, "a-to-\(name)-\(round)")
            }
        }
        return (a, devices)
    }

    /// `a` founds the group; `b` and `c` join by passphrase from one bundle of `a`'s, so neither join
    /// knows the other, and `a` hears of both (`b` of `c`'s too with `bHeardOfC`; with `synced`, every
    /// device then hears of every acknowledgement). `b` is stolen:
    /// returns `a`, `c` and `b`'s vault as the thief holds it, after `c` revoked `b`.
    func concurrentJoiners(bHeardOfC: Bool, synced: Bool = false) throws -> (a: Vault, c: Vault, copy: Vault) {
        let a = try group.createFirst()
        try a.keychain.add(SyncGroupFixture.password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        let (c, _) = try group.join("c", from: start)
        _ = try exchange(b, a, "b-to-a")
        _ = try exchange(c, a, "c-to-a")
        if bHeardOfC { _ = try exchange(a, b, "a-to-b") }
        _ = try exchange(a, c, "a-to-c")
        if synced {
            _ = try exchange(b, a, "b-acknowledges")
            _ = try exchange(c, a, "c-acknowledges")
            _ = try exchange(a, b, "a-to-b-again")
            _ = try exchange(a, c, "a-to-c-again")
        }
        b.close()
        let copy = try Vault.open(at: group.directory.path("b"), configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        try c.revoke(device: copy.deviceID)
        return (a, c, copy)
    }

    /// `c` writes an item after the copy's forgery and offers the copy a bundle: the copy can open
    /// neither the item nor the epoch `c` seals with.
    func expectNothingLaterReaches(_ copy: Vault, from c: Vault, writing service: String = "after") throws {
        try c.keychain.add(SyncGroupFixture.password(service))
        _ = try offer(c, copy, "\(service)-to-\(copy.deviceID)")
        #expect(try copy.keychain.password(service: service, account: "ann") == nil)
        let sealing = try c.keyRing().currentEpoch(.sync)
        #expect(!(try copy.keyRing().epochs(.sync)).contains(sealing), "the copy holds epoch \(sealing)")
        #expect(!sealing.isOriginal, "c seals with the original key, which the copy holds")
    }

    @Test(
        "A copy taken before its owner's rekey signs a rekey on the device's founding entry: the owner and the devices it admitted stay, and the copy reads nothing written after"
    )
    func copyRekeysOnFoundingAfterOwnersRekey() throws {
        let (a, b, c, copy) = try foundedTrio(byApproval: true)
        try a.rekey(passphrase: SyncGroupFixture.passphrase, newPassphrase: "a new passphrase")
        try a.unlock(passphrase: "a new passphrase")
        _ = try exchange(a, b, "rekey-to-b")
        _ = try exchange(a, c, "rekey-to-c")
        _ = try exchange(b, a, "b-acknowledges")
        _ = try exchange(c, a, "c-acknowledges")
        try copy.signStaleRekey()
        for (member, name) in [(c, "c"), (b, "b"), (a, "a")] {
            _ = try offer(copy, member, "copy-to-\(name)")
            for device in [a, b, c] {
                #expect(try active(device, in: member), "\(device.deviceID) stays at \(name)")
            }
        }
        try a.keychain.add(SyncGroupFixture.password("owner-after"))
        try c.keychain.add(SyncGroupFixture.password("c-after"))
        _ = try exchange(a, c, "a-to-c-after")
        #expect(try offer(c, copy, "c-to-copy") != nil)
        #expect(try copy.keychain.password(service: "owner-after", account: "ann") == nil)
        #expect(try copy.keychain.password(service: "c-after", account: "ann") == nil)
        #expect(!(try copy.keyRing().epochs(.sync)).contains(try c.keyRing().currentEpoch(.sync)))
    }
}

extension Vault {
    /// A modified client on a copy of a device: signs, with the keys it holds, a replacement of the
    /// device's keys whose only parent is the entry that admitted the device (its founding entry, for
    /// a founder), and keeps it in its log.
    /// The copy then signs its bundles with the new keys, as the thief's client does.
    func signStaleRekey() throws {
        let fresh = DeviceKeys.generate()
        try signStale { context, parents in try Self.replacement(by: fresh, context, parents) }
        try signWith(fresh)
    }

    /// A replacement of this device's keys by `fresh`, for an entry with `parents`.
    static func replacement(
        by fresh: DeviceKeys,
        _ context: GroupContext,
        _ parents: [[UInt8]]
    ) throws -> GroupEntry.Change {
        let keys = DevicePublicKeys(agreement: try fresh.agreement.publicKey(), signing: try fresh.signing.publicKey())
        let possession = try fresh.signing.signature(
            of: GroupEntry.possessionMessage(
                group: context.log.group,
                parents: parents,
                author: context.device,
                keys: keys
            )
        )
        return .keysReplaced(keys: keys, possession: possession)
    }

    /// A modified client: keeps `keys` as this device's keys, and signs with them from now on.
    func signWith(_ keys: DeviceKeys) throws {
        let roots = try unlockedRoots()
        let entries = try keys.metaEntries(deviceRoot: roots.device, vaultID: id)
        let schema = schema
        try environment.write { txn in
            for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
        }
        dropDerivedContexts()
    }

    /// The same (the copy signing with the new keys after), with a made-up device as its witness: it
    /// joins by passphrase on the device's admission (with the group key every member holds), the
    /// rekey follows that join, and the made-up device signs an entry after the rekey (red team
    /// round 29, F1).
    func signStaleRekeyWitnessedByMadeUpDevice() throws {
        let fresh = DeviceKeys.generate()
        try changeGroup("signing a witnessed stale rekey") { context, _, _ in
            let madeUp = (device: UUID(), keys: DeviceKeys.generate())
            var joining = try GroupContext(
                log: GroupLog(group: context.log.group, entries: try Self.pastOfAdmission(of: deviceID, in: context)),
                roots: context.roots,
                device: madeUp.device,
                deviceKeys: madeUp.keys
            )
            try joining.appendJoined(name: "witness")
            let entries = joining.log.entries
            try Self.appendStaleRekey(to: &context, past: entries, fresh: fresh, witness: madeUp)
        }
        try signWith(fresh)
    }

    /// The entries `device`'s admission follows, and that admission last.
    static func pastOfAdmission(of device: UUID, in context: GroupContext) throws -> [GroupEntry] {
        let (past, admissions) = try pastOfAdmissions(of: [device], in: context)
        return past + admissions
    }

    /// The admissions of `devices`, and the entries (but those) that any of them follows.
    static func pastOfAdmissions(
        of devices: [UUID],
        in context: GroupContext
    ) throws -> (past: [GroupEntry], admissions: [GroupEntry]) {
        let entries = context.log.entries
        let graph = try GroupGraph(entries, group: context.log.group)
        let positions = try devices.map { device in try #require(entries.firstIndex { $0.admittedDevice == device }) }
        let past = entries.indices.filter { index in
            !positions.contains(index) && positions.contains { graph.ancestors[$0].contains(index) }
        }
        return (past.map { entries[$0] }, positions.map { entries[$0] })
    }

    /// The same, with a made-up device as its witness admitted by approval: on the device's admission
    /// the copy approves a made-up device (or, with `chain` 2, a made-up device that approves
    /// another), the rekey follows that approval, and the last made-up device signs an entry after
    /// the rekey (red team round 30, F1).
    func signStaleRekeyWitnessedByApprovedDevice(chain: Int = 1) throws {
        let fresh = DeviceKeys.generate()
        try changeGroup("signing a stale rekey witnessed by an approved device") { context, _, _ in
            let (epoch, root) = try context.currentRoot()
            var entries = try Self.pastOfAdmission(of: deviceID, in: context)
            var approver = (device: deviceID, keys: context.deviceKeys)
            for link in 1...chain {
                let madeUp = (device: UUID(), keys: DeviceKeys.generate())
                let keys = DevicePublicKeys(
                    agreement: try madeUp.keys.agreement.publicKey(),
                    signing: try madeUp.keys.signing.publicKey()
                )
                let approval = try GroupEntry(
                    change: .added(
                        device: madeUp.device,
                        keys: keys,
                        name: "witness-\(link)",
                        epoch: epoch,
                        box: try GroupKeys.box(root, epoch: epoch, to: keys, group: context.log.group)
                    ),
                    parents: [try #require(entries.last).hash],
                    author: approver.device,
                    signing: approver.keys.signing,
                    group: context.log.group,
                    time: Date(timeIntervalSince1970: 1_800_000_000)
                )
                entries.append(approval)
                approver = madeUp
            }
            try Self.appendStaleRekey(to: &context, past: entries, fresh: fresh, witness: approver)
        }
        try signWith(fresh)
    }

    /// The same, on this device's admission and `other`'s. With `witness` (`other`'s copy, stolen
    /// too), that copy signs an entry after it with the keys it holds (red team round 29, F2; round
    /// 30, F2). With `sendingOnlyItsPast`, the copy's log holds nothing else: the device's later
    /// entries are withheld (round 31, F1). With `padded`, the rekey also follows a made-up device's
    /// passphrase join on those entries, which no revocation made before can have known (round 32,
    /// F1).
    func signStaleRekey(
        onAdmissionOf other: UUID,
        witnessedBy witness: Vault? = nil,
        sendingOnlyItsPast: Bool = false,
        padded: Bool = false
    ) throws {
        let fresh = DeviceKeys.generate()
        var witnessing: (device: UUID, keys: DeviceKeys)?
        if let witness { witnessing = (witness.deviceID, try witness.deviceKeys()) }
        try changeGroup("signing a stale rekey on two admissions") { context, _, _ in
            let (before, admissions) = try Self.pastOfAdmissions(of: [deviceID, other], in: context)
            var past = before + admissions
            var parents = admissions.map(\.hash)
            if padded {
                var joining = try GroupContext(
                    log: GroupLog(group: context.log.group, entries: past),
                    roots: context.roots,
                    device: UUID(),
                    deviceKeys: DeviceKeys.generate()
                )
                try joining.appendJoined(name: "padding")
                past = joining.log.entries
                parents.append(try #require(past.last).hash)
            }
            if sendingOnlyItsPast { context.adopt(GroupLog(group: context.log.group, entries: past)) }
            try Self.appendStaleRekey(
                to: &context,
                past: past,
                parents: parents.sorted { $0.lexicographicallyPrecedes($1) },
                fresh: fresh,
                witness: witnessing
            )
        }
        try signWith(fresh)
    }

    /// Adds to `context` (a copy's log) a replacement of its device's keys by `fresh` on `parents`
    /// (by default the last of `past`), the entries `past` it follows, and an entry `witness` signs
    /// after it, if given.
    static func appendStaleRekey(
        to context: inout GroupContext,
        past: [GroupEntry],
        parents: [[UInt8]]? = nil,
        fresh: DeviceKeys,
        witness: (device: UUID, keys: DeviceKeys)?
    ) throws {
        let parents = try parents ?? [try #require(past.last).hash]
        let stale = try GroupEntry(
            change: try replacement(by: fresh, context, parents),
            parents: parents,
            author: context.device,
            signing: context.deviceKeys.signing,
            group: context.log.group,
            time: Date(timeIntervalSince1970: 1_800_000_000)
        )
        guard let witness else {
            context.adopt(try GroupLog(group: context.log.group, entries: past + [stale]).union(context.log))
            return
        }
        var witnessing = try GroupContext(
            log: GroupLog(group: context.log.group, entries: past + [stale]),
            roots: context.roots,
            device: witness.device,
            deviceKeys: witness.keys
        )
        try witnessing.append(.policy(.passphrase))
        context.adopt(try witnessing.log.union(context.log))
    }

    /// The same for any entry `change` makes from the log and the parents it will have.
    func signStale(_ change: (GroupContext, [[UInt8]]) throws -> GroupEntry.Change) throws {
        try changeGroup("signing a stale entry") { context, _, _ in
            let past = try Self.pastOfAdmission(of: deviceID, in: context)
            let parents = [try #require(past.last).hash]
            let stale = try GroupEntry(
                change: try change(context, parents),
                parents: parents,
                author: deviceID,
                signing: context.deviceKeys.signing,
                group: context.log.group,
                time: Date(timeIntervalSince1970: 1_800_000_000)
            )
            context.adopt(try GroupLog(group: context.log.group, entries: past + [stale]).union(context.log))
        }
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
