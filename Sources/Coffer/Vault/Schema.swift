/// The named tables of a vault's LMDB environment (docs/FORMAT.md). All are
/// created with the vault, so opening one never needs to write. A class: it is read on every operation,
/// and passing one reference is cheaper than copying eleven tables.
final class Schema: Sendable {
    /// The format version this build writes and the newest it reads.
    static let formatVersion: UInt32 = 1

    /// Table names, in creation order.
    static let tableNames = [
        "meta", "items", "itemIndex", "chunks", "chunkRefs", "blobs", "snapshots", "pending", "changes",
        "versions", "peers",
    ]

    let meta: Table
    let items: Table
    let itemIndex: Table
    let chunks: Table
    let chunkRefs: Table
    let blobs: Table
    let snapshots: Table
    let pending: Table
    let changes: Table
    let versions: Table
    let peers: Table

    /// Opens (or creates) every table.
    init(environment: Environment, create: Bool) throws {
        let tables = try environment.openTables(Self.tableNames, create: create)
        (meta, items, itemIndex, chunks, chunkRefs, blobs, snapshots, pending, changes, versions, peers) = (
            tables[0], tables[1], tables[2], tables[3], tables[4], tables[5], tables[6], tables[7], tables[8],
            tables[9], tables[10]
        )
    }
}
