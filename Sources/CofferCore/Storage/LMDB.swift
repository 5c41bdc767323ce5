internal import CLMDB

/// The one place LMDB results are checked: every `mdb_*` call that returns a code passes through here,
/// so failures always become an ``LMDBError`` naming the call.
package enum LMDB {
    /// Throws unless `result` is `MDB_SUCCESS`.
    @inline(__always)
    package static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
        if result != MDB_SUCCESS { throw LMDBError(LMDBError.Code(rawValue: result), operation: operation()) }
    }

    /// Returns `false` for `MDB_NOTFOUND`, `true` for success, and throws for anything else: not found is
    /// an answer, not an error, at the storage layer.
    @inline(__always)
    package static func found(_ result: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) -> Bool {
        if result == MDB_NOTFOUND { return false }
        try check(result, operation())
        return true
    }
}

extension MDB_val {
    /// A view of `buffer` for LMDB to read. LMDB does not write through input values.
    package init(_ buffer: UnsafeRawBufferPointer) {
        self.init(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
    }

    /// The bytes LMDB returned, valid until the transaction ends or the next write to the table.
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mv_data, count: mv_size) }
}
