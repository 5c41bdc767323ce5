import Foundation
import Synchronization
import Testing

@testable import Coffer

/// Counts its live instances: what a queue still holds once its consumer has taken an element.
final class Tracked: Sendable {
    static let live = Atomic<Int>(0)
    let payload: Int

    init(_ payload: Int) {
        self.payload = payload
        Self.live.add(1, ordering: .relaxed)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }
}

/// A queue must not keep an element alive after handing it over: the flusher's channel once held
/// the last 33 batches it had committed (about 66 MiB of sealed chunks in a large put), and the
/// pipeline the last 64 jobs it had handed to workers.
@Suite("Queues release what they hand over", .serialized)
struct QueueRetentionTests {
    @Test("a bounded channel keeps nothing it has handed to its consumer")
    func channel() throws {
        let before = Tracked.live.load(ordering: .relaxed)
        let channel = BoundedChannel<Tracked>(capacity: 1)
        for number in 0..<20 {
            #expect(channel.send(Tracked(number)))
            let taken = try #require(try channel.receive())
            #expect(taken.payload == number)
        }
        #expect(Tracked.live.load(ordering: .relaxed) == before, "taken elements are still held")
        withExtendedLifetime(channel) {}
    }

    @Test("an ordered pipeline keeps no job once a worker has taken it")
    func pipeline() throws {
        let before = Tracked.live.load(ordering: .relaxed)
        let pipeline = OrderedPipeline<Tracked, Int>(workers: 2, window: 4) {
            { (job) throws(CofferError) in job.payload }
        }
        defer { pipeline.shutDown() }
        for number in 0..<40 {
            try pipeline.submit(Tracked(number))
            #expect(try pipeline.next() == number)
        }
        // The workers dropped their jobs after transforming them; the queue must have too.
        let deadline = Date().addingTimeInterval(2)
        while Tracked.live.load(ordering: .relaxed) > before, Date() < deadline { usleep(1000) }
        #expect(Tracked.live.load(ordering: .relaxed) == before, "taken jobs are still held")
    }
}
