import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of a sync group with an adversary among its devices (issue 37).
///
/// Three to five honest devices change records and membership (approvals, rotations, rekeys,
/// switching to approval-only, revocations) and exchange bundles in random orders, some lost, some
/// replayed from a pool of every bundle ever made. One device is stolen at a random step: from then on
/// the thief holds its vault and file copies of it taken earlier, knows the passphrase, keeps every
/// bundle, and acts: it writes records, revokes honest members (racing the owner), forges epochs under
/// the ids of real ones with keys of its own and signs rekeys on old entries, seals junk under the ids
/// of the honest devices' chunks it holds (a modified client), makes new vaults
/// from any old bundle with the passphrase, and offers all of it, and old bundles, to anyone. At a
/// random later step an honest member revokes the stolen device and every device the thief made that
/// it sees as a member.
///
/// After every step:
/// - no vault of the thief holds the key of an epoch that an honest log started knowing the
///   revocation of a device of the thief's;
/// - no honest device that knew of that revocation accepted a bundle of the thief's.
/// At the end, after exchanges among the honest members that are still members, they agree on the
/// log, the epoch and the records, and each reads every blob whole. The seed is printed on failure; `COFFER_GROUP_ADVERSARY_SEEDS` (a
/// count, or a comma-separated list) runs more, as `Tools/sync-model` does.
@Suite("Randomized model: a sync group with a thief among its devices")
struct GroupAdversaryModelTests {
    static var seeds: [UInt64] {
        ModelSeeds.seeds("COFFER_GROUP_ADVERSARY_SEEDS", defaults: Array(1...6))
    }

    @Test(
        "random membership changes, a theft, replays and races; revoked means out, honest members agree",
        arguments: seeds
    )
    func adversary(seed: UInt64) throws {
        let model = try AdversaryModel(seed: seed)
        for step in 0..<70 {
            do {
                try model.step(step)
                model.checkInvariants(step)
            } catch {
                Issue.record("seed \(seed), step \(step): \(error)")
                throw error
            }
        }
        try model.settleAndCompare()
    }
}

/// The state of one run of ``GroupAdversaryModelTests``.
final class AdversaryModel {
    /// One vault of the model and who holds it.
    final class Device {
        var vault: Vault
        let directory: URL
        let thief: Bool
        /// A thief's device that seals junk under the ids of every chunk it holds before each export.
        var forges = false
        init(_ vault: Vault, directory: URL, thief: Bool) {
            self.vault = vault
            self.directory = directory
            self.thief = thief
        }
    }

    let seed: UInt64
    var random: SplitMix64
    let group: SyncGroupFixture
    var names = 0
    var pool: [(url: URL, byThief: Bool)] = []
    var devices: [Device] = []
    /// The stolen device's id, once stolen.
    var stolen: UUID?
    /// The ids of every device of the thief's.
    var thiefIdentities: Set<UUID> = []
    /// File copies of the device that will be stolen, taken before the theft.
    var stolenCopies: [URL] = []
    /// The index of the honest device that will be stolen.
    var owned: Int?
    var revokedThief = false
    var approvals = 0

    init(seed: UInt64) throws {
        self.seed = seed
        random = SplitMix64(seed: seed)
        group = try SyncGroupFixture()
        // The group: a founder and two to four devices joined by passphrase.
        let founder = try group.createFirst()
        devices = [Device(founder, directory: group.directory.path("vault"), thief: false)]
        for _ in 0..<(2 + pick(3)) {
            let name = freshName("p")
            let (vault, _) = try group.join(name, from: try export(devices[0]))
            devices.append(Device(vault, directory: group.directory.path(name), thief: false))
            _ = try devices[0].vault.import(from: try export(devices[devices.count - 1]))
        }
        for device in devices.dropFirst() { _ = try device.vault.import(from: try export(devices[0])) }
        owned = 1 + pick(devices.count - 1)
    }

    func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }

    func freshName(_ prefix: String) -> String {
        names += 1
        return "\(prefix)\(names)"
    }

    func export(_ device: Device) throws -> URL {
        if device.forges { _ = try? device.vault.forgeChunkRecords { Array($0.reversed()) + [1] } }
        let url = group.bundle(freshName("b"))
        try device.vault.export(to: url)
        pool.append((url, device.thief))
        return url
    }

    func isMember(_ id: UUID, in vault: Vault) -> Bool {
        ((try? vault.members())?.first { $0.deviceID == id }?.isActive) ?? false
    }

    func knowsRevocation(_ vault: Vault) -> Bool {
        guard let stolen, let members = try? vault.members() else { return false }
        return members.contains { $0.deviceID == stolen && !$0.isActive }
    }

    /// Imports, accepting the refusals a group in flux gives; an honest device that knew of the
    /// revocation must refuse every bundle of the thief's.
    func offer(_ url: URL, to device: Device, byThief: Bool) throws {
        let knew = !device.thief && byThief && knowsRevocation(device.vault)
        let refusal: CofferError?
        do {
            _ = try device.vault.import(from: url)
            refusal = nil
        } catch {
            refusal = error
        }
        // A bundle of the thief's carrying junk under a chunk's id is refused as damaged (`.decode`).
        let expected: [CofferError.Code] =
            byThief ? [.notTrusted, .keyUnavailable, .param, .decode] : [.notTrusted, .keyUnavailable, .param]
        if let refusal, !expected.contains(refusal.code) { throw refusal }
        if refusal == nil, knew {
            Issue.record("seed \(seed): an honest device that knew of the revocation accepted a bundle of the thief's")
        }
    }

    func copyVault(_ device: Device, to name: String) throws -> URL {
        device.vault.close()
        let target = group.directory.path(name)
        try FileManager.default.copyItem(at: device.directory, to: target)
        device.vault = try openVault(device.directory)
        return target
    }

    func openVault(_ directory: URL) throws -> Vault {
        let vault = try Vault.open(at: directory, configuration: group.fixture.configuration)
        try vault.unlock(passphrase: SyncGroupFixture.passphrase)
        return vault
    }

    /// Every epoch an honest device started knowing that `device` was out: revoked, or admitted by an
    /// entry without effect (a join from an old bundle concurrent with a revocation). A member that
    /// had not heard of that yet rightly seals its epochs to it; those that knew must never reach it.
    func epochsStartedKnowingOut(_ device: UUID) -> Set<KeyEpoch> {
        var epochs = Set<KeyEpoch>()
        for honest in devices where !honest.thief {
            guard let stored = try? honest.vault.readMetaIfPresent(GroupContext.Meta.log),
                let log = try? GroupLog(group: honest.vault.syncGroupID, decoding: stored),
                let graph = try? GroupGraph(log.entries, group: log.group)
            else { continue }
            let admissions = log.entries.indices.filter { log.entries[$0].admittedDevice == device }
            for (index, entry) in log.entries.enumerated() {
                guard let epoch = entry.startedEpoch,
                    admissions.contains(where: { graph.ancestors[index].contains($0) }),
                    GroupState(graph: graph, members: graph.ancestors[index]).member(device)?.isActive != true
                else { continue }
                epochs.insert(epoch)
            }
        }
        return epochs
    }

    func checkInvariants(_ step: Int) {
        for device in devices where device.thief {
            // By key, not by id: a thief may hold a key of its own under a real epoch's id (a forgery).
            let keys = try? device.vault.keyRing()
            for epoch in epochsStartedKnowingOut(device.vault.deviceID) {
                guard let held = try? keys?.root(.sync, epoch: epoch) else { continue }
                // The real key of an epoch is the one that commits to its id: an honest device that
                // heard the thief's forgery first holds the forged key under that id until the real
                // one reaches it (and seals nothing with it), so holding the same key as an honest
                // device is no leak unless that key is the real one.
                #expect(
                    GroupKeys.committedEpoch(for: held, group: device.vault.syncGroupID) != epoch,
                    "seed \(seed), step \(step): a vault of the thief's holds the key of epoch \(epoch), started after it was known to be out"
                )
            }
        }
    }

    /// A random honest device that is a member in its own eyes, if one is.
    func honestMember() -> Device? {
        let honest = devices.filter { !$0.thief && isMember($0.vault.deviceID, in: $0.vault) }
        return honest.isEmpty ? nil : honest[pick(honest.count)]
    }

    func step(_ number: Int) throws {
        let honest = devices.filter { !$0.thief }
        let thieves = devices.filter(\.thief)
        switch random.next() % 33 {
        case 0...5:  // an honest edit: an item, or now and then a small blob
            guard let member = honestMember() else { return }
            if random.next() % 3 == 0 {
                try member.vault.blobs.write(
                    "f\(pick(3))",
                    data: Data(SplitMix64.bytes(3_000 + pick(9_000), seed: random.next()))
                )
            } else {
                try member.vault.keychain.setPassword(
                    "v\(random.next() % 1000)",
                    service: "s\(pick(5))",
                    account: "ann",
                    scope: .syncable
                )
            }
        case 6...15:  // an exchange between two devices, sometimes lost, honest or not
            let from = devices[pick(devices.count)]
            let to = devices[pick(devices.count)]
            guard from !== to else { return }
            let url = try export(from)
            if random.next() % 6 != 0 { try offer(url, to: to, byThief: from.thief) }
        case 16...17:  // a replay of any old bundle to anyone
            guard !pool.isEmpty else { return }
            let (url, byThief) = pool[pick(pool.count)]
            try offer(url, to: devices[pick(devices.count)], byThief: byThief)
        case 18:
            try honestMember()?.vault.rotateGroupKey()
        case 19:
            try honestMember()?.vault.rekey(passphrase: SyncGroupFixture.passphrase)
        case 20:
            try honestMember()?.vault.setJoinPolicy(.approval)
        case 31:  // an honest device joins by passphrase from a member's fresh bundle, while it may
            guard approvals < 3, let member = honestMember(), (try? member.vault.joinPolicy()) == .passphrase else {
                return
            }
            approvals += 1
            let name = freshName("j")
            guard
                let joined = try? Vault.join(
                    bundle: try export(member),
                    at: group.directory.path(name),
                    passphrase: SyncGroupFixture.passphrase,
                    configuration: group.fixture.configuration
                )
            else { return }
            devices.append(Device(joined.vault, directory: group.directory.path(name), thief: false))
        case 21:  // an honest device approved by a member
            guard approvals < 2, let member = honestMember() else { return }
            approvals += 1
            let name = freshName("r")
            let (vault, request) = try Vault.requestJoin(
                at: group.directory.path(name),
                passphrase: SyncGroupFixture.passphrase,
                configuration: group.fixture.configuration
            )
            try member.vault.approve(request)
            _ = try vault.import(from: try export(member))
            devices.append(Device(vault, directory: group.directory.path(name), thief: false))
        case 22:  // a backup copy of the device that will be stolen
            guard stolen == nil, let owned else { return }
            stolenCopies.append(try copyVault(devices[owned], to: freshName("copy")))
        case 23:  // the theft
            guard stolen == nil, let index = owned else { return }
            let thief = Device(devices[index].vault, directory: devices[index].directory, thief: true)
            // Half the thieves run a modified client that forges chunk records from the start.
            thief.forges = random.next() % 2 == 0
            devices[index] = thief
            stolen = thief.vault.deviceID
            thiefIdentities.insert(thief.vault.deviceID)
            for copy in stolenCopies { devices.append(Device(try openVault(copy), directory: copy, thief: true)) }
            owned = nil
        case 24...25:  // the owner notices: a member revokes every device of the thief's it sees
            guard stolen != nil, let member = honestMember() else { return }
            for id in thiefIdentities where isMember(id, in: member.vault) {
                try member.vault.revoke(device: id)
            }
            revokedThief = true
        case 26...28:  // the thief writes, rekeys, closes the door or revokes an honest member (racing the owner)
            guard !thieves.isEmpty else { return }
            let thief = thieves[pick(thieves.count)]
            let choice = random.next() % 10
            if choice == 9 {
                // A modified client: junk sealed under the ids of the chunks it holds, which its
                // bundles carry from now on (red team round 41, F1).
                thief.forges = true
            } else if choice == 8 {
                // A modified client: a rekey signed on the device's own admission, so that
                // everything the device did since is concurrent with it (red team round 26, F1).
                _ = try? thief.vault.signStaleRekey()
            } else if choice == 7 {
                // A modified client: an epoch under the id of an honest device's current one (every
                // bundle header shows it), with a key of its own.
                guard !honest.isEmpty, let real = try? honest[pick(honest.count)].vault.keyRing().currentEpoch(.sync),
                    !real.isOriginal
                else { return }
                _ = try? thief.vault.forgeEpoch(real)
            } else if choice >= 5 {
                // A stale copy closing the door on devices that joined since it was taken.
                try? thief.vault.setJoinPolicy(.approval)
            } else if choice == 4 {
                _ = try? thief.vault.rekey(passphrase: SyncGroupFixture.passphrase)
            } else if choice < 2 {
                try? thief.vault.keychain.setPassword(
                    "planted",
                    service: "plant\(pick(3))",
                    account: "ann",
                    scope: .syncable
                )
            } else if !honest.isEmpty {
                _ = try? thief.vault.revoke(device: honest[pick(honest.count)].vault.deviceID)
            }
        case 29...30:  // the thief makes a new vault from any old bundle, with the passphrase
            guard revokedThief, !pool.isEmpty else { return }
            let url = pool[pick(pool.count)].url
            let name = freshName("t")
            let joined = try? Vault.join(
                bundle: url,
                at: group.directory.path(name),
                passphrase: SyncGroupFixture.passphrase,
                configuration: group.fixture.configuration
            )
            guard let vault = joined?.0 else { return }
            thiefIdentities.insert(vault.deviceID)
            devices.append(Device(vault, directory: group.directory.path(name), thief: true))
        case 32:  // the thief's device offers its bundle to an honest one
            guard !thieves.isEmpty, !honest.isEmpty else { return }
            try offer(try export(thieves[pick(thieves.count)]), to: honest[pick(honest.count)], byThief: true)
        default:
            return
        }
    }

    /// Exchanges among the honest devices until they settle, then compares the members among them.
    func settleAndCompare() throws {
        let honest = devices.filter { !$0.thief }
        for round in 0..<4 {
            for from in honest {
                for to in honest where to !== from {
                    guard let url = try? export(from) else { continue }
                    try offer(url, to: to, byThief: false)
                }
            }
            checkInvariants(1000 + round)
        }
        // The members are the honest devices active in the union of every honest log.
        var union: GroupLog?
        for device in honest {
            guard let stored = try device.vault.readMetaIfPresent(GroupContext.Meta.log) else { continue }
            let log = try GroupLog(group: device.vault.syncGroupID, decoding: stored)
            union = try union?.union(log) ?? log
        }
        let active = Set(try union?.state(roots: { _ in nil }).activeMembers.map(\.device) ?? [])
        let members = honest.filter { active.contains($0.vault.deviceID) }
        if ProcessInfo.processInfo.environment["COFFER_MODEL_DEBUG"] != nil {
            for device in honest {
                let log = try GroupLog(
                    group: device.vault.syncGroupID,
                    decoding: try device.vault.readMetaIfPresent(GroupContext.Meta.log) ?? []
                )
                let state = try log.state(roots: { _ in nil })
                print(
                    "device \(device.vault.deviceID.uuidString.prefix(4)) entries \(log.entries.count) active \(state.activeMembers.map { $0.device.uuidString.prefix(4) }) epoch \(state.currentEpoch) needs \(state.needsNewEpoch) holds \((try? device.vault.keyRing().epochs(.sync)) ?? [])"
                )
            }
        }
        guard let reference = members.first else {
            print("group adversary model: seed \(seed), \(devices.count) vaults, no honest member left")
            return
        }
        let referenceLog = try reference.vault.readMetaIfPresent(GroupContext.Meta.log)
        for device in members {
            #expect(
                try device.vault.readMetaIfPresent(GroupContext.Meta.log) == referenceLog,
                "seed \(seed): the logs differ"
            )
            #expect(
                try device.vault.keyRing().currentEpoch(.sync) == reference.vault.keyRing().currentEpoch(.sync),
                "seed \(seed): the epochs differ"
            )
            #expect(
                try device.vault.syncableState() == reference.vault.syncableState(),
                "seed \(seed): the records differ"
            )
            #expect(try device.vault.blobs.verify(readingData: true).isHealthy, "seed \(seed): a blob does not read")
        }
        print("group adversary model: seed \(seed), \(devices.count) vaults, \(members.count) honest members agree")
    }
}
