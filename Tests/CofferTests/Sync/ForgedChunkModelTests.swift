import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of a group with a member running a modified client that seals junk under the
/// ids of every chunk it holds before each bundle it makes (red team rounds 41 and 42).
///
/// Three honest devices write small blobs (some with the same content, so chunks are shared) and
/// exchange full bundles in random orders, some lost; the forger receives bundles like anyone and
/// offers its own, and old bundles of everyone's are replayed. After every step each honest device
/// reads every blob it holds whole: it never kept a forged record, whatever came first. At the end,
/// after exchanges among the honest devices, they hold the same records. The seed is printed on
/// failure; `COFFER_FORGED_CHUNK_SEEDS` (a count, or a comma-separated list) runs more.
@Suite("Randomized model: a member that forges chunk records")
struct ForgedChunkModelTests {
    static var seeds: [UInt64] { ModelSeeds.seeds("COFFER_FORGED_CHUNK_SEEDS", defaults: Array(1...8)) }

    @Test("honest devices never keep a forged chunk record, in any exchange order", arguments: seeds)
    func forger(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
        let group = try SyncGroupFixture()
        let founder = try group.createFirst()
        try founder.export(to: group.bundle("founding"))
        var vaults = [founder]
        for name in ["b", "c", "forger"] {
            let (vault, _) = try group.join(name, from: group.bundle("founding"))
            _ = try founder.import(from: try exported(vault, group, name + "-joined"))
            vaults.append(vault)
        }
        defer { for vault in vaults { vault.close() } }
        let forger = vaults[3]
        var pool: [(url: URL, byForger: Bool)] = []
        var bundles = 0
        func export(_ vault: Vault) throws -> URL {
            if vault === forger { try forger.forgeChunkRecords { Array($0.reversed()) + [7] } }
            bundles += 1
            let url = try exported(vault, group, "b\(bundles)")
            pool.append((url, vault === forger))
            return url
        }
        for step in 0..<40 {
            switch random.next() % 10 {
            case 0...2:  // an honest device writes a blob: new content, or content another one has
                let content = SplitMix64.bytes(2_000 + pick(20_000), seed: random.next() % 6)
                try vaults[pick(3)].blobs.write("f\(pick(4))", data: Data(content))
            case 3...7:  // an exchange, sometimes lost
                let (from, to) = (vaults[pick(4)], vaults[pick(4)])
                guard from !== to else { continue }
                let url = try export(from)
                if random.next() % 5 != 0 { try Self.offer(url, byForger: from === forger, to: to) }
            default:  // a replay of any bundle to anyone
                guard !pool.isEmpty else { continue }
                let (url, byForger) = pool[pick(pool.count)]
                try Self.offer(url, byForger: byForger, to: vaults[pick(4)])
            }
            for (index, vault) in vaults.prefix(3).enumerated() {
                let report = try vault.blobs.verify(readingData: true)
                #expect(
                    report.isHealthy,
                    "seed \(seed), step \(step): honest device \(index) holds a blob it cannot read"
                )
            }
        }
        for _ in 0..<2 {
            for from in vaults.prefix(3) {
                for to in vaults.prefix(3) where to !== from {
                    try Self.offer(try export(from), byForger: false, to: to)
                }
            }
        }
        for vault in vaults.prefix(3) {
            #expect(try vault.syncableState() == vaults[0].syncableState(), "seed \(seed): the records differ")
            #expect(try vault.blobs.verify(readingData: true).isHealthy, "seed \(seed): a blob does not read")
        }
    }

    /// Imports `url` into `vault`; a bundle of the forger's may be refused, as it carries junk under
    /// chunk ids (the forger's own vault takes its bundles back).
    static func offer(_ url: URL, byForger: Bool, to vault: Vault) throws {
        let outcome = Result { try vault.import(from: url) }
        guard case .failure(let error) = outcome else { return }
        guard byForger, (error as? CofferError)?.code == .decode else { throw error }
    }

    /// `vault`'s full bundle, written to the group's bundle `name`.
    func exported(_ vault: Vault, _ group: SyncGroupFixture, _ name: String) throws -> URL {
        let url = group.bundle(name)
        try vault.export(to: url)
        return url
    }
}
