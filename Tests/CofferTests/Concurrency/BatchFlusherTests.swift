import Foundation
import Testing

@testable import Coffer

@Suite("Batch flusher")
struct BatchFlusherTests {
    private static func batch(_ number: UInt32) -> BatchFlusher.Batch {
        BatchFlusher.Batch(chunks: [], number: number, bytesHandled: Int64(number) * 100)
    }

    @Test("batches are committed on the flusher's thread in the order they were handed over")
    func order() throws {
        let committed = Locked<[UInt32]>([])
        let threads = Locked<Set<pthread_t>>([])
        let flusher = BatchFlusher(
            commit: { batch in
                usleep(UInt32.random(in: 0...200))
                committed.withLock { $0.append(batch.number) }
                threads.withLock { _ = $0.insert(pthread_self()) }
            },
            onFailure: { _ in Issue.record("no batch should fail") }
        )
        for number in 0..<200 { try flusher.submit(Self.batch(UInt32(number))) }
        try flusher.finish()
        #expect(committed.withLock { $0 } == Array(0..<200))
        let flusherThreads = threads.withLock { $0 }
        #expect(flusherThreads.count == 1 && !flusherThreads.contains(pthread_self()))
    }

    @Test("a failed commit is reported once, stops later commits, and fails submit and finish")
    func failure() throws {
        let committed = Locked<[UInt32]>([])
        let failures = Locked<[CofferError]>([])
        let flusher = BatchFlusher(
            commit: { (batch) throws(CofferError) in
                if batch.number == 3 { throw CofferError(.internalError, "disk full at batch 3") }
                committed.withLock { $0.append(batch.number) }
            },
            onFailure: { error in failures.withLock { $0.append(error) } }
        )
        var submitFailed = false
        for number in 0..<50 {
            do {
                try flusher.submit(Self.batch(UInt32(number)))
            } catch {
                #expect(error.message.contains("disk full at batch 3"))
                submitFailed = true
                break
            }
        }
        let error = #expect(throws: CofferError.self) { try flusher.finish() }
        #expect(error?.message.contains("disk full at batch 3") == true)
        #expect(committed.withLock { $0 } == [0, 1, 2])
        #expect(failures.withLock { $0.count } == 1)
        // The queue holds one batch, so by batch 5 at the latest a submit waits for the failed
        // flusher and is refused.
        #expect(submitFailed)
    }

    @Test("cancel drops the batches not yet committed, and finish returns")
    func cancel() throws {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let committed = Locked<[UInt32]>([])
        let flusher = BatchFlusher(
            commit: { batch in
                if batch.number == 0 {
                    started.signal()
                    release.wait()
                }
                committed.withLock { $0.append(batch.number) }
            },
            onFailure: { _ in }
        )
        try flusher.submit(Self.batch(0))
        started.wait()
        try flusher.submit(Self.batch(1))
        flusher.cancel()
        release.signal()
        try flusher.finish()
        #expect(committed.withLock { $0 } == [0])
    }
}
