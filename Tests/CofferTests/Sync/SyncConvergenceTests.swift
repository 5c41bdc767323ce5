import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Sync: vaults exchanging bundles in random orders converge")
struct SyncConvergenceTests {
    /// One random step: a change on one vault, or a bundle carried from one vault to another.
    enum Step {
        case setItem(vault: Int, key: Int, value: UInt64)
        case deleteItem(vault: Int, key: Int)
        case writeBlob(vault: Int, key: Int, seed: UInt64)
        case deleteBlob(vault: Int, key: Int)
        case exchange(from: Int, to: Int, incremental: Bool)
        case replayOld(to: Int)
    }

    static func randomStep(_ generator: inout SplitMix64) -> Step {
        let vault = Int(generator.next() % 3)
        let key = Int(generator.next() % 4)
        switch generator.next() % 10 {
        case 0, 1: return .setItem(vault: vault, key: key, value: generator.next())
        case 2: return .deleteItem(vault: vault, key: key)
        case 3: return .writeBlob(vault: vault, key: key, seed: generator.next())
        case 4: return .deleteBlob(vault: vault, key: key)
        case 5: return .replayOld(to: vault)
        default:
            let other = (vault + 1 + Int(generator.next() % 2)) % 3
            return .exchange(from: vault, to: other, incremental: generator.next() % 2 == 0)
        }
    }

    @Test(
        "random adds, updates and deletes on three vaults, random exchanges, then everyone has the same state",
        arguments: [UInt64(1), 2, 3]
    )
    func converge(seed: UInt64) throws {
        let group = try SyncGroupFixture()
        let first = try group.createFirst()
        try first.export(to: group.bundle("seed"))
        let vaults = [
            first, try group.join("v1", from: group.bundle("seed")).0,
            try group.join("v2", from: group.bundle("seed")).0,
        ]
        var generator = SplitMix64(seed: seed)
        var bundles: [URL] = []
        for step in 0..<60 {
            switch Self.randomStep(&generator) {
            case .setItem(let vault, let key, let value):
                try vaults[vault].keychain.setPassword(
                    "value-\(value)",
                    service: "service-\(key)",
                    account: "ann",
                    accessibility: .afterFirstUnlock,
                    scope: .syncable
                )
            case .deleteItem(let vault, let key):
                _ = try vaults[vault].keychain.deletePassword(service: "service-\(key)", account: "ann")
            case .writeBlob(let vault, let key, let seed):
                try vaults[vault].blobs.write("blob-\(key)", data: Content.mixed(Int(seed % 30_000), seed: seed))
            case .deleteBlob(let vault, let key):
                if try vaults[vault].blobs.contains("blob-\(key)") { try vaults[vault].blobs.delete("blob-\(key)") }
            case .exchange(let from, let to, let incremental):
                let url = group.bundle("step-\(step)")
                try vaults[from].export(to: url, peer: incremental ? "vault-\(to)" : nil)
                bundles.append(url)
                try importTolerantly(vaults[to], url)
            case .replayOld(let to):
                if !bundles.isEmpty {
                    try importTolerantly(vaults[to], bundles[Int(generator.next() % UInt64(bundles.count))])
                }
            }
        }
        // Everyone exports in full and everyone imports everyone else's bundle, in a random order.
        var finals: [(URL, Int)] = []
        for (index, vault) in vaults.enumerated() {
            let url = group.bundle("final-\(index)")
            try vault.export(to: url)
            finals.append((url, index))
        }
        finals.shuffle(using: &generator)
        for (url, source) in finals {
            for (index, vault) in vaults.enumerated() where index != source { try vault.import(from: url) }
        }
        let state = try vaults[0].syncableState()
        #expect(!state.isEmpty)
        for vault in vaults.dropFirst() { #expect(try vault.syncableState() == state) }
        for vault in vaults { #expect(try vault.blobs.verify(readingData: true).problems.isEmpty) }
    }

    /// Imports a bundle; an incremental one that arrives before the bundles it builds on is refused
    /// as incomplete (leaving the vault as it was), which is allowed here.
    func importTolerantly(_ vault: Vault, _ url: URL) throws {
        let before = try vault.dumpTables()
        do throws(CofferError) {
            try vault.import(from: url)
        } catch {
            guard error.code == .decode, error.message.contains("incomplete") else { throw error }
            let after = try vault.dumpTables()
            #expect(after == before)
        }
    }
}
