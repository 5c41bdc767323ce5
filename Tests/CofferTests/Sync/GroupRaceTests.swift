import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Membership logs built entry by entry, as a modified client would, to race closings against joins
/// and revocations (issue 37, the second red team round; docs/FORMAT.md, "What a log means").
@Suite("Sync group races: stale copies closing the door, joins revoking their closers")
struct GroupRaceTests {
    /// One device's view of the group: its log, the keys it holds and its own keys.
    struct Device {
        var context: GroupContext
        var id: UUID { context.device }
        var log: GroupLog { context.log }

        mutating func revoke(_ target: Device) throws {
            try context.append(.revoked(device: target.id, clock: 0))
            try context.startEpoch()
        }

        mutating func close() throws { try context.append(.policy(.approval)) }

        /// Takes in `other`'s log without starting epochs of its own.
        mutating func hear(_ other: Device) throws {
            context.learnKeys(from: other.log)
            context.adopt(try context.log.union(other.log))
        }
    }

    let group = UUID()
    let root = SecureBytes.random(count: 32)

    func founder() throws -> Device {
        var context = try GroupContext(
            log: GroupLog(group: group),
            roots: [.original: root],
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try context.appendJoined(name: "a")
        return Device(context: context)
    }

    /// A device joining by passphrase from `source`'s log: it holds every key `source` holds, as a
    /// bundle's join block gives them.
    func joining(from source: Device, name: String) throws -> Device {
        var context = try GroupContext(
            log: source.log,
            roots: source.context.roots,
            device: UUID(),
            deviceKeys: DeviceKeys.generate()
        )
        try context.appendJoined(name: name)
        return Device(context: context)
    }

    func state(_ devices: Device...) throws -> GroupState {
        var log = devices[0].log
        for device in devices.dropFirst() { log = try log.union(device.log) }
        return try log.state(roots: { _ in nil })
    }

    func isActive(_ device: Device, in state: GroupState) -> Bool { state.member(device.id)?.isActive == true }

    /// Who is active, by name, for short failure messages.
    func active(_ state: GroupState, _ devices: [String: Device]) -> Set<String> {
        Set(devices.filter { isActive($0.value, in: state) }.keys)
    }

    /// `a` founded; `b` joined by passphrase and `a` knows it.
    func pair() throws -> (a: Device, b: Device) {
        var a = try founder()
        let b = try joining(from: a, name: "b")
        try a.hear(b)
        return (a, b)
    }

    @Test("A revoked device's stale copy closes the door on its revoker, which joined after the copy: both are out")
    func staleCopyClosesOnRevoker() throws {
        // Whatever the hashes come out as: the outcome never depends on their order.
        for round in 0..<12 {
            var (a, b) = try pair()
            let staleB = b
            var c = try joining(from: a, name: "c")
            try c.revoke(b)
            var thief = staleB
            try thief.close()
            let merged = try state(a, c, thief)
            #expect(active(merged, ["a": a, "b": b, "c": c]) == ["a"], "round \(round)")
            #expect(merged.policy == .approval)
            // a, the member left, starts an epoch sealed to itself alone.
            try a.hear(c)
            try a.hear(thief)
            try a.context.settle()
            let settled = try a.context.state()
            #expect(settled.activeMembers.map(\.device) == [a.id], "round \(round)")
            #expect(!b.context.roots.keys.contains(settled.currentEpoch))
            _ = b
        }
    }

    @Test("The stale copy also revokes the founder: in doubt revocations count, so no stale device is left in")
    func staleCopyRevokesBystander() throws {
        for round in 0..<12 {
            let (a, b) = try pair()
            var c = try joining(from: a, name: "c")
            var thief = b
            try c.revoke(b)
            try thief.close()
            try thief.revoke(a)
            let merged = try state(a, c, thief)
            #expect(active(merged, ["a": a, "b": b, "c": c]).isEmpty, "round \(round)")
        }
    }

    @Test("A copy revoked by a member whose admission nobody contests revokes no one but its revoker")
    func revokedCopyRevokesNoBystander() throws {
        var (a, b) = try pair()
        let c = try joining(from: a, name: "c")
        try a.hear(c)
        var thief = b
        thief = Device(context: thief.context)
        try thief.hear(c)
        try a.revoke(b)
        try thief.revoke(c)
        var merged = try state(a, c, thief)
        #expect(active(merged, ["a": a, "b": b, "c": c]) == ["a", "c"])
        try thief.revoke(a)
        merged = try state(a, c, thief)
        #expect(active(merged, ["a": a, "b": b, "c": c]) == ["c"], "a revoked b and b revoked a: both are out")
    }

    @Test("A stale copy's closing after entries of its own, which nobody saw, changes nothing: both are out")
    func staleCopyWithPrivateEntries() throws {
        let (a, b) = try pair()
        var c = try joining(from: a, name: "c")
        try c.revoke(b)
        var thief = b
        try thief.context.append(.policy(.passphrase))
        try thief.close()
        let merged = try state(a, c, thief)
        #expect(active(merged, ["a": a, "b": b, "c": c]) == ["a"])
    }

    @Test("A thief with the passphrase and an old log joins, revokes the owner who closed the door: never a member")
    func thiefRevokesCloser() throws {
        for round in 0..<12 {
            var (a, b) = try pair()
            let old = a
            try a.close()
            var thief = try joining(from: old, name: "thief")
            try thief.revoke(a)
            try thief.revoke(b)
            let merged = try state(a, b, thief)
            // b never closed anything: the thief's revocation of b does not count. Both lose: the
            // owner, whose closing knew no more than the thief, is revoked with it.
            #expect(active(merged, ["a": a, "b": b, "thief": thief]) == ["b"], "round \(round)")
        }
    }

    @Test("A thief whose old log lacks another member's entry that the closer knew is simply out, and revokes no one")
    func staleThiefRevokesNoOne() throws {
        var (a, b) = try pair()
        let old = a
        try b.context.startEpoch()
        try a.hear(b)
        try a.close()
        var thief = try joining(from: old, name: "thief")
        try thief.revoke(a)
        let merged = try state(a, b, thief)
        #expect(active(merged, ["a": a, "b": b, "thief": thief]) == ["a", "b"])
    }

    @Test("A passphrase holder with an old log closes the door on later joins: the leaked copy reads no later epoch")
    func oldLogUndoesNoRekey() throws {
        for round in 0..<12 {
            var (a, b) = try pair()
            let old = a
            // b's files leak; its owner rekeys, a rotates.
            let leaked = b
            try b.context.replaceKeys(with: DeviceKeys.generate())
            try a.hear(b)
            try a.context.startEpoch()
            // The thief makes a new vault from an old log, closes the door, and merges the leaked copy.
            var thief = try joining(from: old, name: "thief")
            try thief.close()
            var copy = leaked
            try copy.context.append(.policy(.approval))
            try a.hear(thief)
            try a.hear(copy)
            try a.context.settle()
            let merged = try a.context.state()
            #expect(!active(merged, ["thief": thief]).contains("thief"), "round \(round)")
            // b is either a member under its new keys, or out: never under the leaked ones.
            if let member = merged.member(b.id), member.isActive {
                #expect(member.keys == b.context.publicKeys, "round \(round): b is a member under leaked keys")
            }
            #expect(!copy.context.roots.keys.contains(merged.currentEpoch), "round \(round)")
            #expect(!thief.context.roots.keys.contains(merged.currentEpoch), "round \(round)")
        }
    }

    @Test("A copy racing the owner's rekey with its own gets the device revoked, and the door closes")
    func rekeyRaceClosesTheDoor() throws {
        var (a, b) = try pair()
        var copy = b
        try b.context.replaceKeys(with: DeviceKeys.generate())
        try copy.context.replaceKeys(with: DeviceKeys.generate())
        try a.hear(b)
        try a.hear(copy)
        let merged = try a.context.state()
        #expect(active(merged, ["a": a, "b": b]) == ["a"])
        #expect(merged.policy == .approval, "a passphrase join from the copy would count")
    }

    @Test("A stale copy's rotation voids no join made since the copy was taken")
    func staleRotationEvictsNoOne() throws {
        var (a, b) = try pair()
        var copy = b
        let c = try joining(from: a, name: "c")
        try a.hear(c)
        try copy.context.startEpoch()
        try a.hear(copy)
        #expect(active(try a.context.state(), ["a": a, "b": b, "c": c]) == ["a", "b", "c"])
    }

    @Test("A log made wider than an entry may name (70 concurrent joins) still takes a revocation")
    func wideLogStillTakesChanges() throws {
        var (a, b) = try pair()
        let start = a
        for index in 0..<70 { try a.hear(try joining(from: start, name: "w\(index)")) }
        #expect(a.log.heads.count > GroupEntry.maximumParents)
        try a.revoke(b)
        try a.context.append(.policy(.approval))
        let state = try a.context.state()
        #expect(!isActive(b, in: state))
        #expect(state.activeMembers.count == 71)
    }

    @Test("A device revoked as both lose seals what it writes next under its own epoch, never one the thief holds")
    func bothLoseSealsUnderOwnEpoch() throws {
        var (a, b) = try pair()
        var thief = b
        try a.revoke(b)
        let own = try a.context.currentRoot().epoch
        try thief.revoke(a)
        try a.hear(thief)
        #expect(!isActive(a, in: try a.context.state()))
        let sealing = try a.context.sealingRoot().epoch
        #expect(sealing == own)
        #expect(!thief.context.roots.keys.contains(sealing))
    }
}
