internal import CLMDB
internal import Glibc

/// How the data file's pages are used: what is live, what is free for reuse, and what the file holds.
package struct DataFileSpace: Sendable, Equatable {
    /// The size of `data.mdb`.
    package let fileBytes: Int64
    /// LMDB's page size.
    package let pageSize: Int
    /// Pages from the first to the last one ever written (the high-water mark).
    package let pages: Int
    /// Pages the free list holds: space LMDB reuses for new writes, which only compaction gives back
    /// to the file system.
    package let freePages: Int

    /// Bytes up to the last page ever written.
    package var usedBytes: Int64 { Int64(pages) * Int64(pageSize) }
    /// Bytes in pages that hold data (the meta pages, the trees).
    package var liveBytes: Int64 { Int64(pages - freePages) * Int64(pageSize) }
    /// Bytes in free pages.
    package var freeBytes: Int64 { Int64(freePages) * Int64(pageSize) }
}

extension Environment {
    /// The free list's table (LMDB's `FREE_DBI`): keys are transaction ids, each value a list of page
    /// numbers whose first element is the count.
    private static let freeList = Table(name: "the free list", handle: 0)

    /// How the data file's pages are used now (`mdb_env_info`, `mdb_env_stat`, and a walk of the
    /// free list, as `mdb_stat -f` does).
    package func space() throws(LMDBError) -> DataFileSpace {
        let (pageSize, pages) = try withHandle { handle throws(LMDBError) in
            var info = MDB_envinfo()
            var stat = MDB_stat()
            try LMDB.check(mdb_env_info(handle, &info), "mdb_env_info")
            try LMDB.check(mdb_env_stat(handle, &stat), "mdb_env_stat")
            return (Int(stat.ms_psize), info.me_last_pgno + 1)
        }
        var freePages = 0
        do {
            try read { txn in
                try txn.forEach(in: Self.freeList) { _, value in
                    // The count, bounded by the record (a damaged one must not overflow the sum).
                    if value.count >= MemoryLayout<Int>.size {
                        let count = value.loadUnaligned(as: Int.self)
                        freePages += min(max(count, 0), value.count / MemoryLayout<Int>.size - 1)
                    }
                    return true
                }
            }
        } catch let error as LMDBError {
            throw error
        } catch {
            throw LMDBError(.invalid, operation: "reading the free list")
        }
        var status = stat()
        let fileBytes =
            stat(directory.appendingPathComponent("data.mdb").path, &status) == 0 ? Int64(status.st_size) : 0
        return DataFileSpace(fileBytes: fileBytes, pageSize: pageSize, pages: pages, freePages: freePages)
    }

    /// Removes a compacted copy left at `path` (by a compaction that was stopped, or one that failed).
    package static func removeCompactedCopy(at path: String) { unlink(path) }

    /// Puts the compacted copy at `path` in the place of `data.mdb` (`rename`, atomic), then flushes
    /// the directory so the swap survives a crash; until then either file is whole. The commit record
    /// (``CommitRecord``) then gets the copy's meta page for transaction `transactionID`: the same
    /// transaction with other roots, which a record left behind by a crash in between still accepts
    /// (the copy's tree carries that transaction's stamp).
    ///
    /// - Returns: The size of the new `data.mdb`.
    /// - Throws: ``LMDBError`` with the `errno` of the rename.
    package func installCompactedCopy(from path: String, transactionID: UInt64) throws(LMDBError) -> Int64 {
        let dataFile = directory.appendingPathComponent("data.mdb").path
        if case .failure(let error) = valueOrErrno({ rename(path, dataFile) }) {
            throw LMDBError(LMDBError.Code(rawValue: error.code), operation: "rename(\(path), data.mdb)")
        }
        if case .success(let descriptor) = valueOrErrno({ open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = valueOrErrno { fsync(descriptor) }
            Glibc.close(descriptor)
        }
        if let check = DataFileCheck(path: dataFile) {
            check.close()
            if let pageSize = check.current?.pageSize {
                CommitRecord.note(transactionID: transactionID, dataFile: dataFile, pageSize: pageSize)
            }
        }
        var status = stat()
        return stat(dataFile, &status) == 0 ? Int64(status.st_size) : 0
    }

    /// Writes a compacted copy of the current state to a new file at `path` (`mdb_env_copyfd2` with
    /// `MDB_CP_COMPACT`: live pages only, renumbered in order, no free list), numbers its transactions
    /// on from this file's, and flushes it. On failure the partial file is removed.
    ///
    /// The copy's two meta pages both describe the copied state, with transaction ids `N - 1` and `N`
    /// (`N` the state's own id) where LMDB's copy would write 0 and 1: the lock file and any process
    /// waiting to open then agree with the new file, which reads exactly as an ordinary file at
    /// transaction `N`; its tree's stamp (``Transaction/stampKey``) says `N` as well.
    ///
    /// - Returns: The transaction id of the state copied.
    /// - Throws: ``LMDBError`` `noSpace` when the disk fills, or what LMDB reports.
    package func writeCompactedCopy(to path: String) throws(LMDBError) -> UInt64 {
        let descriptor: Int32
        switch valueOrErrno({ open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }) {
        case .success(let opened): descriptor = opened
        case .failure(let error): throw LMDBError(LMDBError.Code(rawValue: error.code), operation: "create \(path)")
        }
        do throws(LMDBError) {
            let transactionID = try snapshotID()
            try withHandle { handle throws(LMDBError) in
                try LMDB.check(mdb_env_copyfd2(handle, descriptor, UInt32(MDB_CP_COMPACT)), "mdb_env_copyfd2(\(path))")
            }
            try Self.numberMetaPages(descriptor, path: path, transactionID: transactionID)
            if case .failure(let error) = valueOrErrno({ fdatasync(descriptor) }) {
                throw LMDBError(LMDBError.Code(rawValue: error.code), operation: "fdatasync(\(path))")
            }
            Glibc.close(descriptor)
            return transactionID
        } catch {
            Glibc.close(descriptor)
            unlink(path)
            throw error
        }
    }

    /// The transaction id of the current state.
    private func snapshotID() throws(LMDBError) -> UInt64 {
        do {
            return try read { txn in txn.snapshotID }
        } catch let error as LMDBError {
            throw error
        } catch {
            throw LMDBError(.invalid, operation: "reading the current transaction id")
        }
    }

    /// Rewrites both meta pages of a fresh compacted copy as described in ``writeCompactedCopy(to:)``.
    private static func numberMetaPages(_ descriptor: Int32, path: String, transactionID: UInt64) throws(LMDBError) {
        let reading = open(path, O_RDONLY | O_CLOEXEC)
        guard reading >= 0 else { throw LMDBError(LMDBError.Code(rawValue: errno), operation: "open \(path)") }
        defer { Glibc.close(reading) }
        // Meta page 1 holds the copied state; its page size is in the meta's free-tree descriptor
        // (md_pad, the first field after the 16-byte header's magic, version, address and map size).
        var header = [UInt8](repeating: 0, count: 64)
        guard pread(reading, &header, header.count, 0) == header.count else {
            throw LMDBError(.invalid, operation: "reading the compacted copy's first page")
        }
        let pageSize = Int(header[40..<44].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard pageSize >= 512, pageSize.nonzeroBitCount == 1 else {
            throw LMDBError(.invalid, operation: "reading the compacted copy's page size")
        }
        var copied = [UInt8](repeating: 0, count: pageSize)
        guard pread(reading, &copied, pageSize, off_t(pageSize)) == pageSize else {
            throw LMDBError(.invalid, operation: "reading the compacted copy's meta page")
        }
        for id in [max(transactionID, 1) - 1, max(transactionID, 1)] {
            let index = Int(id & 1)
            var page = copied
            withUnsafeBytes(of: UInt64(index).littleEndian) { page.replaceSubrange(0..<8, with: $0) }
            withUnsafeBytes(of: id.littleEndian) { page.replaceSubrange(144..<152, with: $0) }
            guard pwrite(descriptor, page, pageSize, off_t(index * pageSize)) == pageSize else {
                throw LMDBError(LMDBError.Code(rawValue: errno), operation: "writing the compacted copy's meta page")
            }
        }
    }
}
