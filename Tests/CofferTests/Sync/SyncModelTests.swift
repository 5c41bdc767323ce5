import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of how groups of machines use sync: several vaults change the same items,
/// blobs and snapshots at once (adds, updates, deletes, scope moves, renames, backups, forgets, gc),
/// and carry incremental bundles to each other in random orders, some lost on the way and some
/// imported twice or late. Nothing may be refused for good: after a few rounds of everyone
/// exchanging with everyone (incremental bundles only, none lost), every vault holds the same
/// syncable state, byte for byte, holds nothing back, and verifies clean.
///
/// `COFFER_SYNC_MODEL_SEEDS` (a count, or a comma-separated list) and `COFFER_SYNC_MODEL_STEPS` run
/// more; `Tools/sync-model` runs thousands. Every failure names its seed.
@Suite("Sync model: random changes, random and lossy exchanges, then every replica identical")
struct SyncModelTests {
    static var seeds: [UInt64] { ModelSeeds.seeds("COFFER_SYNC_MODEL_SEEDS", defaults: [11, 12, 13, 14]) }

    static var steps: Int { ProcessInfo.processInfo.environment["COFFER_SYNC_MODEL_STEPS"].flatMap { Int($0) } ?? 80 }

    @Test("random operations of every kind, lossy exchanges in random orders, then convergence", arguments: seeds)
    func converge(seed: UInt64) throws {
        let model = try SyncModel(seed: seed, vaults: 3)
        try model.run(steps: Self.steps)
        try model.settle()
        let states = try model.vaults.map { try $0.syncableState() }
        for (index, state) in states.enumerated().dropFirst() {
            let differing = Set(state.keys).union(states[0].keys).filter { state[$0] != states[0][$0] }
            #expect(
                differing.isEmpty,
                "seed \(seed): vault \(index) differs from vault 0 in \(differing.count) records (kinds \(Set(differing.map { $0.first ?? 0 }).sorted())); last steps: \(model.log.suffix(16))"
            )
        }
        for (index, vault) in model.vaults.enumerated() {
            let held = try vault.environment.read { txn in try HeldRecords(schema: vault.schema).all(in: txn) }
            #expect(
                held.isEmpty,
                "seed \(seed): vault \(index) still holds \(held.count) records back (\(held.map(\.kind.noun)))"
            )
            let report = try vault.blobs.verify(readingData: true)
            #expect(report.isHealthy, "seed \(seed): vault \(index): \(report.problems)")
        }
        print("sync model: seed \(seed), \(Self.steps) steps, \(model.log.count) operations, converged")
    }
}

/// The vaults of one model run and what happens to them.
final class SyncModel {
    let group: SyncGroupFixture
    let vaults: [Vault]
    var generator: SplitMix64
    var bundles: [URL] = []
    var log: [String] = []
    private var counter = 0

    init(seed: UInt64, vaults count: Int) throws {
        group = try SyncGroupFixture()
        generator = SplitMix64(seed: seed)
        let first = try group.createFirst()
        try first.export(to: group.bundle("seed"))
        var vaults = [first]
        for index in 1..<count { vaults.append(try group.join("v\(index)", from: group.bundle("seed")).0) }
        self.vaults = vaults
    }

    func random(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }

    func run(steps: Int) throws {
        for _ in 0..<steps { try step() }
    }

    /// Everyone exchanges incremental bundles with everyone, in a random order, none lost, a few times:
    /// enough for a request (chunks wanted, changes to resend) to travel and be answered.
    func settle() throws {
        for _ in 0..<4 {
            var pairs: [(Int, Int)] = []
            for from in vaults.indices { for to in vaults.indices where to != from { pairs.append((from, to)) } }
            pairs.shuffle(using: &generator)
            for (from, to) in pairs { try exchange(from: from, to: to, lost: false) }
        }
    }

    func step() throws {
        let index = random(vaults.count)
        let vault = vaults[index]
        let key = random(4)
        counter += 1
        switch random(16) {
        case 0, 1:
            log.append("v\(index) set item \(key)")
            try vault.keychain.setPassword(
                "value-\(generator.next())",
                service: "service-\(key)",
                account: "ann",
                accessibility: .afterFirstUnlock,
                scope: .syncable
            )
        case 2:
            log.append("v\(index) delete item \(key)")
            _ = try vault.keychain.deletePassword(service: "service-\(key)", account: "ann")
        case 3:
            // A scope move takes the item out of sync (a deletion there) or brings it back.
            let scope: SyncScope = random(2) == 0 ? .deviceBound : .syncable
            log.append("v\(index) move item \(key) to \(scope)")
            var attributes = ItemAttributes()
            attributes.service = "service-\(key)"
            attributes.account = "ann"
            try Self.ignoringNotFound { () throws(KeychainError) in
                _ = try vault.keychain.update(
                    ItemQuery(.genericPassword, attributes: attributes),
                    with: ItemUpdate(scope: scope)
                )
            }
        case 4, 5:
            log.append("v\(index) put blob \(key)")
            try vault.blobs.write("blob-\(key)", data: Content.mixed(2_000 + random(60_000), seed: generator.next()))
        case 6:
            log.append("v\(index) rm blob \(key)")
            if try vault.blobs.contains("blob-\(key)") { try vault.blobs.delete("blob-\(key)") }
        case 7:
            let target = random(4)
            log.append("v\(index) mv blob \(key) to \(target)")
            if key != target, try vault.blobs.contains("blob-\(key)"), !(try vault.blobs.contains("blob-\(target)")) {
                try vault.blobs.rename("blob-\(key)", to: "blob-\(target)")
            }
        case 8:
            log.append("v\(index) backup")
            let tree = group.directory.path("tree-\(index)")
            try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
            try Data(Content.mixed(1_000 + random(40_000), seed: generator.next()))
                .write(to: tree.appendingPathComponent("file-\(random(3))"))
            _ = try vault.snapshots.backup(directory: tree, name: "tree")
        case 9:
            let snapshots = try vault.snapshots.list()
            log.append("v\(index) forget of \(snapshots.count)")
            if !snapshots.isEmpty { try vault.snapshots.forget(snapshots[random(snapshots.count)].id) }
        case 10:
            log.append("v\(index) gc")
            _ = try vault.blobs.collectGarbage()
        case 11:
            if !bundles.isEmpty {
                let bundle = bundles[random(bundles.count)]
                log.append("v\(index) replays \(bundle.lastPathComponent)")
                try importTolerantly(vault, bundle)
            }
        default:
            let to = (index + 1 + random(vaults.count - 1)) % vaults.count
            try exchange(from: index, to: to, lost: random(5) == 0)
        }
    }

    /// Runs `body`; a keychain item that is not there (nothing to move) is fine.
    static func ignoringNotFound(_ body: () throws(KeychainError) -> Void) throws {
        let outcome = Result { () throws(KeychainError) in try body() }
        // A device-bound item of that name already there is fine too (the move would duplicate it).
        if case .failure(let error) = outcome, error.code != .itemNotFound, error.code != .duplicateItem { throw error }
    }

    /// Carries an incremental bundle from one vault to another; a lost one is exported (the cursor
    /// moves) but never imported.
    func exchange(from: Int, to: Int, lost: Bool) throws {
        counter += 1
        let url = group.bundle("b\(counter)-\(from)-\(to)")
        try vaults[from].export(to: url, peer: "v\(to)")
        bundles.append(url)
        log.append("v\(from) -> v\(to)\(lost ? " (lost)" : "")")
        if !lost { try importTolerantly(vaults[to], url) }
    }

    /// Imports a bundle, which must never fail: what cannot be applied yet is held back.
    func importTolerantly(_ vault: Vault, _ url: URL) throws {
        _ = try vault.import(from: url)
    }
}
