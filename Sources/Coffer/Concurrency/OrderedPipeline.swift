import Foundation

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
/// ```swift
/// let pipeline = OrderedPipeline<[UInt8], [UInt8]>(workers: 2, window: 16) { { job in try seal(job) } }
/// ```
final class OrderedPipeline<Job, Output>: @unchecked Sendable {
    /// Builds one worker's transform.
    typealias TransformFactory = @Sendable () throws(CofferError) -> (Job) throws(CofferError) -> Output

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var waiting: [(index: Int, job: Job)] = []
    private var waitingHead = 0
    private var results: [Int: Result<Output, CofferError>] = [:]
    private var submitted = 0
    private var taken = 0
    private var isSubmissionFinished = false
    private var failure: CofferError?
    private var runningWorkers: Int

    private let window: Int

    /// Starts `workers` threads.
    init(workers: Int, window: Int, makeTransform: @escaping TransformFactory) {
        precondition(workers > 0 && window > 0)
        self.window = window
        runningWorkers = workers
        for number in 0..<workers {
            let thread = Thread { [self] in work(makeTransform) }
            thread.name = "coffer-worker-\(number)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// The number of worker threads that suit this machine: one per core.
    static var defaultWorkerCount: Int { max(ProcessInfo.processInfo.activeProcessorCount, 1) }

    /// Whether ``submit(_:)`` would return without waiting.
    var hasRoom: Bool {
        condition.lock()
        defer { condition.unlock() }
        return submitted - taken < window
    }

    /// Queues a job, waiting while the window is full.
    ///
    /// - Throws: the error the pipeline was cancelled with.
    func submit(_ job: Job) throws(CofferError) {
        condition.lock()
        defer { condition.unlock() }
        while submitted - taken >= window, failure == nil { condition.wait() }
        if let failure { throw failure }
        waiting.append((submitted, job))
        submitted += 1
        condition.broadcast()
    }

    /// Says no more jobs will come; ``next()`` returns `nil` after the last result.
    func finishSubmitting() {
        condition.lock()
        isSubmissionFinished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The next result in submission order, waiting for it; `nil` once every result has been taken
    /// after ``finishSubmitting()``.
    ///
    /// - Throws: the error of the job whose turn it is, or the error the pipeline was cancelled with.
    func next() throws(CofferError) -> Output? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let failure { throw failure }
            if let result = results.removeValue(forKey: taken) {
                taken += 1
                condition.broadcast()
                return try result.get()
            }
            if isSubmissionFinished, taken == submitted { return nil }
            condition.wait()
        }
    }

    /// Stops the pipeline: queued jobs are dropped, and both sides get `error` from then on. The
    /// workers end after their current job.
    func cancel(_ error: CofferError) {
        condition.lock()
        if failure == nil { failure = error }
        waiting.removeAll()
        waitingHead = 0
        results.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every worker thread has ended (after the last result, or a cancel).
    func waitForWorkers() {
        condition.lock()
        while runningWorkers > 0 { condition.wait() }
        condition.unlock()
    }

    /// Ends the pipeline and waits for its workers: call when done with it, whatever happened.
    func shutDown() {
        cancel(CofferError(.internalError, "the pipeline was shut down"))
        waitForWorkers()
    }

    private func work(_ makeTransform: TransformFactory) {
        defer {
            condition.lock()
            runningWorkers -= 1
            condition.broadcast()
            condition.unlock()
        }
        let transform: (Job) throws(CofferError) -> Output
        do {
            transform = try makeTransform()
        } catch {
            cancel(error)
            return
        }
        while let (index, job) = takeJob() {
            let result = Result { () throws(CofferError) in try transform(job) }
            condition.lock()
            if failure == nil { results[index] = result }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The oldest queued job, waiting for one; `nil` when the pipeline is finished or cancelled.
    private func takeJob() -> (Int, Job)? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if failure != nil { return nil }
            if waitingHead < waiting.count {
                let entry = waiting[waitingHead]
                waitingHead += 1
                if waitingHead > 64, waitingHead * 2 > waiting.count {
                    waiting.removeFirst(waitingHead)
                    waitingHead = 0
                }
                return entry
            }
            if isSubmissionFinished { return nil }
            condition.wait()
        }
    }
}
