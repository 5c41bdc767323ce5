import Foundation
import Synchronization
import Testing

@testable import Coffer

@Suite("Ordered pipeline")
struct OrderedPipelineTests {
    @Test("results come back in submission order whatever order workers finish in")
    func order() throws {
        let pipeline = OrderedPipeline<Int, Int>(workers: 4, window: 8) {
            { (job) throws(CofferError) in
                usleep(UInt32.random(in: 0...300))
                return job * 2
            }
        }
        defer { pipeline.shutDown() }
        var results: [Int] = []
        for job in 0..<500 {
            while !pipeline.hasRoom { results.append(try #require(try pipeline.next())) }
            try pipeline.submit(job)
        }
        pipeline.finishSubmitting()
        while let result = try pipeline.next() { results.append(result) }
        #expect(results == (0..<500).map { $0 * 2 })
    }

    @Test("a failed job fails next() at its turn; the results before it arrive first")
    func failureInOrder() throws {
        let pipeline = OrderedPipeline<Int, Int>(workers: 2, window: 16) {
            { (job) throws(CofferError) in
                if job == 5 { throw CofferError(.decode, "job 5 failed") }
                return job
            }
        }
        defer { pipeline.shutDown() }
        for job in 0..<10 { try pipeline.submit(job) }
        pipeline.finishSubmitting()
        for expected in 0..<5 { #expect(try pipeline.next() == expected) }
        let error = #expect(throws: CofferError.self) { _ = try pipeline.next() }
        #expect(error?.message == "job 5 failed")
    }

    @Test("no more than the window is ever in flight; shutting down twice is harmless")
    func window() throws {
        let inFlight = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let pipeline = OrderedPipeline<Int, Int>(workers: 3, window: 5) {
            { (job) throws(CofferError) in
                let now = inFlight.add(1, ordering: .relaxed).newValue
                most.max(now, ordering: .relaxed)
                usleep(200)
                return job
            }
        }
        let taker = Thread {
            while (try? pipeline.next()) != nil {
                inFlight.subtract(1, ordering: .relaxed)
                usleep(500)
            }
        }
        taker.start()
        for job in 0..<100 { try pipeline.submit(job) }
        pipeline.finishSubmitting()
        while inFlight.load(ordering: .relaxed) > 0 { usleep(1000) }
        // The taker counts a result as taken only after next() returns, by which time the pipeline
        // may already have let the submitter in: this observer can see one more than the window.
        // Without a window all 100 jobs would start at once.
        #expect(most.load(ordering: .relaxed) <= 5 + 1)
        pipeline.shutDown()
        pipeline.shutDown()
    }
}
