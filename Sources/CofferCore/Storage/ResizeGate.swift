internal import Glibc

/// Lets transactions run side by side (shared) while resizing the map waits for all of them to finish
/// (exclusive): LMDB allows `mdb_env_set_mapsize` only with no transaction open in the process.
///
/// Writers are preferred, so a steady stream of readers cannot starve a resize. The price is that a
/// thread must never open a transaction while it holds one (LMDB forbids that anyway).
package final class ResizeGate: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    package init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` alongside other shared holders.
    package func shared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` alongside other shared holders if that needs no waiting (no holder runs alone or
    /// waits to); otherwise runs nothing and returns `nil`.
    package func sharedIfFree<R>(_ body: () throws -> R) rethrows -> R? {
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` alone.
    package func exclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
