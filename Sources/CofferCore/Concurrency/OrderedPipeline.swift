import Dispatch
import Foundation
import Synchronization

/// Runs a transform on worker threads and hands the results back in the order the jobs went in, with
/// at most `window` jobs in flight (submitted but not yet taken), so memory stays bounded however much
/// data flows through.
///
/// One thread submits (``submit(_:)`` blocks while the window is full) and one thread takes results
/// (``next()`` blocks until the next result in order is ready); they may be the same thread if it
/// checks ``hasRoom`` before submitting. Each worker builds its own transform once (its own cipher,
/// compressor and HMAC contexts, which are not thread-safe). A failed job fails ``next()`` when its
/// turn comes; ``cancel(_:)`` makes both sides stop at once.
///
/// Each side sleeps on its own semaphore and is woken only when what it waits for happens (a job for
/// a worker, the next result for the taker, room for the submitter), so a chunk costs a couple of
/// wake-ups rather than waking every thread on every event.
///
/// ```swift
/// let pipeline = OrderedPipeline<[UInt8], [UInt8]>(workers: 2, window: 16) { { job in try seal(job) } }
/// ```
package final class OrderedPipeline<Job, Output>: @unchecked Sendable {
    /// Builds one worker's transform.
    package typealias TransformFactory = @Sendable () throws(CofferError) -> (Job) throws(CofferError) -> Output

    private struct State: ~Copyable {
        /// Jobs not yet taken, from `waitingHead` on; taken slots are emptied at once, so a job's
        /// data (a chunk's plaintext) is not kept alive by the queue after its worker is done.
        package var waiting: [(index: Int, job: Job)?] = []
        package var waitingHead = 0
        package var results: [Int: Result<Output, CofferError>] = [:]
        package var submitted = 0
        package var taken = 0
        package var isSubmissionFinished = false
        package var failure: CofferError?
        package var runningWorkers: Int
        package var takerIsWaiting = false
        package var submitterIsWaiting = false
        package var isShutDown = false
    }

    // The state holds jobs and results, which may not be Sendable; they only ever cross threads
    // through this mutex.
    private let state: Locked<State>
    private let jobsAvailable = DispatchSemaphore(value: 0)
    private let resultReady = DispatchSemaphore(value: 0)
    private let roomAvailable = DispatchSemaphore(value: 0)
    private let workersEnded = DispatchSemaphore(value: 0)
    private let workerCount: Int
    private let window: Int

    /// Starts `workers` threads.
    package init(workers: Int, window: Int, makeTransform: @escaping TransformFactory) {
        precondition(workers > 0 && window > 0)
        self.window = window
        workerCount = workers
        state = Locked(State(runningWorkers: workers))
        for number in 0..<workers {
            let thread = Thread { [self] in
                nameCurrentThread("coffer-worker-\(number)")
                work(makeTransform)
            }
            thread.name = "coffer-worker-\(number)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// The number of worker threads that suit this machine: one per core.
    package static var defaultWorkerCount: Int { max(ProcessInfo.processInfo.activeProcessorCount, 1) }

    /// Whether ``submit(_:)`` would return without waiting.
    package var hasRoom: Bool { state.withLock { $0.submitted - $0.taken < window } }

    /// Queues a job, waiting while the window is full.
    ///
    /// - Throws: the error the pipeline was cancelled with.
    package func submit(_ job: Job) throws(CofferError) {
        let box = UnsafeTransfer(job)
        while true {
            let outcome: Result<Bool, CofferError> = state.withLock { state in
                if let failure = state.failure { return .failure(failure) }
                guard state.submitted - state.taken < window else {
                    state.submitterIsWaiting = true
                    return .success(false)
                }
                state.waiting.append((state.submitted, box.value))
                state.submitted += 1
                return .success(true)
            }
            if try outcome.get() {
                jobsAvailable.signal()
                return
            }
            roomAvailable.wait()
        }
    }

    /// Says no more jobs will come; ``next()`` returns `nil` after the last result.
    package func finishSubmitting() {
        let wakeTaker = state.withLock { state in
            state.isSubmissionFinished = true
            defer { state.takerIsWaiting = false }
            return state.takerIsWaiting
        }
        for _ in 0..<workerCount { jobsAvailable.signal() }
        if wakeTaker { resultReady.signal() }
    }

    /// The next result in submission order, waiting for it; `nil` once every result has been taken
    /// after ``finishSubmitting()``.
    ///
    /// - Throws: the error of the job whose turn it is, or the error the pipeline was cancelled with.
    package func next() throws(CofferError) -> Output? {
        while true {
            let step: Step = state.withLock { state in
                if let failure = state.failure { return .failed(failure) }
                if let result = state.results.removeValue(forKey: state.taken) {
                    state.taken += 1
                    defer { state.submitterIsWaiting = false }
                    return .result(UnsafeTransfer(result), wakeSubmitter: state.submitterIsWaiting)
                }
                if state.isSubmissionFinished, state.taken == state.submitted { return .end }
                state.takerIsWaiting = true
                return .wait
            }
            switch step {
            case .result(let result, let wakeSubmitter):
                if wakeSubmitter { roomAvailable.signal() }
                return try result.value.get()
            case .end:
                return nil
            case .failed(let error):
                throw error
            case .wait:
                resultReady.wait()
            }
        }
    }

    private enum Step {
        case result(UnsafeTransfer<Result<Output, CofferError>>, wakeSubmitter: Bool)
        case end
        case wait
        case failed(CofferError)
    }

    /// Stops the pipeline: queued jobs are dropped, and both sides get `error` from then on. The
    /// workers end after their current job.
    package func cancel(_ error: CofferError) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
            state.waiting.removeAll()
            state.waitingHead = 0
            state.results.removeAll()
            state.takerIsWaiting = false
            state.submitterIsWaiting = false
        }
        for _ in 0..<workerCount { jobsAvailable.signal() }
        resultReady.signal()
        roomAvailable.signal()
    }

    /// Ends the pipeline and waits for its workers: call when done with it, whatever happened. Later
    /// calls return at once.
    package func shutDown() {
        let first = state.withLock { state in
            defer { state.isShutDown = true }
            return !state.isShutDown
        }
        guard first else { return }
        cancel(CofferError(.internalError, "the pipeline was shut down"))
        for _ in 0..<workerCount { workersEnded.wait() }
    }

    private func work(_ makeTransform: TransformFactory) {
        defer { workersEnded.signal() }
        let transform: (Job) throws(CofferError) -> Output
        do {
            transform = try makeTransform()
        } catch {
            cancel(error)
            return
        }
        while true {
            jobsAvailable.wait()
            let (index, job): (Int, Job)
            switch takeJob() {
            case .job(let transfer): (index, job) = transfer.value
            case .none: continue
            case .stop:
                // Finished or cancelled: pass the wake-up on in case another worker still sleeps.
                jobsAvailable.signal()
                return
            }
            let result = UnsafeTransfer(Result { () throws(CofferError) in try transform(job) })
            let wakeTaker = state.withLock { state in
                guard state.failure == nil else { return false }
                state.results[index] = result.value
                guard state.takerIsWaiting, index == state.taken else { return false }
                state.takerIsWaiting = false
                return true
            }
            if wakeTaker { resultReady.signal() }
        }
    }

    private enum Take {
        case job(UnsafeTransfer<(Int, Job)>)
        /// Nothing queued yet.
        case none
        /// Finished or cancelled.
        case stop
    }

    /// The oldest queued job, if any.
    private func takeJob() -> Take {
        state.withLock { state in
            if state.failure != nil { return .stop }
            guard state.waitingHead < state.waiting.count else { return state.isSubmissionFinished ? .stop : .none }
            guard let entry = state.waiting[state.waitingHead] else { return .none }
            state.waiting[state.waitingHead] = nil
            state.waitingHead += 1
            if state.waitingHead > 64, state.waitingHead * 2 > state.waiting.count {
                state.waiting.removeFirst(state.waitingHead)
                state.waitingHead = 0
            }
            return .job(UnsafeTransfer(entry))
        }
    }
}

/// Carries a value that is not `Sendable` across a `Mutex` boundary; the pipeline hands each job and
/// result to exactly one thread at a time.
package struct UnsafeTransfer<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
