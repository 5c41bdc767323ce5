import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Epoch ids that commit to their keys (docs/FORMAT.md, "Epoch ids commit to their keys"): a
/// revoked device's stale copy that reuses the id of its revoker's new epoch with a key of its own
/// (red team round 3, finding 0) neither keeps a member from learning the revocation nor gets
/// anything sealed with its key.
@Suite("Epoch ids commit to their keys: a forged epoch reusing a real epoch's id")
struct EpochCommitmentTests {
    let group = UUID()

    func founder() throws -> GroupContext {
        var context = try GroupContext(
            log: GroupLog(group: group),
            roots: [.original: SecureBytes.random(count: 32)],
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try context.appendJoined(name: "a")
        return context
    }

    /// A device joining by passphrase from `source`'s view, holding what its join block gives.
    func joining(from source: GroupContext, name: String) throws -> GroupContext {
        var context = try GroupContext(
            log: source.log,
            roots: source.roots,
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try context.appendJoined(name: name)
        return context
    }

    /// `a`, `b` and `c`, each having heard the others.
    func trio() throws -> (a: GroupContext, b: GroupContext, c: GroupContext) {
        var a = try founder()
        var b = try joining(from: a, name: "b")
        try a.merge(b.log)
        var c = try joining(from: a, name: "c")
        try a.merge(c.log)
        try b.merge(a.log)
        try c.merge(a.log)
        return (a, b, c)
    }

    @Test("Known answer: the id is the first 8 bytes of HMAC-SHA256(key, \"coffer/v3/epoch-id\" ‖ 0 ‖ group id)")
    func knownAnswer() throws {
        // Python: hmac.new(bytes(range(32)), b"coffer/v3/epoch-id\0" + group.bytes, sha256).digest()[:8]
        let group = try #require(UUID(uuidString: "11111111-2222-3333-4444-555555555555"))
        let root = SecureBytes(copying: Array(UInt8(0)..<32))
        #expect(GroupKeys.committedEpoch(for: root, group: group)?.description == "72cbece3bf442bae")
        #expect(GroupKeys.commits(root, to: KeyEpoch(id: 0x72cb_ece3_bf44_2bae), group: group))
        #expect(!GroupKeys.commits(root, to: KeyEpoch(id: 0x72cb_ece3_bf44_2bae), group: UUID()))
    }

    @Test("Every epoch a device starts has an id that commits to its key")
    func startedEpochsCommit() throws {
        var (a, b, _) = try trio()
        try a.append(.revoked(device: b.device, clock: 0))
        try a.startEpoch()
        let (epoch, root) = try a.currentRoot()
        #expect(GroupKeys.commits(root, to: epoch, group: group))
        #expect(a.keys.isTrusted(epoch))
        _ = b
    }

    @Test(
        "The member that hears the forgery first learns the revocation, takes the real key, and never seals with the forged one"
    )
    func forgeryHeardFirst() throws {
        var (a, b, c) = try trio()
        var thief = b
        try a.append(.revoked(device: b.device, clock: 0))
        try a.startEpoch()
        let (real, realRoot) = try a.currentRoot()
        let forged = try thief.forgeEpoch(real)

        try c.merge(thief.log)
        // c holds the forged key under the real id, but seals under an epoch it started itself.
        #expect(c.roots[real]?.constantTimeEquals(forged) == true)
        #expect(!c.keys.isTrusted(real))
        let sealing = try c.sealingRoot()
        #expect(sealing.epoch != real && !sealing.root.constantTimeEquals(forged))

        try c.merge(a.log)
        #expect(c.roots[real]?.constantTimeEquals(realRoot) == true, "the committed key replaces the forged one")
        let state = try c.state()
        #expect(state.member(b.device)?.isActive == false, "c learns of the revocation")
        let after = try c.sealingRoot()
        #expect(
            !thief.roots.values.contains { $0.constantTimeEquals(after.root) },
            "the thief reads nothing c seals now"
        )
        #expect(!after.root.constantTimeEquals(forged))
        #expect(!state.activeMembers.contains { $0.device == thief.device })

        // a takes c's log in turn, the forged entry among it, and keeps its own key.
        try a.merge(c.log)
        #expect(a.roots[real]?.constantTimeEquals(realRoot) == true)
        #expect(
            try a.state().activeMembers.map(\.device).sorted { $0.uuidString < $1.uuidString }
                == [a.device, c.device].sorted { $0.uuidString < $1.uuidString }
        )
        #expect(try a.log.state(roots: { _ in nil }) == (try c.log.union(a.log).state(roots: { _ in nil })))
    }

    @Test("A join proven with the forged key stays a readable entry without effect on every member, in either order")
    func joinUnderForgedKey() throws {
        for aFirst in [false, true] {
            var (a, b, c) = try trio()
            var thief = b
            try a.append(.revoked(device: b.device, clock: 0))
            try a.startEpoch()
            let (real, realRoot) = try a.currentRoot()
            try thief.forgeEpoch(real)
            // An accomplice joins by passphrase on the thief's branch, proving the forged key.
            let accomplice = try joining(from: thief, name: "x")
            try thief.merge(accomplice.log)

            if aFirst {
                try c.merge(a.log)
                try c.merge(thief.log)
            } else {
                try c.merge(thief.log)
                try c.merge(a.log)
            }
            try a.merge(c.log)
            try c.merge(a.log)
            for member in [a, c] {
                #expect(member.roots[real]?.constantTimeEquals(realRoot) == true, "aFirst \(aFirst)")
                let state = try member.state()
                #expect(state.member(accomplice.device)?.isActive != true, "aFirst \(aFirst)")
                #expect(state.member(b.device)?.isActive == false, "aFirst \(aFirst)")
            }
            // The stored keys reopen the log as a fresh process does: still valid, the join still
            // without effect.
            GroupLog.forgetCheckedEntries()
            let reopened = try GroupContext(
                log: c.log,
                roots: c.roots,
                legacy: c.keys.legacy,
                device: c.device,
                deviceKeys: c.deviceKeys
            )
            #expect(try reopened.state().member(accomplice.device)?.isActive != true, "aFirst \(aFirst)")
        }
    }

    @Test(
        "A join proven with the forged key after the revocation, once passphrase joins are open again, admits no one (red team round 4, N1)"
    )
    func forgedKeyOpensNoDoor() throws {
        var (a, b, c) = try trio()
        var thief = b
        try a.append(.revoked(device: b.device, clock: 0))
        try a.startEpoch()
        let (real, _) = try a.currentRoot()
        let forged = try thief.forgeEpoch(real)
        // c hears the forgery first and passes it on; the owner opens passphrase joins again.
        try c.merge(thief.log)
        try c.merge(a.log)
        try a.merge(c.log)
        try a.append(.policy(.passphrase))
        #expect(try a.state().policy == .passphrase)
        // A fresh device joins on a's log, proving under the current epoch's id a key the thief
        // holds (a modified client: it holds what the thief gave it, not the passphrase).
        var roots = thief.roots
        roots[try a.state().currentEpoch] = forged
        var intruder = try GroupContext(
            log: a.log,
            roots: roots,
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try intruder.appendJoined(name: "x")
        try intruder.startEpoch()
        for var member in [a, c] {
            try member.merge(intruder.log)
            let state = try member.state()
            #expect(state.member(intruder.device) == nil, "the join does not count")
            #expect(state.unprovenJoins.count == 1)
            let sealing = try member.sealingRoot().root
            #expect(!intruder.roots.values.contains { $0.constantTimeEquals(sealing) })
        }
        // A device joining with the real key (the passphrase) is admitted.
        let honest = try joining(from: a, name: "h")
        try a.merge(honest.log)
        #expect(try a.state().member(honest.device)?.isActive == true)
    }

    @Test("A key held before ids committed stays trusted; one that arrives since and commits to nothing is not")
    func legacyKeys() throws {
        let a = try founder()
        let legacyEpoch = KeyEpoch(id: 0x0123_4567_89ab_cdef)
        let legacyRoot = SecureBytes.random(count: 32)
        var held = a.roots
        held[legacyEpoch] = legacyRoot
        let reopened = try GroupContext(log: a.log, roots: held, device: a.device, deviceKeys: a.deviceKeys)
        #expect(reopened.keys.legacy == [legacyEpoch])
        #expect(reopened.keys.isTrusted(legacyEpoch))

        // A key that arrives later under an id that commits to nothing is held, to open what it
        // sealed, but never trusted (to seal with, or to check a join proof with); a committed key
        // replaces it.
        var keys = HeldGroupKeys(roots: [:], legacy: [], group: group)
        let root = SecureBytes.random(count: 32)
        let epoch = try #require(GroupKeys.committedEpoch(for: root, group: group))
        let forged = SecureBytes.random(count: 32)
        keys.learn(forged, epoch: epoch)
        #expect(!keys.isTrusted(epoch))
        keys.learn(root, epoch: epoch)
        #expect(keys.roots[epoch]?.constantTimeEquals(root) == true && keys.isTrusted(epoch))
        #expect(keys.trustedRoot(epoch)?.constantTimeEquals(root) == true)
        keys.learn(SecureBytes.random(count: 32), epoch: epoch)
        #expect(keys.roots[epoch]?.constantTimeEquals(root) == true, "nothing replaces a committed key")
    }
}
