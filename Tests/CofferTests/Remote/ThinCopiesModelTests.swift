import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of copies of vaults whose content lives in the store (issue 42, with the
/// copies of issue 37): two whole devices and one joined thin, with a random cache budget, write
/// blobs, push, pull, offload with random budgets and compact the store, while their directories are
/// copied as backups, restored over a running vault (losing what it held since) and cloned into a
/// second running copy, in random order, against a real SeaweedFS. A restored or cloned copy knows an
/// older store: its pushes reuse positions its twin or its older self already used, and its
/// compactions rewrite objects that other devices' offloaded content lies in.
///
/// After every step, every blob the acting vault lists reads back as the content written under that
/// name, or is not found only where a compaction moved offloaded content since its last pull. At the
/// end, after rounds of pushes and pulls, every acknowledged blob (one a running vault holds, or the
/// store was sent) reads back on every running vault and on a newcomer joined thin, and
/// `verify --read-data` finds nothing wrong. Seeds from `COFFER_THIN_COPIES_MODEL_SEEDS` (a count, or
/// a list to replay), each printed on failure.
@Suite("Copies of offloaded and thin vaults, randomized model against SeaweedFS", .serialized)
struct ThinCopiesModelTests {
    static let seeds = ModelSeeds.seeds("COFFER_THIN_COPIES_MODEL_SEEDS", defaults: [5, 41, 2027])

    @Test(
        "Restored and cloned copies of offloaded and thin vaults, with pushes, pulls, offloads and compactions, lose no acknowledged blob",
        arguments: seeds
    )
    func randomRounds(seed: UInt64) throws {
        let replay: Comment = "seed \(seed): replay with COFFER_THIN_COPIES_MODEL_SEEDS=\(seed),\(seed)"
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        var generator = SplitMix64(seed: seed)
        let (first, second) = try fixture.firstPushedAndJoined(group)
        let budget = UInt64([0, 64 << 10, 1 << 20][Int(generator.next() % 3)])
        let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: budget))
        // Each running vault, with the blobs it holds (a fresh name per write, so holding is having).
        var vaults: [(vault: Vault, writes: Set<Int>)] = [(first, []), (second, []), (thin, [])]
        defer { for entry in vaults { entry.vault.close() } }
        var backups: [(url: URL, writes: Set<Int>)] = []
        var stored: Set<Int> = []
        var contents: [Int: Data] = [:]
        // A vault opened again is attached to its store as an app or `coffer` attaches it: its
        // offloaded content lies there.
        func attached(_ vault: Vault) throws -> Vault {
            if try vault.offloadLocation != nil { try vault.attachObjectStore(remote) }
            return vault
        }

        for step in 0..<40 {
            let index = Int(generator.next() % UInt64(vaults.count))
            let vault = vaults[index].vault
            let context = "\(replay), step \(step), vault \(index)"
            switch generator.next() % 10 {
            case 0...2:
                let bytes = Data(SplitMix64.bytes(Int(generator.next() % 300_000) + 1, seed: generator.next()))
                try vault.blobs.write("b\(step)", data: bytes)
                contents[step] = bytes
                vaults[index].writes.insert(step)
            case 3:
                try vault.push(to: remote)
                stored.formUnion(vaults[index].writes)
            case 4:
                try vault.pull(from: remote)
                vaults[index].writes.formUnion(stored)
            case 5:
                // Pushes first, then drops what the store holds beyond a random budget.
                let keep = UInt64([0, 100_000, 1 << 20][Int(generator.next() % 3)])
                _ = try vault.offloadContent(to: remote, keep: keep)
                stored.formUnion(vaults[index].writes)
            case 6:
                try vault.compact(remote: remote)
                vaults[index].writes.formUnion(stored)
                stored.formUnion(vaults[index].writes)
            case 7:
                let url = group.directory.path("backup-\(step)")
                vaults[index].vault = try attached(RemoteCopiesTests.copy(vault, to: url, group))
                backups.append((url, vaults[index].writes))
            case 8 where !backups.isEmpty:
                // Restored from an older file copy (of any device): what it held since is gone.
                let backup = backups[Int(generator.next() % UInt64(backups.count))]
                let target = vault.directory
                vault.close()
                let copy = group.directory.path("copy-\(step)")
                try FileManager.default.copyItem(at: backup.url, to: copy)
                vaults[index] = (try attached(RemoteCopiesTests.restore(copy, over: target, group)), backup.writes)
            case 9 where vaults.count < 5:
                let url = group.directory.path("clone-\(step)")
                vaults[index].vault = try attached(RemoteCopiesTests.copy(vault, to: url, group))
                vaults.append((try attached(RemoteCopiesTests.restore(url, over: nil, group)), vaults[index].writes))
            default:
                break
            }
            try expectReadable(vaults[index].vault, contents: contents, context: context, movedAllowed: true)
        }

        // Every blob a running vault holds or the store was sent is acknowledged.
        let acknowledged = vaults.reduce(stored) { $0.union($1.writes) }
        try RemoteCopiesTests.converge(vaults.map(\.vault), remote: remote, replay: replay)
        let (newcomer, _) = try fixture.join(group, name: "newcomer", content: .thin(keep: 0))
        defer { newcomer.close() }
        for (number, vault) in (vaults.map(\.vault) + [newcomer]).enumerated() {
            let context = "\(replay), end, vault \(number)"
            let names = Set(try vault.blobs.list().map(\.name))
            for write in acknowledged where !names.contains("b\(write)") {
                Issue.record("\(context): the acknowledged blob b\(write) is missing")
            }
            try expectReadable(vault, contents: contents, context: context, movedAllowed: false)
            let report = try vault.blobs.verify(readingData: true)
            #expect(report.problems.isEmpty, "\(context): \(report.problems)")
        }
    }

    /// Every blob `vault` lists reads back as the content written under its name; with
    /// `movedAllowed`, one whose offloaded content a compaction moved since the vault's last pull may
    /// be not found (its next pull learns where it went).
    func expectReadable(_ vault: Vault, contents: [Int: Data], context: String, movedAllowed: Bool) throws {
        for blob in try vault.blobs.list() {
            let read = Result { () throws(CofferError) in try vault.blobs.data(blob.name) }
            switch read {
            case .success(let data):
                let written = Int(blob.name.dropFirst()).flatMap { contents[$0] }
                #expect(data == written, "\(context): \(blob.name) reads as content not written under its name")
            case .failure(let error) where error.code == .itemNotFound && movedAllowed:
                continue
            case .failure(let error):
                Issue.record("\(context): \(blob.name) does not read: \(error)")
            }
        }
    }
}
