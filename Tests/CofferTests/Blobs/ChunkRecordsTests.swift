import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Chunk records kept on their own or in packs (``ChunkRecords``): every record reads back as
/// stored, through every reader, in the transaction that wrote it and after; packs account exactly
/// for their live records, are deleted when empty and rewritten when mostly dead, and a transaction
/// that aborts leaves nothing of its pack behind.
@Suite("Chunk records: packed or alone, read back, freed and rewritten")
struct ChunkRecordsTests {
    static var seeds: [UInt64] { ModelSeeds.seeds("COFFER_CHUNK_PACK_SEEDS", defaults: Array(1...6)) }

    private struct Abandoned: Error {}

    @Test("random puts, replacements and deletes, in transactions of which some abort, match a model", arguments: seeds)
    func model(seed: UInt64) throws {
        let fixture = try StorageFixture()
        let records = fixture.schema.records
        var random = SplitMix64(seed: seed)
        func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        let pool = (0..<150).map { ChunkID(SplitMix64.bytes(32, seed: seed << 16 | UInt64($0))) }
        var model: [ChunkID: [UInt8]] = [:]
        for step in 0..<40 {
            let abandon = pick(5) == 0
            var changed = model
            // Up to 2.4 MB a transaction, so that some fill a pack and close it mid-transaction.
            let operations = 1 + pick(120)
            let outcome = Result {
                try fixture.environment.write { (txn) throws in
                    for _ in 0..<operations {
                        let id = pool[pick(pool.count)]
                        if pick(3) < 2 {
                            let large = pick(10) == 0
                            let size = large ? ChunkPack.recordLimit + pick(4_000) : 1 + pick(20_000)
                            let record = SplitMix64.bytes(size, seed: random.next())
                            try records.put(id, record, in: txn)
                            changed[id] = record
                        } else {
                            let had = try records.delete(id, in: txn)
                            #expect(had == (changed[id] != nil), "seed \(seed), step \(step): delete said \(had)")
                            changed[id] = nil
                        }
                        let probe = pool[pick(pool.count)]
                        #expect(
                            try records.record(probe, in: txn) == changed[probe],
                            "seed \(seed), step \(step): a record read in its own transaction differs"
                        )
                    }
                    if abandon { throw Abandoned() }
                }
            }
            if case .failure(let error) = outcome, !(error is Abandoned) { throw error }
            if !abandon { model = changed }
            try check(fixture, model, "seed \(seed), step \(step)")
        }
        var passes = 0
        while try !fixture.environment.write({ (txn) throws in try records.repack(in: txn, budget: 256 << 10).done }) {
            passes += 1
            try #require(passes < 100, "seed \(seed): repacking does not end")
        }
        try check(fixture, model, "seed \(seed), after repacking in \(passes) passes")
        let packs = try #require(fixture.schema.packs)
        try fixture.environment.read { (txn) throws in
            var small = 0
            try txn.forEach(in: packs.usage) { _, value in
                let live = value.loadUnaligned(as: UInt64.self).bigEndian
                let total = value.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian
                #expect(live == total, "seed \(seed): a pack holds dead records after repacking")
                if total < UInt64(ChunkPack.targetSize / 2) { small += 1 }
                return true
            }
            #expect(small <= 1, "seed \(seed): \(small) small packs left after repacking")
        }
    }

    @Test("a small record is packed, a large one stored alone; a pack of freed records is deleted")
    func placement() throws {
        let fixture = try StorageFixture()
        let records = fixture.schema.records
        let packs = try #require(fixture.schema.packs)
        let small = ChunkID(SplitMix64.bytes(32, seed: 1))
        let large = ChunkID(SplitMix64.bytes(32, seed: 2))
        try fixture.environment.write { (txn) throws in
            try records.put(small, SplitMix64.bytes(3000, seed: 3), in: txn)
            try records.put(large, SplitMix64.bytes(ChunkPack.recordLimit, seed: 4), in: txn)
        }
        try fixture.environment.read { (txn) throws in
            #expect(try txn.count(fixture.schema.chunks) == 1)
            #expect(try txn.contains(fixture.schema.chunks, key: large))
            #expect(try txn.count(packs.locators) == 1)
            #expect(try txn.count(packs.packs) == 1)
            #expect(try records.count(in: txn) == 2)
        }
        #expect(try fixture.environment.write { (txn) throws in try records.delete(small, in: txn) })
        try fixture.environment.read { (txn) throws in
            #expect(try txn.count(packs.packs) == 0, "the emptied pack is deleted")
            #expect(try txn.count(packs.usage) == 0)
            #expect(try records.record(small, in: txn) == nil)
        }
    }

    @Test("a pack less than half live is rewritten: its live records move, the pack goes")
    func rewriteWhenMostlyDead() throws {
        let fixture = try StorageFixture()
        let records = fixture.schema.records
        let packs = try #require(fixture.schema.packs)
        let ids = (0..<10).map { ChunkID(SplitMix64.bytes(32, seed: UInt64(100 + $0))) }
        let contents = ids.indices.map { SplitMix64.bytes(5000, seed: UInt64($0)) }
        try fixture.environment.write { (txn) throws in
            for (id, record) in zip(ids, contents) { try records.put(id, record, in: txn) }
        }
        // Five of ten freed leaves it half live; the sixth tips it under.
        for id in ids.prefix(5) {
            try fixture.environment.write { (txn) throws in _ = try records.delete(id, in: txn) }
        }
        let usage = { () throws -> [UInt8]? in
            try fixture.environment.read { (txn) throws in
                try txn.lastKey(in: packs.usage).flatMap { try txn.get(packs.usage, key: $0) }
            }
        }
        #expect(try usage() == Self.usage(live: 25_000, total: 50_000))
        try fixture.environment.write { (txn) throws in _ = try records.delete(ids[5], in: txn) }
        #expect(try usage() == Self.usage(live: 20_000, total: 20_000), "rewritten without its dead records")
        try fixture.environment.read { (txn) throws in
            #expect(try txn.count(packs.packs) == 1)
            for (id, record) in zip(ids, contents).dropFirst(6) { #expect(try records.record(id, in: txn) == record) }
        }
    }

    @Test("a damaged pack or locator is a decode error, not a crash")
    func damage() throws {
        let fixture = try StorageFixture()
        let records = fixture.schema.records
        let packs = try #require(fixture.schema.packs)
        let id = ChunkID(SplitMix64.bytes(32, seed: 9))
        try fixture.environment.write { (txn) throws in try records.put(id, SplitMix64.bytes(800, seed: 10), in: txn) }
        let key = try #require(try fixture.environment.read { (txn) throws in try txn.lastKey(in: packs.packs) })
        #expect(try fixture.environment.read { (txn) throws in try records.packProblems(in: txn) }.isEmpty)
        try fixture.environment.write { (txn) throws in try txn.put(packs.packs, key: key, value: [0, 0, 0, 1, 1]) }
        #expect(throws: CofferError.self) {
            try fixture.environment.read { (txn) throws in try records.record(id, in: txn) }
        }
        // verify's visit goes on past it, counting it, and names the pack.
        try fixture.environment.read { (txn) throws in
            var unreadable: [[UInt8]] = []
            try records.forEach(in: txn, unreadable: { unreadable.append(Array($0)) }) { _, _ in true }
            #expect(unreadable == [id.bytes])
            let problems = try records.packProblems(in: txn)
            #expect(problems.contains { $0.hasPrefix("chunk pack 1:") }, "\(problems)")
            #expect(problems.contains { $0.contains("point outside their packs") }, "\(problems)")
        }
        try fixture.environment.write { (txn) throws in try txn.put(packs.locators, key: id, value: [1, 2, 3]) }
        #expect(throws: CofferError.self) {
            try fixture.environment.read { (txn) throws in try records.record(id, in: txn) }
        }
    }

    @Test("freeing records and repacking go on past a pack whose directory is damaged")
    func freeingPastDamage() throws {
        let fixture = try StorageFixture()
        let records = fixture.schema.records
        let packs = try #require(fixture.schema.packs)
        let ids = (0..<5).map { ChunkID(SplitMix64.bytes(32, seed: UInt64(200 + $0))) }
        try fixture.environment.write { (txn) throws in
            for id in ids.prefix(4) { try records.put(id, SplitMix64.bytes(1000, seed: 1), in: txn) }
        }
        try fixture.environment.write { (txn) throws in try records.put(ids[4], SplitMix64.bytes(900, seed: 2), in: txn)
        }
        // Pack 1's trailer names another version: its directory no longer parses.
        try fixture.environment.write { (txn) throws in
            var pack = try #require(try txn.get(packs.packs, key: ChunkLocator.key(1)))
            pack[pack.count - 1] = 9
            try txn.put(packs.packs, key: ChunkLocator.key(1), value: pack)
        }
        for id in ids.prefix(3) {
            #expect(try fixture.environment.write { (txn) throws in try records.delete(id, in: txn) })
        }
        var passes = 0
        while try !fixture.environment.write({ (txn) throws in try records.repack(in: txn).done }) {
            passes += 1
            try #require(passes < 10, "repacking does not end")
        }
        try fixture.environment.read { (txn) throws in
            #expect(try records.record(ids[4], in: txn) == SplitMix64.bytes(900, seed: 2))
            #expect(try txn.contains(packs.packs, key: ChunkLocator.key(1)), "the damaged pack is left for verify")
        }
    }

    private static func usage(live: UInt64, total: UInt64) -> [UInt8] {
        withUnsafeBytes(of: live.bigEndian) { Array($0) } + withUnsafeBytes(of: total.bigEndian) { Array($0) }
    }

    /// Every model record reads back, the visit finds exactly the model, and each pack's usage is
    /// the sum of the records whose locators point into it.
    private func check(_ fixture: StorageFixture, _ model: [ChunkID: [UInt8]], _ context: String) throws {
        let records = fixture.schema.records
        let packs = try #require(fixture.schema.packs)
        try fixture.environment.read { (txn) throws in
            var seen: [ChunkID: [UInt8]] = [:]
            try records.forEach(in: txn) { key, value in
                let id = try ChunkID(stored: key)
                #expect(seen[id] == nil, "\(context): \(id) visited twice")
                seen[id] = Array(value)
                return true
            }
            #expect(seen == model, "\(context): the records visited differ from the model")
            #expect(try records.count(in: txn) == model.count, "\(context): count")
            for (id, record) in model { #expect(try records.record(id, in: txn) == record, "\(context): \(id)") }
            var live: [UInt64: UInt64] = [:]
            try txn.forEach(in: packs.locators) { _, value in
                let locator = try ChunkLocator(decoding: value)
                live[locator.pack, default: 0] += UInt64(locator.length)
                return true
            }
            var usage: [UInt64: UInt64] = [:]
            try txn.forEach(in: packs.usage) { key, value in
                let pack = key.loadUnaligned(as: UInt64.self).bigEndian
                let total = value.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian
                usage[pack] = value.loadUnaligned(as: UInt64.self).bigEndian
                let stored = try #require(try txn.withValue(packs.packs, key: key) { Array($0) })
                let end = try stored.withUnsafeBytes { try ChunkPack.recordsEnd(of: $0) }
                #expect(UInt64(end) == total, "\(context): pack \(pack)'s total")
                #expect(usage[pack]! * 2 >= total, "\(context): pack \(pack) is mostly dead and was not rewritten")
                return true
            }
            #expect(usage == live, "\(context): pack usage differs from the locators")
            #expect(try txn.count(packs.packs) == usage.count, "\(context): a pack without usage")
        }
    }
}
