import Foundation

/// Spaces the requests of one transfer so that the bytes they carry average at most a given rate
/// (`--limit-upload`, `--limit-download`): each request may start only once the bytes of those
/// before it have had their time, so a limit holds over any run of requests, however they are sized.
package final class TransferPacer: Sendable {
    private let nanosecondsPerByte: Double
    /// When the next request may start, on the monotonic clock (nanoseconds).
    private let next = Locked<UInt64>(0)

    /// A pacer for `bytesPerSecond` (at least 1).
    package init(bytesPerSecond: Int) {
        nanosecondsPerByte = 1e9 / Double(max(1, bytesPerSecond))
    }

    /// How long a request of `bytes` starting at `now` must wait, and books its time.
    package func delay(for bytes: Int, now: UInt64) -> UInt64 {
        next.withLock { next in
            let start = max(now, next)
            next = start + UInt64(Double(bytes) * nanosecondsPerByte)
            return start - now
        }
    }

    /// Waits until a request of `bytes` may go.
    package func pace(_ bytes: Int) {
        let wait = delay(for: bytes, now: DispatchTime.now().uptimeNanoseconds)
        if wait > 0 { Thread.sleep(forTimeInterval: Double(wait) / 1e9) }
    }
}
