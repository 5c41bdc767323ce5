import Foundation

/// A queue of at most `capacity` elements between a thread and a task: one side blocks (a pipeline
/// thread), the other suspends (an async caller), and a full queue holds the producer back, so memory
/// stays bounded when one side is slower.
///
/// Used to feed an `AsyncSequence` into the blob writer, to hand a blob's bytes to an async reader,
/// and to hand a write's batches to its flusher thread. At most one side may be async.
package final class BoundedChannel<Element: Sendable>: @unchecked Sendable {
    private let capacity: Int
    // Guarded by `condition`.
    private let condition = NSCondition()
    /// Queued elements from `head` on; slots before it were taken and are emptied at once, so a
    /// taken element is never kept alive by the queue (a batch of sealed chunks, a blob's piece).
    private var items: [Element?] = []
    private var head = 0
    private var isFinished = false
    private var failure: (any Error)?
    private var isCancelled = false
    private var asyncWaiter: CheckedContinuation<Void, Never>?

    package init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    private var count: Int { items.count - head }

    // MARK: Producer

    /// Adds an element, blocking while the channel is full. Returns `false` if the consumer cancelled.
    package func send(_ element: Element) -> Bool {
        condition.lock()
        while count >= capacity, !isCancelled { condition.wait() }
        guard !isCancelled else {
            condition.unlock()
            return false
        }
        items.append(element)
        condition.broadcast()
        wakeAsyncWaiterAndUnlock()
        return true
    }

    /// Adds an element, suspending while the channel is full. Returns `false` if the consumer cancelled.
    package func send(_ element: Element) async -> Bool {
        while true {
            if let sent = trySend(element) { return sent }
            await waitAsync { self.count < self.capacity || self.isCancelled }
        }
    }

    /// Adds an element if there is room: `true` if added, `false` if cancelled, `nil` if full.
    private func trySend(_ element: Element) -> Bool? {
        condition.lock()
        defer { condition.unlock() }
        if isCancelled { return false }
        guard count < capacity else { return nil }
        items.append(element)
        condition.broadcast()
        return true
    }

    /// Ends the stream; with `error`, the consumer gets it after the elements already sent.
    package func finish(throwing error: (any Error)? = nil) {
        condition.lock()
        isFinished = true
        failure = error
        condition.broadcast()
        wakeAsyncWaiterAndUnlock()
    }

    // MARK: Consumer

    /// The next element, blocking until there is one; `nil` at the end.
    package func receive() throws -> Element? {
        condition.lock()
        while count == 0, !isFinished { condition.wait() }
        let element = takeFirst()
        let error = element == nil ? failure : nil
        condition.broadcast()
        wakeAsyncWaiterAndUnlock()
        if let error { throw error }
        return element
    }

    /// The next element, suspending until there is one; `nil` at the end.
    package func receive() async throws -> Element? {
        while true {
            if let outcome = tryReceive() { return try outcome.get() }
            await waitAsync { self.count > 0 || self.isFinished }
        }
    }

    /// The next element or the end, if either is there now; `nil` if the consumer must wait.
    private func tryReceive() -> Result<Element?, any Error>? {
        condition.lock()
        defer { condition.unlock() }
        guard count > 0 || isFinished else { return nil }
        let element = takeFirst()
        condition.broadcast()
        if element == nil, let failure { return .failure(failure) }
        return .success(element)
    }

    /// Says the consumer stopped: a producer's `send` returns `false` from now on.
    package func cancel() {
        condition.lock()
        isCancelled = true
        items.removeAll()
        head = 0
        condition.broadcast()
        wakeAsyncWaiterAndUnlock()
    }

    // MARK: Internals

    private func takeFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = items[head]
        items[head] = nil
        head += 1
        if head > 32, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Suspends until `ready()` holds (checked under the lock). The blocking side resumes the waiter
    /// whenever it changes the state.
    private func waitAsync(until ready: @escaping () -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if ready() {
                condition.unlock()
                continuation.resume()
                return
            }
            asyncWaiter = continuation
            condition.unlock()
        }
    }

    private func wakeAsyncWaiterAndUnlock() {
        let waiter = asyncWaiter
        asyncWaiter = nil
        condition.unlock()
        waiter?.resume()
    }
}
