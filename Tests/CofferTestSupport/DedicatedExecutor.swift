import Dispatch

/// A task executor on a serial dispatch queue of its own, outside Swift's cooperative pool: a test
/// that measures how soon an `AsyncSequence` delivers runs its consumer here, so tests running in
/// parallel that block the pool's threads (two on a 2-core machine) cannot starve it.
public final class DedicatedExecutor: TaskExecutor, @unchecked Sendable {
    private let queue: DispatchQueue

    /// An executor on a new queue named `label`.
    public init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    /// Runs `job` on the queue.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
