import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// What `group new` carries of the old group's keys: what its records need, never what a stolen
/// founder padded the old log with (red team round 8, N3).
@Suite("Sync group: a new group carries the keys its records need")
struct NewGroupKeysTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    func password(_ service: String) -> KeychainItem { SyncGroupFixture.password(service) }

    /// A device that asks to join `vault`'s group `reference` and is approved, synced once.
    func approvedDevice(_ name: String, into vault: Vault, group reference: GroupReference) throws -> Vault {
        let (device, request) = try Vault.requestJoin(
            at: group.directory.path(name),
            passphrase: SyncGroupFixture.passphrase,
            name: name,
            group: reference,
            configuration: group.fixture.configuration
        )
        try vault.approve(request)
        #expect(try group.exchange(vault, device, "\(name)-approved").joinedGroup)
        return device
    }

    func foundingEntry(_ vault: Vault) throws -> GroupEntry {
        let log = try vault.changeGroup("reading") { context, _, _ in context.log }
        return try #require(log.entries.first { $0.startedEpoch != nil })
    }

    @Test(
        "A stolen founder pads the old log with made-up keys: the group new founds stays small and reads the old records"
    )
    func founderPaddingDoesNotSizeNewGroup() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("original"))
        let start = group.bundle("start")
        try a.export(to: start)
        let (c, _) = try group.join("c", from: start)
        try c.rotateGroupKey()
        try c.keychain.add(password("rotated"))
        _ = try group.exchange(c, a, "c-to-a")
        // The founder's stolen copy (a modified client with a's keys) starts an epoch whose history
        // lists 3,000 made-up keys; the founder's history gives them to every member.
        try a.changeGroup("padding a founder's history") { context, _, _ in
            var padded = context.roots
            for index in 1...3000 { padded[KeyEpoch(id: UInt64(index))] = SecureBytes.random(count: 32) }
            try context.startEpoch(history: padded)
        }
        _ = try group.exchange(a, c, "padded-to-c")
        // Carried keys come only from a founding epoch's history: c learns none of them (red team
        // round 10, F3), and the group new below would carry none anyway.
        let padded = try c.changeGroup("reading") { context, _, _ in context.roots.count }
        #expect(padded < 10, "c holds \(padded) keys")

        let (fresh, leftOut) = try c.foundNewGroup()
        #expect(leftOut == 0)
        let founding = try foundingEntry(c)
        #expect(founding.encoded.count < 4096, "the founding entry is \(founding.encoded.count) bytes")
        let held = try c.changeGroup("reading") { context, _, _ in context.roots.count }
        #expect(held < 10, "c keeps \(held) keys")
        #expect(try !c.syncGroupIsFrozen())

        let d = try approvedDevice("d", into: c, group: fresh)
        #expect(try d.keychain.password(service: "original", account: "ann") == "secret")
        #expect(try d.keychain.password(service: "rotated", account: "ann") == "secret")
    }

    @Test("Records from two groups back stay readable: a key no log starts is carried because a record needs it")
    func recordsTwoGroupsBack() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("original"))
        try a.blobs.write("original.bin", data: Content.mixed(40_000, seed: 1))
        try a.rotateGroupKey()
        try a.keychain.add(password("rotated"))
        try a.blobs.write("rotated.bin", data: Content.mixed(40_000, seed: 2))
        _ = try a.startNewGroup()
        try a.keychain.add(password("first-new"))
        // The second group's log starts neither the rotated epoch nor the first new group's: only
        // the records sealed under them say they are needed.
        let second = try a.startNewGroup()
        let d = try approvedDevice("d", into: a, group: second)
        for service in ["original", "rotated", "first-new"] {
            #expect(try d.keychain.password(service: service, account: "ann") == "secret", "\(service)")
        }
        #expect(Array(try d.blobs.data("original.bin")) == Content.mixed(40_000, seed: 1))
        #expect(Array(try d.blobs.data("rotated.bin")) == Content.mixed(40_000, seed: 2))
    }

    @Test(
        "Records whose keys a new group left out are not exported: a device approved into it imports everything else (red team round 10, F2)"
    )
    func leftOutRecordsStayHome() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("original"))
        for round in 0..<3 {
            try a.rotateGroupKey()
            try a.keychain.add(password("rotated-\(round)"))
        }
        _ = try a.startNewGroup()
        try a.keychain.add(password("first-new"))
        // A second group new that may carry one key of the three rotated epochs no log starts now.
        let (second, leftOut) = try a.foundNewGroup(carryingAtMost: 1)
        #expect(leftOut == 2)
        let d = try approvedDevice("d", into: a, group: second)
        for service in ["original", "first-new"] {
            #expect(try d.keychain.password(service: service, account: "ann") == "secret", "\(service)")
        }
        let readable = (0..<3).filter { (try? d.keychain.password(service: "rotated-\($0)", account: "ann")) != nil }
        #expect(readable.count == 1, "\(readable)")
    }

    @Test("A stolen founder forks the founding epoch with made-up keys: no device takes them (red team round 11, F2)")
    func forkedFoundingEpochGivesNothing() throws {
        let a = try group.createFirst()
        try a.keychain.add(password("original"))
        try a.rotateGroupKey()
        try a.keychain.add(password("rotated"))
        let fresh = try a.startNewGroup()
        let b = try approvedDevice("b", into: a, group: fresh)
        let held = try b.changeGroup("reading") { context, _, _ in context.roots.count }
        // The founder's stolen copy signs a second epoch on the founding entries (join and policy),
        // whose history lists 500 made-up keys, and offers it to b.
        try a.changeGroup("forking the founding epoch") { context, _, _ in
            let founding = GroupLog(group: context.log.group, entries: Array(context.log.entries.prefix(2)))
            var fork = try GroupContext(
                log: founding,
                roots: context.roots,
                device: context.device,
                deviceKeys: context.deviceKeys
            )
            var padded = context.roots
            for index in 1...500 { padded[KeyEpoch(id: UInt64(index))] = SecureBytes.random(count: 32) }
            // Sealed to the founder alone, as a log requires of an epoch on the founding entries; a
            // later epoch of the founder's, sealed to b, carries its key.
            try fork.startEpoch(history: padded)
            context.adopt(try context.log.union(fork.log))
            context.learnKeys(from: fork.log)
            try context.startEpoch()
        }
        _ = try group.exchange(a, b, "fork-to-b")
        let after = try b.changeGroup("reading") { context, _, _ in context.roots.count }
        #expect(after <= held + 2, "b held \(held) keys, then \(after)")  // the two epochs started
        #expect(try b.keychain.password(service: "rotated", account: "ann") == "secret")
    }

    @Test("Past the budget, the keys that seal the fewest records are left out, and counted")
    func budgetKeepsTheMostUsedKeys() throws {
        let log = GroupLog(group: UUID())
        var held: [KeyEpoch: SecureBytes] = [.original: SecureBytes.random(count: 32)]
        for id in 1...6 { held[KeyEpoch(id: UInt64(id))] = SecureBytes.random(count: 32) }
        let records: [KeyEpoch: Int] = [
            .original: 9, KeyEpoch(id: 1): 1, KeyEpoch(id: 2): 5, KeyEpoch(id: 3): 1, KeyEpoch(id: 4): 7,
            KeyEpoch(id: 99): 50,  // a key not held opens nothing, carried or not
        ]
        let carried = NewGroupKeys(held: held, log: log, recordsByEpoch: records, budget: 2)
        #expect(Set(carried.roots.keys) == [.original, KeyEpoch(id: 4), KeyEpoch(id: 2)])
        #expect(carried.recordsLeftOut == 2)
    }

    @Test("The epoch scan reads item and chunk headers where their records keep them")
    func scanLayoutsMatchTheRecords() {
        let sizes = Dictionary(uniqueKeysWithValues: RecordEpochs.layouts.map { ($0.table, $0.fixedHeaderSize) })
        #expect(sizes[\Schema.items] == ItemRecord.headerSize)
        #expect(sizes[\Schema.chunks] == ChunkRecord.headerSize)
    }
}
