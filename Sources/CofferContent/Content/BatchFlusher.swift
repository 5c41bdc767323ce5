import Foundation

/// Commits a content session's batches on a thread of its own, one batch behind the committer.
///
/// Each batch is one LMDB write transaction, and its commit waits for the disk (one `fdatasync`: the
/// meta page's flush is left to the next commit, ``CommitDurability/untilNextCommit``). Done on the committer's thread, that wait stopped the committer from taking results,
/// the pipeline's window filled, and the workers stood idle: about a quarter of a backup's time on
/// this machine. Here the committer hands a full batch over and goes on hashing and collecting the
/// next while this thread writes and syncs; at most one batch waits, so memory stays bounded.
///
/// Batches are committed in the order they were handed over, so their numbers in `pending` stay in
/// order. A failure is kept, cancels the pipeline, and is thrown by the next ``submit(_:)`` and by
/// ``finish()``.
package final class BatchFlusher: @unchecked Sendable {
    /// One batch: the chunks to retain, its number under the write, and the content bytes handled
    /// up to its end (for progress).
    package struct Batch: Sendable {
        package let chunks: [PendingChunk]
        package let number: UInt32
        package let bytesHandled: Int64

        package init(chunks: [PendingChunk], number: UInt32, bytesHandled: Int64) {
            self.chunks = chunks
            self.number = number
            self.bytesHandled = bytesHandled
        }
    }

    /// What the thread takes: a batch to commit, or a barrier to signal once every batch before it is.
    private enum Work: Sendable {
        case batch(Batch)
        case barrier(DispatchSemaphore)
    }

    private let channel = BoundedChannel<Work>(capacity: 1)
    /// Barriers handed over and not signalled yet: signalled when the thread ends, whatever happened.
    private let barriers = Locked<[ObjectIdentifier: DispatchSemaphore]>([:])
    private let done = DispatchSemaphore(value: 0)
    private let failure = Locked<CofferError?>(nil)

    /// Starts the thread. `commit` runs there, once per batch, in order; `onFailure` runs there once
    /// if a commit fails (to stop the producers).
    package init(
        commit: @escaping @Sendable (Batch) throws(CofferError) -> Void,
        onFailure: @escaping @Sendable (CofferError) -> Void
    ) {
        let thread = Thread { [self] in
            nameCurrentThread("coffer-flusher")
            run(commit, onFailure)
        }
        thread.name = "coffer-flusher"
        thread.start()
    }

    private func run(
        _ commit: (Batch) throws(CofferError) -> Void,
        _ onFailure: (CofferError) -> Void
    ) {
        defer {
            for barrier in barriers.withLock({ $0.values }) { barrier.signal() }
            done.signal()
        }
        do {
            while let work = try channel.receive() {
                switch work {
                case .batch(let batch): try commit(batch)
                case .barrier(let barrier):
                    barriers.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(barrier)) }
                    barrier.signal()
                }
            }
        } catch let error as CofferError {
            fail(error, onFailure)
        } catch {
            fail(CofferError(.internalError, "storing chunks failed: \(error)", underlying: error), onFailure)
        }
    }

    private func fail(_ error: CofferError, _ onFailure: (CofferError) -> Void) {
        failure.withLock { $0 = $0 ?? error }
        channel.cancel()
        onFailure(error)
    }

    /// Hands a batch over, waiting while another is still queued.
    ///
    /// - Throws: The error of an earlier batch that failed.
    package func submit(_ batch: Batch) throws(CofferError) {
        guard channel.send(.batch(batch)) else { throw storedFailure }
    }

    /// Waits until every batch handed over so far is committed; the thread goes on taking batches.
    ///
    /// - Throws: The error of a batch that failed.
    package func drain() throws(CofferError) {
        let barrier = DispatchSemaphore(value: 0)
        barriers.withLock { $0[ObjectIdentifier(barrier)] = barrier }
        guard channel.send(.barrier(barrier)) else {
            barriers.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(barrier)) }
            throw storedFailure
        }
        barrier.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Waits until every batch handed over is committed (or the first failure).
    ///
    /// - Throws: The first commit's failure.
    package func finish() throws(CofferError) {
        channel.finish()
        done.wait()
        done.signal()  // later calls return at once
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Stops taking batches; those not yet committed are dropped (the caller is abandoning the write).
    package func cancel() {
        channel.cancel()
    }

    private var storedFailure: CofferError {
        failure.withLock { $0 } ?? CofferError(.userCanceled, "the write was abandoned")
    }
}
