import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Device trust in a sync group: approval joins, revocation with key epochs, rotation, and the
/// membership log's merges and refusals (docs/ARCHITECTURE.md, "Device trust").
@Suite("Sync group trust: approval, revocation, epochs and the membership log")
struct GroupTrustTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    func password(_ service: String, _ value: String = "secret") -> KeychainItem {
        SyncGroupFixture.password(service, value)
    }

    /// A vault that joined `member`'s group by approval.
    func approvedVault(_ name: String, by member: Vault) throws -> Vault {
        let (vault, request) = try Vault.requestJoin(
            at: group.directory.path(name),
            passphrase: SyncGroupFixture.passphrase,
            name: name,
            configuration: group.fixture.configuration
        )
        try member.approve(request)
        let bundle = group.bundle("approve-\(name)")
        try member.export(to: bundle)
        let summary = try vault.import(from: bundle)
        #expect(summary.joinedGroup)
        return vault
    }

    /// The founding member `a` with one item, and `b` joined from its bundle and known to `a`.
    func foundedPair() throws -> (a: Vault, b: Vault) {
        let a = try group.createFirst()
        try a.keychain.add(password("before"))
        let first = group.bundle("first")
        try a.export(to: first)
        let (b, _) = try group.join("b", from: first)
        _ = try exchange(b, a, "b-known-to-a")
        return (a, b)
    }

    /// `vault` closed, then the vault in the group's directory `name` opened again and unlocked.
    func reopen(
        _ vault: Vault,
        as name: String,
        passphrase: Passphrase = SyncGroupFixture.passphrase
    ) throws -> Vault {
        vault.close()
        let reopened = try Vault.open(at: group.directory.path(name), configuration: group.fixture.configuration)
        try reopened.unlock(passphrase: passphrase)
        return reopened
    }

    func exchange(_ from: Vault, _ to: Vault, _ name: String) throws -> ImportSummary {
        try group.exchange(from, to, name)
    }

    @Test(
        "Revoking a device another member revoked already names that member, and says to revoke it if unknown (red team round 36, F1)"
    )
    func revokingARevokedDeviceNamesItsRevoker() throws {
        let (a, b) = try foundedPair()
        let first = group.bundle("for-c")
        try a.export(to: first)
        let (c, _) = try group.join("c", from: first)
        _ = try exchange(c, a, "c-known-to-a")
        _ = try exchange(a, b, "a-to-b")
        try c.revoke(device: b.deviceID)
        _ = try exchange(c, a, "revocation-to-a")
        #expect {
            try a.revoke(device: b.deviceID)
        } throws: { error in
            guard let error = error as? CofferError else { return false }
            return error.code == .param
                && error.message.contains("revoked already, by device \(c.deviceID.uuidString)")
                && error.message.contains("revoke it too")
        }
    }

    @Test("A device that asks to join is refused syncable records until approved, then joins from a bundle")
    func approvalJoin() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("mail"))
        let (b, request) = try Vault.requestJoin(
            at: group.directory.path("b"),
            passphrase: SyncGroupFixture.passphrase,
            name: "laptop",
            configuration: group.fixture.configuration
        )
        #expect(try b.pendingJoinRequest() == request)
        #expect(try JoinRequest(text: request.text) == request)
        #expect(request.identity == (try b.deviceIdentity()))
        // Waiting: device-bound records work, syncable ones are refused with a message saying why.
        try b.keychain.add(Items.password("local", "ann"))
        let waiting = #expect(throws: CofferError.self) { try b.keychain.add(password("early")) }
        #expect(waiting?.code == .keyUnavailable)
        #expect(waiting?.message.contains("waiting for approval") == true)
        // A bundle made before the approval does not let it in.
        let early = group.bundle("early")
        try a.export(to: early)
        let refused = #expect(throws: CofferError.self) { try b.import(from: early) }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains(request.identity.fingerprint) == true)

        let member = try a.approve(request)
        #expect(member.name == "laptop" && member.addedBy == a.deviceID && member.isActive)
        let bundle = group.bundle("approved")
        try a.export(to: bundle)
        let joined = try b.import(from: bundle)
        #expect(joined.joinedGroup)
        #expect(b.syncGroupID == a.syncGroupID)
        #expect(try b.pendingJoinRequest() == nil)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "secret")
        try b.keychain.add(password("from-b"))
        _ = try exchange(b, a, "b-to-a")
        #expect(try a.keychain.password(service: "from-b", account: "ann") == "secret")
        #expect(try a.syncableState() == b.syncableState())
        #expect(Set(try a.members().map(\.deviceID)) == [a.deviceID, b.deviceID])
        #expect(try a.members().map(\.deviceID) == b.members().map(\.deviceID))

        // The joined vault reopens and unlocks with its passphrase into the group it joined.
        let reopened = try reopen(b, as: "b")
        #expect(reopened.syncGroupID == a.syncGroupID)
        #expect(try reopened.keychain.password(service: "from-b", account: "ann") == "secret")
    }

    @Test("A vault waiting for approval that changes its passphrase still joins with the group's keys")
    func passphraseChangeWhileWaiting() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("mail"))
        let (b, request) = try Vault.requestJoin(
            at: group.directory.path("b"),
            passphrase: SyncGroupFixture.passphrase,
            name: "laptop",
            configuration: group.fixture.configuration
        )
        let changed = Passphrase("a new passphrase for b")
        try b.changePassphrase(to: changed)
        try a.approve(request)
        let bundle = group.bundle("approved")
        try a.export(to: bundle)
        #expect(try b.import(from: bundle).joinedGroup)
        try b.keychain.add(password("from-b"))
        // Reopened with the new passphrase, it still holds the group's sync root, not a placeholder.
        let reopened = try reopen(b, as: "b", passphrase: changed)
        #expect(try reopened.keychain.password(service: "mail", account: "ann") == "secret")
        #expect(try reopened.keychain.password(service: "from-b", account: "ann") == "secret")
        _ = try exchange(reopened, a, "b-to-a")
        #expect(try a.keychain.password(service: "from-b", account: "ann") == "secret")
    }

    @Test("A member that rekeys gets new device keys the group learns: it signs, approves and reads after a reopen")
    func rekeyedMember() throws {
        let (a, b) = try foundedPair()
        try a.rotateGroupKey()  // meta group-keys now holds a later epoch, sealed under a's device root
        _ = try exchange(a, b, "rotated")
        let identity = try a.deviceIdentity()
        let epoch = try a.keyRing().currentEpoch(.sync)
        try a.rekey(passphrase: SyncGroupFixture.passphrase)
        let reopened = try reopen(a, as: "vault")
        let renewed = try reopened.deviceIdentity()
        #expect(renewed.deviceID == identity.deviceID && renewed.signingKey != identity.signingKey)
        #expect(try reopened.members().first { $0.deviceID == a.deviceID }?.identity == renewed)
        #expect(try reopened.keyRing().currentEpoch(.sync) != epoch, "a new epoch, sealed to the new keys")
        #expect(try reopened.keychain.password(service: "before", account: "ann") == "secret")
        // It still signs what b accepts, under the epoch it holds.
        try reopened.keychain.add(password("after", "after the rekey"))
        _ = try exchange(reopened, b, "after-rekey")
        #expect(try b.keychain.password(service: "after", account: "ann") == "after the rekey")
        // It still approves: the new device gets the current group key from it.
        let c = try approvedVault("c", by: reopened)
        #expect(try c.keychain.password(service: "after", account: "ann") == "after the rekey")
        // A vault waiting for approval rekeys too, then joins and reopens into the group.
        let (d, request) = try Vault.requestJoin(
            at: group.directory.path("d"),
            passphrase: SyncGroupFixture.passphrase,
            name: "d",
            configuration: group.fixture.configuration
        )
        try d.rekey(passphrase: SyncGroupFixture.passphrase)
        try reopened.approve(request)
        #expect(try exchange(reopened, d, "approve-d").joinedGroup)
        let dAgain = try reopen(d, as: "d")
        #expect(try dAgain.keychain.password(service: "after", account: "ann") == "after the rekey")
        #expect(try dAgain.syncableState() == reopened.syncableState())
    }

    @Test("The revoked copy: a full copy of a revoked device's vault cannot decrypt anything written after")
    func revokedCopy() throws {
        let (a, b) = try foundedPair()
        let c = try approvedVault("c", by: a)
        _ = try exchange(a, b, "c-known-to-b")
        // Keep a full copy of c's vault directory (with its keys); c knows the passphrase too.
        c.close()
        let copyDirectory = group.directory.path("c-copy")
        try FileManager.default.copyItem(at: group.directory.path("c"), to: copyDirectory)

        try a.revoke(device: c.deviceID)
        let revoked = try #require(try a.members().first { $0.deviceID == c.deviceID })
        #expect(!revoked.isActive && revoked.revokedBy == a.deviceID)
        #expect(try a.joinPolicy() == .approval)
        try a.keychain.add(password("after", "written after the revocation"))
        let afterBundle = group.bundle("after")
        try a.export(to: afterBundle)
        #expect(try b.import(from: afterBundle).membershipChanged)
        try b.keychain.add(password("after-b"))
        _ = try exchange(b, a, "b-after")
        #expect(try a.syncableState() == b.syncableState())

        let copy = try Vault.open(at: copyDirectory, configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        let before = try copy.dumpTables()
        // An unmodified Coffer is told it was revoked, takes no record, and keeps the log that says so.
        let told = #expect(throws: CofferError.self) { try copy.import(from: afterBundle) }
        #expect(told?.code == .notTrusted)
        #expect(told?.message.contains("this device was revoked") == true)
        let after = try copy.dumpTables()
        for table in before.keys where table != "meta" { #expect(after[table] == before[table], "\(table)") }
        #expect(try copy.members().first { $0.deviceID == c.deviceID }?.isActive == false)

        // Not a check it could skip: the copy holds no key that opens the bundle or the records.
        var source = DataSource(try Data(contentsOf: afterBundle))
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        #expect(!header.epoch.isOriginal)
        #expect(header.joinBlock.isEmpty, "approval only after a revocation: no passphrase-wrapped key travels")
        let copyKeys = try copy.keyRing()
        #expect(throws: CofferError.self) { _ = try copyKeys.root(.sync, epoch: header.epoch) }
        for epoch in [KeyEpoch.original] + copyKeys.epochs(.sync) {
            let root = try copyKeys.root(.sync, epoch: epoch)
            var reader = try BundleStreamReader(
                source: source,
                header: header,
                headerBytes: headerBytes,
                key: try header.streamKey(syncRoot: root)
            )
            #expect(throws: CofferError.self, "epoch \(epoch)") { _ = try reader.read(upTo: 1) }
        }
        // Every item a or b sealed after the revocation names the new epoch, whose key the copy lacks.
        let items = try a.syncableState().filter { $0.key.first == 1 }.map(\.value)
        let sealedAfter = try items.filter { stored in
            try stored.withUnsafeBytes { try ItemRecord.Header(stored: $0) }.epoch == header.epoch
        }
        #expect(sealedAfter.count == 2, "'after' and 'after-b'")
        for stored in sealedAfter {
            let itemHeader = try stored.withUnsafeBytes { try ItemRecord.Header(stored: $0) }
            let missing = #expect(throws: CofferError.self) {
                _ = try copyKeys.key(.item, .sync, itemHeader.accessibility.level, epoch: itemHeader.epoch)
            }
            #expect(missing?.code == .keyUnavailable)
        }
        #expect(!sealedAfter.isEmpty)

        // A bundle the copy makes afterwards is refused by the others, naming the device.
        try copy.keychain.add(password("from-the-copy"))
        let fromCopy = group.bundle("from-copy")
        try copy.export(to: fromCopy)
        let stateBefore = try a.dumpTables()
        let refused = #expect(throws: CofferError.self) { try a.import(from: fromCopy) }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains(c.deviceID.uuidString) == true)
        #expect(try a.dumpTables() == stateBefore)
        #expect(throws: CofferError.self) { try b.import(from: fromCopy) }
        #expect(try a.syncableState() == b.syncableState())
    }

    @Test("Rotation starts an epoch: new records are sealed under it, older ones stay readable everywhere")
    func rotation() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("old"))
        let bundle = group.bundle("start")
        try a.export(to: bundle)
        let (b, _) = try group.join("b", from: bundle)
        // a rotates before it hears of b. A rotation closes nothing (joins are open: b could as well
        // have joined after it), so b is a member once a hears of it, and a seals a new epoch to both.
        try a.rotateGroupKey()
        let epoch = try a.keyRing().currentEpoch(.sync)
        #expect(!epoch.isOriginal)
        try a.keychain.add(password("new"))
        _ = try exchange(b, a, "b-to-a")
        #expect(Set(try a.members().filter(\.isActive).map(\.deviceID)) == [a.deviceID, b.deviceID])
        let resealed = try a.keyRing().currentEpoch(.sync)
        #expect(resealed != epoch && !resealed.isOriginal, "b was admitted without the rotated key")
        _ = try exchange(a, b, "a-to-b")
        #expect(try b.keychain.password(service: "new", account: "ann") == "secret")
        #expect(try b.keyRing().currentEpoch(.sync) == resealed)
        // The rotation cleared the passphrase join block; the next unlock with the passphrase writes
        // one for the new epoch, so passphrase joins work again.
        a.lock()
        try a.unlock(passphrase: SyncGroupFixture.passphrase)
        let fresh = group.bundle("fresh")
        try a.export(to: fresh)
        let (c, _) = try group.join("c", from: fresh)
        #expect(try c.keychain.password(service: "new", account: "ann") == "secret")
        #expect(try c.keychain.password(service: "old", account: "ann") == "secret")
    }

    @Test("An approval-only group refuses passphrase joins, and allows them again when set back")
    func approvalOnly() throws {
        let a = try group.createFirst()
        try a.setJoinPolicy(.approval)
        let bundle = group.bundle("approval-only")
        try a.export(to: bundle)
        let refused = #expect(throws: CofferError.self) { _ = try group.join("b", from: bundle) }
        #expect(refused?.message.contains("approval only") == true)
        #expect(!FileManager.default.fileExists(atPath: group.directory.path("b").path))
        #expect(throws: CofferError.self) { try a.setJoinPolicy(.passphrase) }
        #expect(throws: CofferError.self) { try a.setJoinPolicy(.passphrase, passphrase: "wrong") }
        try a.setJoinPolicy(.passphrase, passphrase: SyncGroupFixture.passphrase)
        let open = group.bundle("open")
        try a.export(to: open)
        _ = try group.join("b", from: open)
    }

    @Test(
        "Two members approving or revoking at once converge to one log, bundles in either order",
        arguments: [false, true]
    )
    func concurrentMembership(reversed: Bool) throws {
        let a = try group.createFirst()
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        _ = try exchange(b, a, "b-to-a")
        let c = try approvedVault("c", by: a)
        let d = try approvedVault("d", by: a)
        _ = try exchange(a, b, "members-to-b")
        // At once: a approves x and revokes c; b approves y and revokes d.
        let (x, xRequest) = try Vault.requestJoin(
            at: group.directory.path("x"),
            passphrase: SyncGroupFixture.passphrase,
            name: "x",
            configuration: group.fixture.configuration
        )
        let (y, yRequest) = try Vault.requestJoin(
            at: group.directory.path("y"),
            passphrase: SyncGroupFixture.passphrase,
            name: "y",
            configuration: group.fixture.configuration
        )
        try a.approve(xRequest)
        try a.revoke(device: c.deviceID)
        try b.approve(yRequest)
        try b.revoke(device: d.deviceID)
        try a.keychain.add(password("from-a"))
        try b.keychain.add(password("from-b"))
        // Exchange in the given order, then back, until both settle.
        let (first, second) = reversed ? (b, a) : (a, b)
        for round in 0..<3 {
            _ = try exchange(first, second, "round-\(round)-1")
            _ = try exchange(second, first, "round-\(round)-2")
        }
        let logA = try a.members()
        let logB = try b.members()
        #expect(logA.map(\.deviceID) == logB.map(\.deviceID))
        #expect(Set(logA.filter(\.isActive).map(\.deviceID)) == [a.deviceID, b.deviceID, x.deviceID, y.deviceID])
        #expect(Set(logA.filter { !$0.isActive }.map(\.deviceID)) == [c.deviceID, d.deviceID])
        #expect(try a.keyRing().currentEpoch(.sync) == b.keyRing().currentEpoch(.sync))
        #expect(try a.syncableState() == b.syncableState())
        // Both approved devices join from a bundle of either member and read everything.
        _ = try x.import(
            from: try {
                let url = group.bundle("to-x")
                try a.export(to: url)
                return url
            }()
        )
        _ = try y.import(
            from: try {
                let url = group.bundle("to-y")
                try b.export(to: url)
                return url
            }()
        )
        #expect(try x.keychain.password(service: "from-b", account: "ann") == "secret")
        #expect(try y.keychain.password(service: "from-a", account: "ann") == "secret")
    }

    @Test("A log with a forged signature, a non-member's entry or a revoked device's entry is refused")
    func forgedLogs() throws {
        let a = try group.createFirst()
        let keys = DeviceKeys.generate()
        let stranger = UUID()
        let groupID = a.syncGroupID
        let roots = try a.keyRing()
        // a's log starts at its first export.
        try a.export(to: group.bundle("start"))
        var log = try GroupLog(group: groupID, decoding: try #require(try a.readMetaIfPresent(GroupContext.Meta.log)))
        let publicKeys = DevicePublicKeys(
            agreement: try keys.agreement.publicKey(),
            signing: try keys.signing.publicKey()
        )
        // A stranger adds itself as if approved: its author is not a member.
        let forged = try GroupEntry(
            change: .policy(.passphrase),
            parents: log.heads,
            author: stranger,
            signing: keys.signing,
            group: groupID
        )
        let refusal = #expect(throws: CofferError.self) {
            try log.append(forged, roots: { try? roots.root(.sync, epoch: $0) })
        }
        #expect(refusal?.code == .notTrusted)
        #expect(refusal?.message.contains("not a member") == true)
        // An entry claiming a's authorship, signed by another key.
        let impostor = try GroupEntry(
            change: .policy(.approval),
            parents: log.heads,
            author: a.deviceID,
            signing: keys.signing,
            group: groupID
        )
        let bad = #expect(throws: CofferError.self) {
            try log.append(impostor, roots: { try? roots.root(.sync, epoch: $0) })
        }
        #expect(bad?.message.contains("signature") == true)
        // A join proof made without the group key.
        let proofless = try GroupEntry(
            change: .joined(keys: publicKeys, name: "x", epoch: .original, proof: [UInt8](repeating: 0, count: 32)),
            parents: log.heads,
            author: stranger,
            signing: keys.signing,
            group: groupID
        )
        // It is an entry of the log, but admits no one: its author and what it signs have no effect.
        var withProofless = log
        try withProofless.append(proofless, roots: { try? roots.root(.sync, epoch: $0) })
        let state = try withProofless.state(roots: { try? roots.root(.sync, epoch: $0) })
        #expect(state.member(stranger) == nil)
        #expect(state.unprovenJoins == [proofless.hash])
        // An entry that names another log's head.
        let misplaced = try GroupEntry(
            change: .policy(.approval),
            parents: [[UInt8](repeating: 0, count: 32)],
            author: a.deviceID,
            signing: try a.deviceKeys().signing,
            group: groupID
        )
        #expect(throws: CofferError.self) {
            try log.append(misplaced, roots: { try? roots.root(.sync, epoch: $0) })
        }
    }

    @Test("A bundle whose membership log is damaged or cut short is refused, and the vault is as it was")
    func damagedLog() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("mail"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        _ = try exchange(b, a, "b-to-a")
        try a.rotateGroupKey()
        try a.keychain.add(password("later"))
        let bundle = group.bundle("later")
        try a.export(to: bundle)
        let bytes = [UInt8](try Data(contentsOf: bundle))
        var source = DataSource(bytes)
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        let logStart = headerBytes.count - header.log.count
        #expect(header.log.count > 100)
        let before = try b.dumpTables()
        var cases: [(String, [UInt8])] = []
        for offset in stride(from: logStart, to: headerBytes.count, by: max(1, header.log.count / 12)) {
            var flipped = bytes
            flipped[offset] ^= 0x40
            cases.append(("a flipped byte at \(offset - logStart) of the log", flipped))
        }
        cases.append(("cut inside the log", Array(bytes.prefix(logStart + header.log.count / 2))))
        cases.append(("cut after the log", Array(bytes.prefix(headerBytes.count + 10))))
        for (what, damaged) in cases {
            let url = group.bundle("damaged")
            try Data(damaged).write(to: url)
            let error = #expect(throws: CofferError.self, "\(what)") { try b.import(from: url) }
            #expect(
                error.map { [.decode, .notTrusted, .unsupportedFormat].contains($0.code) } == true,
                "\(what): \(error?.code.name ?? "")"
            )
            #expect(try b.dumpTables() == before, "\(what) changed the vault")
        }
        // The undamaged bundle still imports.
        _ = try b.import(from: bundle)
        #expect(try b.keychain.password(service: "later", account: "ann") == "secret")
    }
}
