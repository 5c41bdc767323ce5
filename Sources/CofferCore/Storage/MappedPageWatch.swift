internal import Dispatch

/// While a write transaction runs in a large environment, looks at the mapped pages every
/// millisecond (``Environment``'s check against its page budget) from a timer of its own.
///
/// Counting the lookups Coffer makes bounds the pages they map, but LMDB also reads the map on its
/// own inside a single call: a put of a large value gathers free pages from the free list until it
/// finds a long enough run, and the commit then deletes the records it used and writes the rest
/// back. In a vault with a gigabyte of fragmented free pages that one call mapped 260 MB of folios
/// (`coffer put` peaked at 298 MB); checked every millisecond, it stays within a few megabytes of
/// the budget. The timer fires only while the transaction runs.
final class MappedPageWatch {
    private let timer: any DispatchSourceTimer

    /// Starts calling `check` every `interval` until ``stop()``.
    ///
    /// - Parameters:
    ///   - interval: How long between two checks.
    ///   - check: What to run each time, on a thread of Dispatch's.
    init(every interval: DispatchTimeInterval = .milliseconds(1), _ check: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .microseconds(250))
        timer.setEventHandler(handler: check)
        timer.resume()
    }

    /// Stops the checks; one already running finishes on its own.
    func stop() {
        timer.cancel()
    }
}
