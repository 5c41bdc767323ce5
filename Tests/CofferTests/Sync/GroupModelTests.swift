import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of a sync group changing its membership while its devices change records:
/// random approvals, revocations, rotations and edits on random devices, bundles exchanged in random
/// orders (some never delivered), then a few rounds of exchanges; every active member must end with
/// the same log, the same epoch and the same syncable records. The seed is printed on failure;
/// `COFFER_GROUP_MODEL_SEEDS` (a count, or a comma-separated list) runs more, as `Tools/sync-model`
/// does.
@Suite("Randomized model: membership changes and edits on many devices converge")
struct GroupModelTests {
    enum Step {
        case edit(device: Int, service: Int)
        case approveNew(by: Int)
        case revoke(by: Int, target: Int)
        case rotate(by: Int)
        case exchange(from: Int, to: Int, delivered: Bool)
    }

    static func randomStep(_ random: inout SplitMix64, devices: Int) -> Step {
        let device = Int(random.next() % UInt64(devices))
        switch random.next() % 20 {
        case 0: return .approveNew(by: device)
        case 1: return .revoke(by: device, target: Int(random.next() % UInt64(devices)))
        case 2: return .rotate(by: device)
        case 3...8: return .edit(device: device, service: Int(random.next() % 6))
        default:
            return .exchange(from: device, to: Int(random.next() % UInt64(devices)), delivered: random.next() % 8 != 0)
        }
    }

    static var seeds: [UInt64] { ModelSeeds.seeds("COFFER_GROUP_MODEL_SEEDS", defaults: [1, 2, 3]) }

    @Test("random membership changes, edits and lossy exchanges, then every active member agrees", arguments: seeds)
    func converge(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let group = try SyncGroupFixture()
        let first = try group.createFirst()
        var vaults = [first]
        var bundles = 0
        func nextBundle() -> URL {
            bundles += 1
            return group.bundle("b\(bundles)")
        }
        /// Imports, accepting the refusals a group in flux gives (revoked or unknown devices, epochs
        /// not sealed to the importer yet), which later exchanges resolve.
        func deliver(_ from: Vault, _ to: Vault) throws {
            let url = nextBundle()
            try from.export(to: url)
            switch Result(catching: { () throws(CofferError) in try to.import(from: url) }) {
            case .success: break
            case .failure(let error) where [.notTrusted, .keyUnavailable].contains(error.code): break
            case .failure(let error): throw error
            }
        }
        for index in 1...2 {
            let url = nextBundle()
            try first.export(to: url)
            let (joined, _) = try group.join("p\(index)", from: url)
            try deliver(joined, first)
            vaults.append(joined)
        }
        func active(_ vault: Vault) -> Bool {
            ((try? vault.members())?.first { $0.deviceID == vault.deviceID }?.isActive) ?? false
        }
        var approvals = 0
        for number in 0..<60 {
            let step = Self.randomStep(&random, devices: vaults.count)
            do {
                switch step {
                case .edit(let device, let service):
                    guard active(vaults[device]) else { continue }
                    try vaults[device].keychain.setPassword(
                        "v\(random.next() % 1000)",
                        service: "s\(service)",
                        account: "ann",
                        scope: .syncable
                    )
                case .approveNew(let by):
                    guard approvals < 2, active(vaults[by]) else { continue }
                    approvals += 1
                    let (vault, request) = try Vault.requestJoin(
                        at: group.directory.path("r\(approvals)"),
                        passphrase: SyncGroupFixture.passphrase,
                        configuration: group.fixture.configuration
                    )
                    try vaults[by].approve(request)
                    let url = nextBundle()
                    try vaults[by].export(to: url)
                    _ = try vault.import(from: url)
                    vaults.append(vault)
                case .revoke(let by, let target):
                    let activeCount = vaults.filter(active).count
                    guard by != target, activeCount > 2, active(vaults[by]),
                        (try vaults[by].members()).contains(where: {
                            $0.deviceID == vaults[target].deviceID && $0.isActive
                        })
                    else { continue }
                    try vaults[by].revoke(device: vaults[target].deviceID)
                case .rotate(let by):
                    guard active(vaults[by]) else { continue }
                    try vaults[by].rotateGroupKey()
                case .exchange(let from, let to, let delivered):
                    guard from != to else { continue }
                    let url = nextBundle()
                    try vaults[from].export(to: url)
                    if delivered {
                        switch Result(catching: { () throws(CofferError) in try vaults[to].import(from: url) }) {
                        case .success: break
                        case .failure(let error) where [.notTrusted, .keyUnavailable].contains(error.code): break
                        case .failure(let error): throw error
                        }
                    }
                }
            } catch {
                Issue.record("seed \(seed), step \(number) (\(step)): \(error)")
                throw error
            }
        }
        // Settle: every device exchanges with every other, round after round until no log changes (one
        // left out of a fork learns it was added again only from a member's bundle, and a change
        // appended again on top travels one more round).
        func logs() throws -> [[UInt8]] { try vaults.map { try $0.readMetaIfPresent(GroupContext.Meta.log) ?? [] } }
        var rounds = 0
        var previous: [[UInt8]] = []
        while rounds < 12 {
            for from in vaults {
                for to in vaults where to !== from { try deliver(from, to) }
            }
            rounds += 1
            let now = try logs()
            if now == previous, rounds >= 3 { break }
            previous = now
        }
        #expect(rounds < 12, "seed \(seed): the logs were still changing after 12 rounds")
        // Every log together says who the group is (a revoked device that never heard of it, or a device added by one
        // revoked at the same time, still thinks itself a member).
        func log(_ vault: Vault) throws -> GroupLog {
            try GroupLog(
                group: vault.syncGroupID,
                decoding: try #require(try vault.readMetaIfPresent(GroupContext.Meta.log))
            )
        }
        var winner = try log(vaults[0])
        for vault in vaults.dropFirst() { winner = try winner.union(try log(vault)) }
        let activeIDs = Set(try winner.state(roots: { _ in nil }).activeMembers.map(\.device))
        let members = vaults.filter { activeIDs.contains($0.deviceID) }
        func describe(_ vault: Vault) throws -> String {
            let stored = try #require(try vault.readMetaIfPresent(GroupContext.Meta.log))
            let log = try GroupLog(group: vault.syncGroupID, decoding: stored)
            let name = { (id: UUID) in String(id.uuidString.prefix(4)) }
            let entries = log.entries.map { entry -> String in
                switch entry.change {
                case .joined: return "J\(name(entry.author))"
                case .added(let device, _, _, _, _): return "\(name(entry.author))+\(name(device))"
                case .revoked(let device, _): return "\(name(entry.author))-\(name(device))"
                case .epochStarted: return "\(name(entry.author))E"
                case .policy: return "\(name(entry.author))P"
                case .keysShared: return "\(name(entry.author))K"
                case .keysReplaced: return "\(name(entry.author))R"
                }
            }
            return "\(name(vault.deviceID)): " + entries.joined(separator: " ")
        }
        let pictures = try vaults.map(describe).joined(separator: "\n")
        // Random revocations can leave no member (devices revoking one another at once all lose):
        // then there is nothing left to agree on.
        guard let reference = members.first else { return }
        // The members hold one log; it may lack what only devices that are out wrote and nothing
        // made count (a refused bundle's log adds what has effect), which changes nothing it means.
        let agreed = try log(reference)
        let meaning = try agreed.state(roots: { _ in nil })
        let everything = try winner.state(roots: { _ in nil })
        #expect(
            meaning.members == everything.members && meaning.policy == everything.policy
                && meaning.currentEpoch == everything.currentEpoch,
            "seed \(seed): what the members hold means something else than every log together\n\(pictures)"
        )
        for vault in members {
            #expect(try log(vault) == agreed, "seed \(seed): the logs differ\n\(pictures)")
            #expect(
                try vault.keyRing().currentEpoch(.sync) == reference.keyRing().currentEpoch(.sync),
                "seed \(seed): the epochs differ"
            )
            #expect(try vault.syncableState() == reference.syncableState(), "seed \(seed): the records differ")
        }
    }
}
