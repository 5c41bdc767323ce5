internal import CLMDB
internal import Glibc

/// An error from LMDB: the return code of an `mdb_*` call, the call, and LMDB's own text for it.
///
/// Codes compare by value and match in `catch` patterns:
///
/// ```swift
/// do { try environment.write { ... } }
/// catch LMDBError.Code.mapFull { ... }
/// ```
package struct LMDBError: Error, Equatable, CustomStringConvertible {
    /// An LMDB return code (`MDB_*`) or an `errno` value, which LMDB passes through.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: Int32
        package init(rawValue: Int32) { self.rawValue = rawValue }

        /// Key/data pair already exists (`MDB_KEYEXIST`).
        package static let keyExists = Code(rawValue: MDB_KEYEXIST)
        /// Key/data pair not found (`MDB_NOTFOUND`).
        package static let notFound = Code(rawValue: MDB_NOTFOUND)
        /// Located page was wrong type (`MDB_CORRUPTED`).
        package static let corrupted = Code(rawValue: MDB_CORRUPTED)
        /// Requested page not found (`MDB_PAGE_NOTFOUND`).
        package static let pageNotFound = Code(rawValue: MDB_PAGE_NOTFOUND)
        /// Update of meta page failed or environment had fatal error (`MDB_PANIC`).
        package static let panic = Code(rawValue: MDB_PANIC)
        /// Environment version mismatch (`MDB_VERSION_MISMATCH`).
        package static let versionMismatch = Code(rawValue: MDB_VERSION_MISMATCH)
        /// File is not a valid LMDB file (`MDB_INVALID`).
        package static let invalid = Code(rawValue: MDB_INVALID)
        /// Environment map size reached (`MDB_MAP_FULL`).
        package static let mapFull = Code(rawValue: MDB_MAP_FULL)
        /// Environment max named databases reached (`MDB_DBS_FULL`).
        package static let tablesFull = Code(rawValue: MDB_DBS_FULL)
        /// Environment max readers reached (`MDB_READERS_FULL`).
        package static let readersFull = Code(rawValue: MDB_READERS_FULL)
        /// Transaction has too many dirty pages (`MDB_TXN_FULL`).
        package static let transactionFull = Code(rawValue: MDB_TXN_FULL)
        /// Another process grew the map beyond this one's size (`MDB_MAP_RESIZED`).
        package static let mapResized = Code(rawValue: MDB_MAP_RESIZED)
        /// Operation and database incompatible (`MDB_INCOMPATIBLE`).
        package static let incompatible = Code(rawValue: MDB_INCOMPATIBLE)
        /// Unsupported size of key, table name or data (`MDB_BAD_VALSIZE`).
        package static let badValueSize = Code(rawValue: MDB_BAD_VALSIZE)
        /// No such file or directory (`ENOENT`).
        package static let noSuchFile = Code(rawValue: ENOENT)
        /// Permission denied (`EACCES`).
        package static let permissionDenied = Code(rawValue: EACCES)
        /// Read-only file system (`EROFS`).
        package static let readOnlyFileSystem = Code(rawValue: EROFS)
        /// No space left on device (`ENOSPC`).
        package static let noSpace = Code(rawValue: ENOSPC)
        /// Input/output error (`EIO`).
        package static let ioError = Code(rawValue: EIO)
        /// The environment was closed (`EBADF`, raised by this layer, not by LMDB).
        package static let closed = Code(rawValue: EBADF)

        /// LMDB's text for the code (`mdb_strerror`, which covers `errno` values too).
        package var description: String { String(cString: mdb_strerror(rawValue)) }

        /// Matches an error against a code in a `catch` pattern.
        package static func ~= (code: Code, error: any Error) -> Bool {
            (error as? LMDBError)?.code == code
        }
    }

    /// The return code.
    package let code: Code
    /// The call that failed, e.g. `mdb_put(items)`.
    package let operation: String

    package init(_ code: Code, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// `operation: LMDB's message`.
    package var description: String {
        code == .closed ? "\(operation): the storage environment is closed" : "\(operation): \(code)"
    }
}
