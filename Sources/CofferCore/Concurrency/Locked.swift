internal import Glibc

/// A value that threads share under a lock: the `withLock` of `Synchronization.Mutex`, on a pthread
/// mutex. ThreadSanitizer on Linux does not see `Mutex`'s lock (a correctly locked two-thread program
/// draws race reports: `Tests/Fixtures/tsan-mutex-probe`), so the library's shared state uses this, and
/// the suite can be checked with `--sanitize=thread`.
///
/// The value lives behind a pointer rather than in a stored property: the mutex already makes access
/// exclusive, and a class's stored property passed `inout` would add Swift's dynamic exclusivity
/// check (a thread-local lookup) to every call, which showed in the keychain's read profile.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    package init(_ value: consuming sending Value) {
        self.value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        self.value.initialize(to: value)
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
