/// The named tables of a vault's LMDB environment (docs/FORMAT.md). All are
/// created with the vault, so opening one never needs to write. A class: it is read on every operation,
/// and passing one reference is cheaper than copying eleven tables.
package final class Schema: Sendable {
    /// The newest format version this build reads and writes: 3, for a vault whose device root was
    /// rekeyed (docs/FORMAT.md, "Versioning").
    package static let formatVersion: UInt32 = 3

    /// The format version of a new vault: 2, since nothing of format 3 is used until a rekey, so an
    /// older Coffer of format 2 still opens it.
    package static let newVaultFormatVersion: UInt32 = 2

    /// Table names, in creation order.
    package static let tableNames = [
        "meta", "items", "itemIndex", "chunks", "chunkRefs", "blobs", "snapshots", "pending", "changes",
        "versions", "peers",
    ]

    package let meta: Table
    package let items: Table
    package let itemIndex: Table
    package let chunks: Table
    package let chunkRefs: Table
    package let blobs: Table
    package let snapshots: Table
    package let pending: Table
    package let changes: Table
    package let versions: Table
    package let peers: Table

    /// Opens (or creates) every table.
    package init(environment: Environment, create: Bool) throws {
        let tables = try environment.openTables(Self.tableNames, create: create)
        (meta, items, itemIndex, chunks, chunkRefs, blobs, snapshots, pending, changes, versions, peers) = (
            tables[0], tables[1], tables[2], tables[3], tables[4], tables[5], tables[6], tables[7], tables[8],
            tables[9], tables[10]
        )
    }
}
