import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A replay decides each entry's past from the last one's where it can (``GroupPasts``, red team round
/// 11, F3): on random logs of joins, policies, revocations and rekeys (a leaked copy's included), on
/// branches that go back and forth, every answer must be the one deciding each set of entries at once
/// gives.
@Suite("Sync group: a log's replay means what deciding every entry's past at once means")
struct GroupPastsTests {
    /// A device of a random log: its id and every generation of its keys (a rekey adds one, and a
    /// leaked copy may still sign with an older one).
    struct Device {
        let id: UUID
        var keys: [DeviceKeys]
    }

    static let seeds = ModelSeeds.seeds("COFFER_GROUP_MODEL_SEEDS", defaults: [1, 2, 3, 4, 5, 6, 7, 8])

    @Test("Random logs: the replay's state, and every entry's past, match deciding them at once", arguments: seeds)
    func randomLogs(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let group = UUID()
        let root = SecureBytes.random(count: 32)
        let roots: (KeyEpoch) -> SecureBytes? = { $0 == .original ? root : nil }
        let founder = Device(id: UUID(), keys: [DeviceKeys.generate()])
        var devices = [founder]
        var log = GroupLog(group: group)
        log = try extended(
            log,
            with: try join(founder, parents: [GroupEntry.anchor(group: group)], root: root, group: group)
        )
        var attempts = 0
        while log.entries.count < 48, attempts < 400 {
            attempts += 1
            let parents = randomParents(of: log, &random)
            let candidate: GroupEntry
            var newDevice: Device?
            switch random.next() % 8 {
            case 0, 1:
                let device = Device(id: UUID(), keys: [DeviceKeys.generate()])
                let forged = random.next() % 8 == 0
                candidate = try join(
                    device,
                    parents: parents,
                    root: forged ? SecureBytes.random(count: 32) : root,
                    group: group
                )
                newDevice = device
            case 2, 3:
                let author = devices[Int(random.next() % UInt64(devices.count))]
                let policy: GroupJoinPolicy = random.next() % 2 == 0 ? .approval : .passphrase
                candidate = try entry(.policy(policy), by: author, parents: parents, group: group, &random)
            case 4, 5:
                let author = devices[Int(random.next() % UInt64(devices.count))]
                let target = devices[Int(random.next() % UInt64(devices.count))]
                candidate = try entry(
                    .revoked(device: target.id, clock: 1),
                    by: author,
                    parents: parents,
                    group: group,
                    &random
                )
            case 6:
                let position = Int(random.next() % UInt64(devices.count))
                let fresh = DeviceKeys.generate()
                let keys = DevicePublicKeys(
                    agreement: try fresh.agreement.publicKey(),
                    signing: try fresh.signing.publicKey()
                )
                let possession = try fresh.signing.signature(
                    of: GroupEntry.possessionMessage(
                        group: group,
                        parents: parents,
                        author: devices[position].id,
                        keys: keys
                    )
                )
                candidate = try entry(
                    .keysReplaced(keys: keys, possession: possession),
                    by: devices[position],
                    parents: parents,
                    group: group,
                    &random
                )
                devices[position].keys.append(fresh)
            default:
                let author = devices[Int(random.next() % UInt64(devices.count))]
                candidate = try entry(.policy(.passphrase), by: author, parents: parents, group: group, &random)
            }
            let offered = try extended(log, with: candidate)
            GroupLog.forgetCheckedEntries()
            let fast = Result { () throws(CofferError) in try offered.state(roots: roots) }
            let reference = Result { () throws(CofferError) in try Self.referenceState(offered, roots: roots) }
            switch (fast, reference) {
            case (.success(let fast), .success(let reference)):
                try Self.expectSame(fast, reference, seed: seed)
                log = offered
                if let newDevice { devices.append(newDevice) }
            case (.failure(let fast), .failure(let reference)):
                #expect(fast.message == reference.message, "seed \(seed)")
            default:
                Issue.record("seed \(seed): the replay says \(fast), deciding at once says \(reference)")
                return
            }
        }
        try Self.expectPastsMatch(log, &random, seed: seed)
    }

    /// The log with `entry`, in canonical order.
    func extended(_ log: GroupLog, with entry: GroupEntry) throws -> GroupLog {
        try log.union(GroupLog(group: log.group, entries: [entry]))
    }

    /// Mostly the log's heads (a chain, or a merge), else one to three entries picked at random (a
    /// branch, or a stale copy's place).
    func randomParents(of log: GroupLog, _ random: inout SplitMix64) -> [[UInt8]] {
        if random.next() % 3 != 0 { return Array(log.heads.prefix(GroupEntry.maximumParents)) }
        let picks = (0..<(1 + Int(random.next() % 3))).map { _ in
            log.entries[Int(random.next() % UInt64(log.entries.count))].hash
        }
        return Array(Set(picks)).sorted { $0.lexicographicallyPrecedes($1) }
    }

    func join(_ device: Device, parents: [[UInt8]], root: SecureBytes, group: UUID) throws -> GroupEntry {
        let keys = device.keys[0]
        let publicKeys = DevicePublicKeys(
            agreement: try keys.agreement.publicKey(),
            signing: try keys.signing.publicKey()
        )
        let name = "d" + device.id.uuidString.prefix(4)
        let message = GroupEntry.proofMessage(
            previous: GroupEntry.placeDigest(parents),
            author: device.id,
            keys: publicKeys,
            name: name,
            epoch: .original
        )
        return try GroupEntry(
            change: .joined(
                keys: publicKeys,
                name: name,
                epoch: .original,
                proof: try GroupKeys.proof(of: message, root: root)
            ),
            parents: parents,
            author: device.id,
            signing: keys.signing,
            group: group,
            time: Date(timeIntervalSince1970: 1_800_000_000)
        )
    }

    /// An entry by `author`, signed with its latest keys or, now and then, an older generation (a
    /// leaked copy).
    func entry(
        _ change: GroupEntry.Change,
        by author: Device,
        parents: [[UInt8]],
        group: UUID,
        _ random: inout SplitMix64
    ) throws -> GroupEntry {
        let generation = random.next() % 4 == 0 ? Int(random.next() % UInt64(author.keys.count)) : author.keys.count - 1
        return try GroupEntry(
            change: change,
            parents: parents,
            author: author.id,
            signing: author.keys[generation].signing,
            group: group,
            time: Date(timeIntervalSince1970: 1_800_000_000 + Double(random.next() % 1000))
        )
    }

    /// ``GroupLog/state(roots:)`` done the straightforward way: each entry checked against its past
    /// decided at once, and the whole log decided at once.
    static func referenceState(
        _ log: GroupLog,
        roots: (KeyEpoch) -> SecureBytes?
    ) throws(CofferError) -> (
        state: GroupState, unproven: Set<[UInt8]>
    ) {
        let graph = try GroupGraph(log.entries, group: log.group)
        var unproven = EntrySet(count: log.entries.count)
        var unconfirmed: [Int] = []
        for index in log.entries.indices {
            let past = GroupState(graph: graph, members: graph.ancestors[index])
            let unsure = Set(
                unconfirmed.filter { graph.ancestors[index].contains($0) }.compactMap { log.entries[$0].admittedDevice }
            )
            switch try past.check(log.entries[index], index: index, group: log.group, roots: roots, unsure: unsure) {
            case .checked: break
            case .proofUnchecked: unconfirmed.append(index)
            case .proofFailed:
                unproven.insert(index)
                unconfirmed.append(index)
            }
        }
        let state = GroupState(graph: graph, members: graph.everything, unproven: unproven)
        return (state, Set(unproven.map { log.entries[$0].hash }))
    }

    static func expectSame(
        _ fast: GroupState,
        _ reference: (state: GroupState, unproven: Set<[UInt8]>),
        seed: UInt64
    ) throws {
        #expect(fast.members == reference.state.members, "seed \(seed)")
        #expect(fast.policy == reference.state.policy, "seed \(seed)")
        #expect(fast.currentEpoch == reference.state.currentEpoch, "seed \(seed)")
        #expect(fast.epochs == reference.state.epochs, "seed \(seed)")
        #expect(fast.needsNewEpoch == reference.state.needsNewEpoch, "seed \(seed)")
        #expect(fast.voided == reference.state.voided, "seed \(seed)")
        #expect(fast.unprovenJoins == reference.unproven, "seed \(seed)")
    }

    /// Every entry's past, and every entry with its past, asked of one replay in canonical order and of
    /// another in random order (which walks back further), decide as deciding them at once does.
    static func expectPastsMatch(_ log: GroupLog, _ random: inout SplitMix64, seed: UInt64) throws {
        let graph = try GroupGraph(log.entries, group: log.group)
        var inOrder = GroupPasts(graph: graph)
        var shuffled = GroupPasts(graph: graph)
        var order = Array(log.entries.indices)
        order.shuffle(using: &random)
        for index in log.entries.indices + order {
            var withIt = graph.ancestors[index]
            withIt.insert(index)
            for subset in [graph.ancestors[index], withIt] {
                let expected = GroupEffect(graph: graph, subset: subset).effective
                #expect(inOrder.effect(of: subset) == expected, "seed \(seed), entry \(index)")
                #expect(shuffled.effect(of: subset) == expected, "seed \(seed), entry \(index)")
            }
            let past = GroupState(graph: graph, members: graph.ancestors[index])
            for replayed in [inOrder.state(before: index), shuffled.state(before: index)] {
                #expect(replayed.members == past.members, "seed \(seed), entry \(index)")
                #expect(replayed.policy == past.policy, "seed \(seed), entry \(index)")
                #expect(replayed.currentEpoch == past.currentEpoch, "seed \(seed), entry \(index)")
            }
        }
    }
}
