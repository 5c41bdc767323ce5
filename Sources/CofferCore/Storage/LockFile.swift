internal import Glibc

/// `lock.mdb` made with all its blocks allocated before LMDB opens it.
///
/// LMDB sizes a new lock file with `ftruncate`, which leaves it sparse, and then writes its reader
/// table through a shared memory map. On a full file system, the first store to a page without a
/// block kills the process with `SIGBUS` (found opening a new vault on a full disk). Allocating the
/// file first turns that into a clear "disk full" before anything is mapped.
package enum LockFile {
    /// The size LMDB gives a lock file for `readers` reader slots on Linux: a 192-byte header
    /// (`MDB_txninfo`: two cache lines and the first slot) and 64 bytes per further slot.
    package static func size(readers: UInt32) -> Int {
        Int(max(readers, 1) - 1) * 64 + 192
    }

    /// Makes sure the lock file at `path` has its blocks: a missing one is created (mode 0600) and
    /// allocated; an existing one has any holes filled where there is room (its contents unchanged).
    ///
    /// - Throws: ``LMDBError`` `noSpace` when a new lock file cannot be allocated (nothing is left
    ///   behind), or the `errno` of creating it.
    package static func prepare(path: String, readers: UInt32) throws(LMDBError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor < 0 {
            let error = Errno.current
            guard error.code == EEXIST else {
                throw LMDBError(LMDBError.Code(rawValue: error.code), operation: "create \(path)")
            }
            fillHoles(path: path)
            return
        }
        let result = posix_fallocate(descriptor, 0, off_t(size(readers: readers)))
        close(descriptor)
        guard result == 0 || result == EOPNOTSUPP || result == EINVAL else {
            unlink(path)
            throw LMDBError(LMDBError.Code(rawValue: result), operation: "allocate \(path)")
        }
    }

    /// Allocates the blocks of an existing lock file's holes (a file made by an older Coffer, or by
    /// LMDB itself); best effort, as a full disk must not stop a vault from opening to free space.
    private static func fillHoles(path: String) {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size > 0,
            Int(status.st_blocks) * 512 < Int(status.st_size)
        else { return }
        _ = posix_fallocate(descriptor, 0, status.st_size)
    }
}
