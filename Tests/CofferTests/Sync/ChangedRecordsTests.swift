import CofferTestSupport
import Testing

@testable import Coffer

@Suite("Changed records: each once, in first-change order, with its last sequence")
struct ChangedRecordsTests {
    /// What the exporter computed before, with a dictionary: the reference.
    private func reference(_ changes: [(UInt64, [UInt8])]) -> [([UInt8], UInt64)] {
        var order: [[UInt8]] = []
        var latest: [[UInt8]: UInt64] = [:]
        for (sequence, key) in changes where latest.updateValue(sequence, forKey: key) == nil { order.append(key) }
        return order.map { ($0, latest[$0]!) }
    }

    @Test("random change logs give what a dictionary gives", arguments: 0..<40)
    func matchesDictionary(round: Int) {
        let seed = UInt64(0xC0FF_EE00) &+ UInt64(round)
        var random = SplitMix64(seed: seed)
        let recordCount = Int(random.next() % 60) + 1
        let records: [[UInt8]] = (0..<recordCount).map { _ in
            let kind = SyncRecordKind.allCases[Int(random.next() % 3)]
            // Few distinct id bytes, so keys often share long prefixes.
            return [kind.rawValue] + (0..<kind.idLength).map { _ in UInt8(random.next() % 3) }
        }
        var sequence: UInt64 = random.next() % 1000
        var changes: [(UInt64, [UInt8])] = []
        for _ in 0..<Int(random.next() % 300) {
            sequence += 1 + random.next() % 3
            changes.append((sequence, records[Int(random.next() % UInt64(recordCount))]))
        }
        var changed = ChangedRecords()
        for (sequence, key) in changes { changed.append(sequence: sequence, key: key) }
        changed.finish()
        var got: [([UInt8], UInt64)] = []
        changed.forEachRecord { got.append(($0, $1)) }
        let expected = reference(changes)
        let same = got.count == expected.count && zip(got, expected).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        #expect(
            same,
            "seed \(seed): \(got.count) records where the dictionary gives \(expected.count), or in another order"
        )
    }

    @Test("one change and none")
    func edges() {
        var none = ChangedRecords()
        none.finish()
        var calls = 0
        none.forEachRecord { _, _ in calls += 1 }
        #expect(calls == 0)
        var one = ChangedRecords()
        let key = [SyncRecordKind.snapshot.rawValue] + [UInt8](repeating: 7, count: 16)
        one.append(sequence: 5, key: key)
        one.finish()
        var got: [([UInt8], UInt64)] = []
        one.forEachRecord { got.append(($0, $1)) }
        #expect(got.count == 1 && got[0].0 == key && got[0].1 == 5)
    }
}
