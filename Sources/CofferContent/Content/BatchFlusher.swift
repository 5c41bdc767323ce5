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

    private let channel = BoundedChannel<Batch>(capacity: 1)
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
        defer { done.signal() }
        do {
            while let batch = try channel.receive() { try commit(batch) }
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
        guard channel.send(batch) else { throw storedFailure }
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
