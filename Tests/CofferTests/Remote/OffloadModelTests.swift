import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A randomized model of offloading: three devices of one group write, push, pull, offload with
/// random budgets, compact and read, in random order, against a real SeaweedFS; halfway, a fourth
/// joins thin (its content left in the store) with a random budget, and does the same; backups on
/// offloaded devices upload parts as they go. After every step,
/// every blob a device lists reads back whole as content some device wrote under that name, no
/// offloaded chunk lacks a site it can be read from once the device has pulled, and each cache is
/// within its budget. Every device converges after a final round. Seeds from
/// `COFFER_OFFLOAD_MODEL_SEEDS` (a count, or a list to replay), each printed on failure.
@Suite("Offloading, randomized model against SeaweedFS", .serialized)
struct OffloadModelTests {
    static let seeds = ModelSeeds.seeds("COFFER_OFFLOAD_MODEL_SEEDS", defaults: [7, 2026, 619535])

    /// What a device may do in one step.
    enum Step: CaseIterable {
        case write, delete, push, pull, offload, compact, read, backup, forget
    }

    @Test("random writes, syncs, offloads, compactions and reads keep every blob whole", arguments: seeds)
    func randomRounds(seed: UInt64) throws {
        let fixture = try RemoteFixture()
        let group = try SyncGroupFixture()
        let remote = try fixture.remote()
        var generator = SplitMix64(seed: seed)
        let first = try group.createFirst()
        try first.push(to: remote)
        var devices = [first]
        for index in 1..<3 { devices.append(try fixture.join(group, name: "device-\(index)").0) }
        defer { for device in devices { device.close() } }
        // Every content ever written under a name: a read must give one of them.
        var written: [String: Set<Data>] = [:]
        let trees = try TemporaryDirectory()
        var budgets: [Int: UInt64] = [:]

        for stepNumber in 0..<40 {
            if stepNumber == 20 {
                let keep = [0, 64 << 10, 1 << 20][Int(generator.next() % 3)]
                let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: UInt64(keep)))
                devices.append(thin)
                budgets[devices.count - 1] = UInt64(keep)
            }
            let index = Int(generator.next() % UInt64(devices.count))
            let device = devices[index]
            let step = Step.allCases[Int(generator.next() % UInt64(Step.allCases.count))]
            let context = "seed \(seed), step \(stepNumber): device \(index) \(step)"
            let outcome = Result { () throws(CofferError) in
                try perform(step, on: device, remote: remote, trees: trees, generator: &generator, written: &written)
            }
            switch outcome {
            case .success(let keep): if let keep { budgets[index] = keep }
            case .failure(let error) where error.code == .itemNotFound:
                // Content a compaction moved cannot be read until the device pulls.
                try device.pull(from: remote)
            case .failure(let error):
                Issue.record("\(context): \(error)")
                return
            }
            for (number, vault) in devices.enumerated() {
                try expectWhole(
                    vault,
                    written: written,
                    budget: budgets[number],
                    context: "\(context), device \(number)"
                )
            }
        }
        // Converge: each pushes and pulls, twice round.
        for _ in 0..<2 {
            for device in devices {
                try device.push(to: remote)
                try device.pull(from: remote)
            }
        }
        let listings = try devices.map { device in Set(try device.blobs.list().map(\.name)) }
        #expect(Set(listings).count == 1, "seed \(seed): the devices list different blobs after converging")
        for (number, vault) in devices.enumerated() {
            try expectWhole(
                vault,
                written: written,
                budget: budgets[number],
                context: "seed \(seed), end, device \(number)",
                movedAllowed: false
            )
            let report = try vault.blobs.verify(readingData: true)
            #expect(report.problems.isEmpty, "seed \(seed), device \(number): \(report.problems)")
            for snapshot in try vault.snapshots.list() {
                let target = trees.path("restored-\(number)-\(snapshot.id)")
                let restored = Result { () throws(CofferError) in try vault.snapshots.restore(snapshot.id, to: target) }
                if case .failure(let error) = restored {
                    Issue.record("seed \(seed), device \(number): snapshot \(snapshot.id) does not restore: \(error)")
                }
            }
        }
        let snapshots = try devices.map { device in Set(try device.snapshots.list().map(\.id)) }
        #expect(Set(snapshots).count == 1, "seed \(seed): the devices list different snapshots after converging")
        // Every backup finished, so its parts are gone everywhere.
        for (number, vault) in devices.enumerated() {
            let parts = try vault.environment.read { txn -> Int in
                var count = 0
                try txn.forEach(in: vault.schema.snapshots) { _, value in
                    if value.first == SnapshotRecord.partVersion { count += 1 }
                    return true
                }
                return count
            }
            #expect(parts == 0, "seed \(seed), device \(number): \(parts) parts of finished backups are left")
        }
    }

    /// Runs `step` on `device`; returns the cache budget an offload set.
    func perform(
        _ step: Step,
        on device: Vault,
        remote: S3Remote,
        trees: TemporaryDirectory,
        generator: inout SplitMix64,
        written: inout [String: Set<Data>]
    ) throws(CofferError) -> UInt64? {
        switch step {
        case .write:
            let name = "blob-\(generator.next() % 5)"
            let size = Int(generator.next() % 400_000) + 1
            let bytes = Data(SplitMix64.bytes(size, seed: generator.next()))
            try device.blobs.write(name, data: bytes)
            written[name, default: []].insert(bytes)
        case .delete:
            let names = try device.blobs.list().map(\.name)
            if !names.isEmpty { try device.blobs.delete(names[Int(generator.next() % UInt64(names.count))]) }
        case .push:
            try device.push(to: remote)
        case .pull:
            try device.pull(from: remote)
        case .offload:
            let keep = UInt64([0, 100_000, 1 << 20][Int(generator.next() % 3)])
            _ = try device.offloadContent(to: remote, keep: keep)
            return keep
        case .compact:
            try device.compact(remote: remote)
        case .read:
            break
        case .backup:
            // A small tree: its snapshot's tree chunks must stay here for a later forget, or a pull
            // that deletes it, to release what it references.
            let root = trees.path("tree-\(generator.next())")
            let written = Result { () throws(any Error) in
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                for file in 0..<Int(generator.next() % 3 + 1) {
                    let size = Int(generator.next() % 400_000)
                    try Data(SplitMix64.bytes(size, seed: generator.next())).write(
                        to: root.appendingPathComponent("f\(file)")
                    )
                }
            }
            if case .failure(let error) = written { throw CofferError(.io, "writing a test tree: \(error)") }
            // On an offloaded device, parts small enough that the backup uploads some as it goes.
            var options = BackupOptions(name: "tree")
            options.partSize = [nil, 100_000, 250_000][Int(generator.next() % 3)]
            _ = try device.snapshots.backup(directory: root, options: options)
        case .forget:
            let ids = try device.snapshots.list().map(\.id)
            if !ids.isEmpty { try device.snapshots.forget(ids[Int(generator.next() % UInt64(ids.count))]) }
        }
        return nil
    }

    /// Every blob `vault` lists reads back as something written under its name (pulling first when a
    /// compaction moved offloaded content), and its cache holds at most `budget`.
    func expectWhole(
        _ vault: Vault,
        written: [String: Set<Data>],
        budget: UInt64?,
        context: String,
        movedAllowed: Bool = true
    ) throws {
        for blob in try vault.blobs.list() {
            let read = Result { () throws(CofferError) in try vault.blobs.data(blob.name) }
            if case .failure(let error) = read, error.code == .itemNotFound, movedAllowed {
                continue  // moved by a compaction; the next pull finds it (checked at the end)
            }
            guard case .success(let data) = read else {
                Issue.record("\(context): \(blob.name) does not read: \(read)")
                continue
            }
            #expect(written[blob.name]?.contains(data) == true, "\(context): \(blob.name) reads as unwritten content")
        }
        guard let budget else { return }
        vault.schema.offloadedChunks?.finish()
        let cached = try vault.environment.read { txn -> UInt64 in
            var bytes: UInt64 = 0
            try StoreContent(schema: vault.schema)?.forEachCached(in: txn) { _, _, length in
                bytes += UInt64(length)
                return true
            }
            return bytes
        }
        #expect(cached <= budget, "\(context): the cache holds \(cached) bytes, over its budget of \(budget)")
    }
}
