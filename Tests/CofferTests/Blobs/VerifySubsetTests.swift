import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// `verify --read-data-subset`: slices that together read every chunk once, random shares, and a
/// damaged chunk found by exactly the slice that holds it.
@Suite("verify --read-data-subset: reading a vault a part at a time")
struct VerifySubsetTests {
    @Test("the slices 1/M to M/M read every chunk exactly once, and the damaged one in one slice only")
    func slices() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        for index in 0..<4 {
            try vault.blobs.write("blob\(index)", data: Content.random(400_000, seed: UInt64(index + 1)))
        }
        let whole = try vault.blobs.verify(readingData: true)
        #expect(whole.isHealthy && whole.chunksRead == whole.chunkCount && whole.chunkCount > 20)
        for count in [1, 3, 7] {
            var total = 0
            for index in 1...count {
                let report = try vault.blobs.verify(readingDataSubset: .slice(index, of: count))
                #expect(report.isHealthy, "\(index)/\(count): \(report.problems)")
                total += report.chunksRead
                // The same slice is the same chunks every time.
                #expect(
                    try vault.blobs.verify(readingDataSubset: .slice(index, of: count)).chunksRead == report.chunksRead
                )
            }
            #expect(total == whole.chunkCount, "slices of \(count)")
        }
        let everything = try vault.blobs.verify(readingDataSubset: .fraction(1))
        #expect(everything.chunksRead == whole.chunkCount)

        // Damage one chunk: exactly one of seven slices finds it.
        let id = try vault.environment.read { txn in
            var first: [UInt8] = []
            try vault.schema.records.forEach(in: txn) { key, _ in
                first = Array(key)
                return false
            }
            return first
        }
        try vault.environment.write { (txn) throws in
            var record = try #require(try vault.schema.records.record(ChunkID(id), in: txn))
            record[record.count / 2] ^= 0x20
            try vault.schema.records.put(ChunkID(id), record, in: txn)
        }
        let finding = try (1...7).filter { !(try vault.blobs.verify(readingDataSubset: .slice($0, of: 7)).isHealthy) }
        #expect(finding.count == 1, "\(finding)")
        #expect(
            !(try vault.blobs.verify(readingData: false)).problems.contains { $0.message.contains("authentication") }
        )
    }

    @Test("subsets parse as restic's do; malformed ones are refused by name")
    func parsing() throws {
        #expect(try DataSubset("2/5") == .slice(2, of: 5))
        #expect(try DataSubset("10%") == .fraction(0.1))
        #expect(try DataSubset("100%") == .fraction(1))
        for bad in ["0/5", "6/5", "1/0", "5", "0%", "101%", "x/y", "1/2/3", "-1/3"] {
            let error = #expect(throws: CofferError.self, "\(bad)") { _ = try DataSubset(bad) }
            #expect(error?.message.contains("is not a subset") == true)
        }
    }
}
