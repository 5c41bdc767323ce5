internal import Glibc

/// A `flock(2)` on an environment's directory, shared while an ``Environment`` has it open and made
/// exclusive by work that replaces the data file (``Environment/writeCompactedCopy(to:)``'s caller).
///
/// LMDB's own lock on `lock.mdb` cannot serve: it is an `fcntl` lock, which belongs to the process (a
/// second environment in the same process is invisible to it) and is dropped when the process closes
/// any descriptor of that file; and a process waiting on it is let in with a lock file the last
/// environment to close has already torn down. This lock is taken before LMDB's open and given up
/// after LMDB's close, so an opener that waits here enters LMDB as the only user and sets up
/// `lock.mdb` afresh. It is held on the directory, whose inode outlives any rename of `data.mdb`.
/// Programs other than Coffer (`mdb_stat`) do not take it.
package final class DirectoryLock: @unchecked Sendable {
    private var descriptor: Int32

    /// Takes a shared lock on `directory`, waiting while someone holds it exclusively.
    ///
    /// - Throws: ``LMDBError`` with the `errno` of opening the directory or locking it.
    package init(directory: String) throws(LMDBError) {
        descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LMDBError(LMDBError.Code(rawValue: errno), operation: "open \(directory)")
        }
        let locked = valueOrErrno { flock(descriptor, LOCK_SH) }
        if case .failure(let error) = locked {
            close(descriptor)
            throw LMDBError(LMDBError.Code(rawValue: error.code), operation: "flock(\(directory), LOCK_SH)")
        }
    }

    /// Makes the lock exclusive if nobody else holds it, in this process or another.
    ///
    /// - Returns: Whether the lock is now exclusive. When it is not, the shared lock may be lost too
    ///   (`flock` converts by releasing first), so the caller should close the environment.
    package func makeExclusive() -> Bool {
        descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    /// Gives the lock up. Call it once the environment is closed.
    package func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
