import Dispatch
import Foundation
import Synchronization

/// Locks a vault after a period without activity. A timer checks a few times per interval; each
/// keychain operation records activity. The timer runs only while the vault is unlocked.
package final class AutoLock: @unchecked Sendable {
    package let interval: Duration
    private let idleNanoseconds: UInt64
    private let lastActivity = Atomic<UInt64>(0)
    /// Guards `timer`.
    private let lock = NSLock()
    private var timer: (any DispatchSourceTimer)?

    package init(interval: Duration) {
        self.interval = interval
        let (seconds, attoseconds) = interval.components
        idleNanoseconds = UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
    }

    /// Records activity now.
    package func touch() {
        lastActivity.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Starts watching (after an unlock); `action` runs once the vault has been idle for `interval`.
    package func start(action: @escaping @Sendable () -> Void) {
        touch()
        let check = DispatchTimeInterval.nanoseconds(Int(max(idleNanoseconds / 4, 10_000_000)))
        let source = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        source.schedule(deadline: .now() + check, repeating: check, leeway: .milliseconds(10))
        source.setEventHandler { [weak self] in
            guard let self else { return }
            let idle = DispatchTime.now().uptimeNanoseconds - lastActivity.load(ordering: .relaxed)
            if idle >= idleNanoseconds { action() }
        }
        lock.withLock {
            timer?.cancel()
            timer = source
        }
        source.resume()
    }

    /// Stops watching (at lock or close).
    package func stop() {
        lock.withLock {
            timer?.cancel()
            timer = nil
        }
    }
}
