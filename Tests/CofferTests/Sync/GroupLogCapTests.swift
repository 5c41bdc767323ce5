import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A stolen member's copy that fills the membership log with valid entries, so that no revocation
/// fits (red team round 4, N2): the group freezes, and nothing written afterwards reaches the thief
/// (docs/FORMAT.md, "A full log freezes the group").
@Suite("Sync group: a full membership log freezes the group")
struct GroupLogCapTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    func password(_ service: String) -> KeychainItem { SyncGroupFixture.password(service) }

    /// `a` founded the group, `b` and `c` joined by passphrase, and everyone knows everyone.
    func foundedTrio() throws -> (a: Vault, b: Vault, c: Vault) {
        let a = try group.createFirst()
        try a.keychain.add(password("before"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        let (c, _) = try group.join("c", from: start)
        _ = try group.exchange(b, a, "b-to-a")
        _ = try group.exchange(c, a, "c-to-a")
        _ = try group.exchange(a, b, "a-to-b")
        _ = try group.exchange(a, c, "a-to-c")
        return (a, b, c)
    }

    func flood(_ thief: Vault, to total: Int) throws { try thief.floodGroupLog(to: total) }

    func logCount(_ vault: Vault) throws -> Int {
        try GroupLog(group: vault.syncGroupID, decoding: try vault.readMetaIfPresent(GroupContext.Meta.log) ?? [])
            .entries.count
    }

    @Test("A thief fills the log to its cap: revocations fail, and the group is frozen so it reads nothing new")
    func fullLogFreezes() throws {
        let (a, b, c) = try foundedTrio()
        try flood(b, to: GroupLog.maximumEntries)
        let imported = try group.exchange(b, a, "flood-to-a")
        #expect(imported.groupLogFull)
        #expect(try a.syncGroupIsFrozen())
        #expect(try !c.syncGroupIsFrozen())
        // No revocation fits, and the message says what to do.
        let refused = #expect(throws: CofferError.self) { try a.revoke(device: b.deviceID) }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains("`vault.startNewGroup()`") == true, "\(refused?.message ?? "")")
        #expect(try logCount(a) == GroupLog.maximumEntries)
        // What a writes now goes to no one: its bundle carries the log alone.
        try a.keychain.add(password("after"))
        let toThief = group.bundle("a-to-thief")
        let exported = try a.export(to: toThief, peer: "b")
        #expect(exported.groupLogFull)
        #expect(exported.records.total == 0 && exported.chunks == 0)
        _ = try b.import(from: toThief)
        #expect(try b.keychain.password(service: "after", account: "ann") == nil)
        // The log-only bundle tells c, which the thief kept in the dark: c is frozen too.
        let toC = group.bundle("a-to-c-frozen")
        try a.export(to: toC, peer: "c")
        // With c's own entries (its acknowledgement of b's join) the union would not fit: c refuses
        // the bundle as one that overflows its log, which freezes it just the same.
        switch Result(catching: { () throws(CofferError) in try c.import(from: toC) }) {
        case .success(let told): #expect(told.groupLogFull)
        case .failure(let error): #expect(error.message.contains("more entries with effect than a log may"), "\(error)")
        }
        #expect(try c.syncGroupIsFrozen())
        try c.keychain.add(password("after-c"))
        let fromC = try c.export(to: group.bundle("c-after"))
        #expect(fromC.groupLogFull && fromC.records.total == 0)
        // A peer's cursor did not move: nothing was sent.
        let again = try a.export(to: group.bundle("a-again"), peer: "b")
        #expect(again.firstSequence == exported.firstSequence)
        // A new group founded on a trusted device is not frozen.
        _ = try a.startNewGroup()
        #expect(try !a.syncGroupIsFrozen())
        let fresh = try a.export(to: group.bundle("new-group"))
        #expect(!fresh.groupLogFull && fresh.records.total > 0)
    }

    @Test("A log without room for a revocation is full: the member that imports it is frozen")
    func noRoomToRevoke() throws {
        let (a, b, _) = try foundedTrio()
        try flood(b, to: GroupLog.maximumEntries - 1)
        let imported = try group.exchange(b, a, "flood-to-a")
        #expect(imported.groupLogFull)
        #expect(throws: CofferError.self) { try a.revoke(device: b.deviceID) }
        try a.keychain.add(password("after"))
        #expect(try a.export(to: group.bundle("after")).records.total == 0)
    }

    @Test("A log with room for one revocation and its epoch: the revocation shuts the thief out, and the group freezes")
    func revocationThatFits() throws {
        let (a, b, _) = try foundedTrio()
        try flood(b, to: GroupLog.maximumEntries - GroupLog.entriesToRevoke)
        let imported = try group.exchange(b, a, "flood-to-a")
        #expect(!imported.groupLogFull)
        // One entry more and it would be full.
        #expect(
            try GroupLog(group: a.syncGroupID, decoding: try a.readMetaIfPresent(GroupContext.Meta.log) ?? []).isFull
                == false
        )
        try a.revoke(device: b.deviceID)
        #expect(try a.members().first { $0.deviceID == b.deviceID }?.isActive == false)
        #expect(try a.syncGroupIsFrozen())
        try a.keychain.add(password("after"))
        #expect(try a.export(to: group.bundle("after")).records.total == 0)
    }

    @Test("A thief keeps a member in the dark: its log and a frozen member's cannot both fit, so it freezes too")
    func overflowFreezes() throws {
        let (a, b, c) = try foundedTrio()
        try flood(b, to: GroupLog.maximumEntries)
        _ = try group.exchange(b, a, "flood-to-a")
        // c, never sent the flood, changes the policy meanwhile.
        try c.setJoinPolicy(.approval)
        let bundle = group.bundle("a-to-c")
        try a.export(to: bundle, peer: "c")
        let refused = #expect(throws: CofferError.self) { try c.import(from: bundle) }
        #expect(
            refused?.message.contains("more entries with effect than a log may") == true,
            "\(refused?.message ?? "")"
        )
        #expect(try c.syncGroupIsFrozen())
        try c.keychain.add(password("after-c"))
        let fromC = try c.export(to: group.bundle("c-after"))
        #expect(fromC.groupLogFull && fromC.records.total == 0)
    }

    @Test(
        "A leaked copy's filler, signed with keys its owner has replaced since, freezes no one: it has no effect (red team round 7, F2)"
    )
    func rekeyedCopysFillerIsJunk() throws {
        let (a, b, _) = try foundedTrio()
        let (owner, leak) = try group.leakThenRekey(b, name: "b")
        _ = try group.exchange(owner, a, "rekeyed-to-a")
        try flood(leak, to: GroupLog.maximumEntries)
        let bundle = group.bundle("leak-to-a")
        try leak.export(to: bundle)
        let refused = #expect(throws: CofferError.self) { try a.import(from: bundle) }
        #expect(refused?.message.contains("have no effect") == true, "\(refused?.message ?? "")")
        #expect(try !a.syncGroupIsFrozen())
        try a.keychain.add(password("after"))
        #expect(try a.export(to: group.bundle("a-after")).records.total > 0)
    }

    @Test("Outsiders' joins that no one can prove never count toward a full log")
    func outsidersCannotFreeze() throws {
        let (a, b, _) = try foundedTrio()
        try flood(b, to: GroupLog.maximumEntries - 8)
        _ = try group.exchange(b, a, "flood-to-a")
        let seen = try a.changeGroup("reading") { context, _, _ in context }
        let crafted = try seen.withOutsiders(12, closing: false)
        #expect(crafted.entries.count > GroupLog.maximumEntries)
        #expect(!seen.overflows(with: crafted))
        #expect(try !a.syncGroupIsFrozen())
    }

    @Test("An epoch whose history lists made-up keys: no member holds them or passes them on (red team round 6, C1)")
    func madeUpHistoryKeys() throws {
        let (a, b, _) = try foundedTrio()
        // A modified client on b starts an epoch whose history carries 2,000 made-up keys, each
        // under an id that commits to it.
        try b.changeGroup("starting an epoch with a padded history") { context, _, _ in
            var padded = context.roots
            for _ in 0..<2000 {
                let key = SecureBytes.random(count: 32)
                padded[try #require(GroupKeys.committedEpoch(for: key, group: context.log.group))] = key
            }
            try context.startEpoch(history: padded)
        }
        _ = try group.exchange(b, a, "padded-to-a")
        let held = try a.changeGroup("reading") { context, _, _ in context }
        #expect(Set(held.roots.keys).isSubset(of: held.log.startedEpochs), "a holds only keys of epochs the log starts")
        // A revocation and its epoch stay small: the new history carries only real keys.
        try a.revoke(device: b.deviceID)
        let log = try a.changeGroup("reading") { context, _, _ in context.log }
        let newest = try #require(log.entries.last { $0.startedEpoch != nil })
        #expect(newest.encoded.count < 4096, "the new epoch's entry is \(newest.encoded.count) bytes")
    }

    @Test(
        "A stolen founder pads a history with made-up keys: devices approved into a group made with group new still read its old records (red team round 7, F1)"
    )
    func founderPaddingCrowdsOutNothing() throws {
        let (a, b, _) = try foundedTrio()
        try a.revoke(device: b.deviceID)
        try a.keychain.add(password("between"))
        let fresh = try a.startNewGroup()
        // The founder's stolen copy (a modified client with a's keys) starts an epoch whose history
        // lists 5,000 made-up keys under the smallest epoch ids.
        try a.changeGroup("padding a founder's history") { context, _, _ in
            var padded = context.roots
            for index in 1...5000 { padded[KeyEpoch(id: UInt64(index))] = SecureBytes.random(count: 32) }
            try context.startEpoch(history: padded)
        }
        // A device approved now reads what was sealed in the old group's later epoch.
        let ofGroup = group.bundle("of-new-group")
        try a.export(to: ofGroup)
        let (c, request) = try Vault.requestJoin(
            at: group.directory.path("c-new"),
            passphrase: SyncGroupFixture.passphrase,
            name: "c-new",
            group: fresh,
            configuration: group.fixture.configuration
        )
        try a.approve(request)
        #expect(try group.exchange(a, c, "a-to-c").joinedGroup)
        #expect(try c.keychain.password(service: "between", account: "ann") == "secret")
        // Later epochs carry only keys of epochs the log starts.
        try a.rotateGroupKey()
        let log = try a.changeGroup("reading") { context, _, _ in context.log }
        let newest = try #require(log.entries.last { $0.startedEpoch != nil })
        #expect(newest.encoded.count < 4096, "the new epoch's entry is \(newest.encoded.count) bytes")
    }
}

extension GroupContext {
    /// A modified client: starts a committed epoch sealed to every active member whose history
    /// lists `history` (any keys, made-up ones among them), and holds its key.
    mutating func startEpoch(history keys: [KeyEpoch: SecureBytes]) throws {
        let root = SecureBytes.random(count: 32)
        let epoch = try #require(GroupKeys.committedEpoch(for: root, group: log.group))
        var boxes: [UUID: [UInt8]] = [:]
        for member in try state().activeMembers {
            boxes[member.device] = try GroupKeys.box(root, epoch: epoch, to: member.keys, group: log.group)
        }
        try append(
            .epochStarted(
                epoch: epoch,
                boxes: boxes,
                history: try GroupKeys.sealHistory(keys, under: root, epoch: epoch, group: log.group)
            )
        )
        learnKeys(from: log)  // its own box
    }
}
