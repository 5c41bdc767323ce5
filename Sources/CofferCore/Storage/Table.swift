/// A named database inside an environment (an LMDB "DBI"). A plain value: valid for the life of the
/// environment that opened it, shareable between threads.
package struct Table: Hashable, Sendable, CustomStringConvertible {
    /// The table's name in the environment.
    package let name: String
    /// LMDB's handle (`MDB_dbi`).
    package let handle: UInt32

    package var description: String { name }
}
