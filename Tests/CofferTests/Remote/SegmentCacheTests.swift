import Foundation
import Synchronization
import Testing

@testable import Coffer

/// The segment cache an offloaded vault reads through (``SegmentCache``): a reader going through an
/// object in order has the next windows fetched in the background, no segment is fetched twice while
/// it is held, readers wanting a segment being fetched wait for it, and a failed fetch is retried by
/// the reader that needs it, which sees the failure.
@Suite("Segment cache of offloaded reads")
struct SegmentCacheTests {
    /// A fake object of `count` segments, each its index's bytes, recording every fetch.
    final class FakeObject: Sendable {
        let count: UInt64
        let fetches = Mutex<[ClosedRange<UInt64>]>([])
        /// The name of the thread each fetch ran on, in the order of `fetches`.
        let threads = Mutex<[String]>([])
        let failing = Mutex<Set<UInt64>>([])
        let delay: useconds_t

        init(count: UInt64, delay: useconds_t = 0) {
            self.count = count
            self.delay = delay
        }

        var fetch: SegmentCache.Fetch {
            { [self] (range) throws(CofferError) -> [[UInt8]] in
                fetches.withLock { $0.append(range) }
                let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                threads.withLock { $0.append(name.trimmingCharacters(in: .whitespacesAndNewlines)) }
                if delay > 0 { usleep(delay) }
                if failing.withLock({ !$0.isDisjoint(with: Set(range)) }) {
                    throw CofferError(.io, "the store cannot be reached")
                }
                return range.map { Self.plaintext(of: $0) }
            }
        }

        static func plaintext(of segment: UInt64) -> [UInt8] {
            Array(repeating: UInt8(truncatingIfNeeded: segment), count: 64)
        }

        /// How many times each segment was fetched.
        var fetchCounts: [UInt64: Int] {
            var counts: [UInt64: Int] = [:]
            for range in fetches.withLock({ $0 }) { for segment in range { counts[segment, default: 0] += 1 } }
            return counts
        }
    }

    /// Waits (a few seconds at most) until no background fetch is in flight for `object`.
    private func settle(_ object: FakeObject, expecting segments: UInt64) async {
        for _ in 0..<500 where object.fetchCounts.count < Int(segments) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        try? await Task.sleep(for: .milliseconds(50))
    }

    @Test func aReaderInOrderFetchesEachSegmentOnceAndReadsAhead() async throws {
        let object = FakeObject(count: 200)
        let cache = SegmentCache(budget: 1 << 30)
        for segment in 0..<object.count {
            let opened = try cache.segments(segment, segment, of: "o", count: object.count, fetch: object.fetch)
            #expect(opened == [FakeObject.plaintext(of: segment)])
            if segment == 1 {
                // Segment 1 continued segment 0: its fetch took a window, and the next window is
                // fetched in the background before the reader gets there.
                let window = SegmentCache.window
                let expected = [0...0, 1...window, (window + 1)...(2 * window)]
                for _ in 0..<500 where object.fetches.withLock({ $0 }) != expected {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(object.fetches.withLock { $0 } == expected)
            }
        }
        await settle(object, expecting: object.count)
        #expect(object.fetchCounts.values.allSatisfy { $0 == 1 }, "a segment was fetched twice: \(object.fetchCounts)")
        #expect(object.fetchCounts.count == Int(object.count))
        // One segment, then whole windows: far fewer fetches than segments.
        let fetches = object.fetches.withLock { $0 }
        #expect(fetches.count <= Int(object.count / SegmentCache.window) + 3, "\(fetches)")
        #expect(fetches.contains { $0.count == Int(SegmentCache.window) })
    }

    @Test func readersWaitForASegmentBeingFetchedRatherThanFetchingItAgain() async throws {
        let object = FakeObject(count: 64, delay: 20_000)
        let cache = SegmentCache(budget: 1 << 30)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in 0..<4 {
                group.addTask {
                    for segment in 0..<object.count {
                        let wanted = (segment + UInt64(reader)) % object.count
                        let opened = try cache.segments(
                            wanted,
                            wanted,
                            of: "o",
                            count: object.count,
                            fetch: object.fetch
                        )
                        #expect(opened == [FakeObject.plaintext(of: wanted)])
                    }
                }
            }
            try await group.waitForAll()
        }
        await settle(object, expecting: object.count)
        #expect(object.fetchCounts.values.allSatisfy { $0 == 1 }, "a segment was fetched twice: \(object.fetchCounts)")
    }

    @Test func readersOnTheAsyncFormsThreadsDoNotWaitForThemselves() async throws {
        // More readers than Dispatch's global queue has threads, each waiting for segments the
        // read-ahead claimed: the read-ahead must run elsewhere.
        let object = FakeObject(count: 256, delay: 2_000)
        let cache = SegmentCache(budget: 1 << 30)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    try await offload { () throws(CofferError) in
                        for segment in 0..<object.count {
                            let opened = try cache.segments(
                                segment,
                                segment,
                                of: "o",
                                count: object.count,
                                fetch: object.fetch
                            )
                            guard opened == [FakeObject.plaintext(of: segment)] else {
                                throw CofferError(.internalError, "segment \(segment) came back wrong")
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let names = object.threads.withLock { $0 }
        #expect(names.contains("coffer-ahead"), "the read-ahead ran on the readers' threads: \(Set(names))")
    }

    @Test func aFailedFetchIsRetriedByTheReaderThatNeedsItAndReported() async throws {
        let object = FakeObject(count: 200)
        let cache = SegmentCache(budget: 1 << 30)
        for segment in UInt64(0)..<40 {
            _ = try cache.segments(segment, segment, of: "o", count: object.count, fetch: object.fetch)
        }
        // The store goes away: what was fetched is read, then the reader sees the failure (the
        // background fetches' failures are reported by no one else).
        object.failing.withLock { $0 = Set(0..<object.count) }
        #expect(throws: CofferError.self) {
            for segment in UInt64(40)..<object.count {
                _ = try cache.segments(segment, segment, of: "o", count: object.count, fetch: object.fetch)
            }
        }
        // It comes back: every segment is read.
        object.failing.withLock { $0 = [] }
        for segment in UInt64(40)..<object.count {
            let opened = try cache.segments(segment, segment, of: "o", count: object.count, fetch: object.fetch)
            #expect(opened == [FakeObject.plaintext(of: segment)])
        }
    }

    @Test func theBudgetDropsTheOldestSegments() throws {
        let object = FakeObject(count: 8)
        // Room for two segments' plaintext (64 bytes each).
        let cache = SegmentCache(budget: 128)
        for segment in [UInt64(0), 5] {
            _ = try cache.segments(segment, segment, of: "o", count: object.count, fetch: object.fetch)
        }
        _ = try cache.segments(0, 0, of: "o", count: object.count, fetch: object.fetch)
        #expect(object.fetchCounts[0] == 1, "segment 0 was held")
        _ = try cache.segments(2, 2, of: "o", count: object.count, fetch: object.fetch)
        _ = try cache.segments(7, 7, of: "o", count: object.count, fetch: object.fetch)
        _ = try cache.segments(0, 0, of: "o", count: object.count, fetch: object.fetch)
        #expect(object.fetchCounts[0] == 2, "segment 0 was dropped past the budget and fetched again")
    }
}
