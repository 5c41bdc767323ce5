/// How much of a write transaction's commit waits for the disk.
///
/// LMDB's commit writes the transaction's pages, flushes them (`fdatasync`), then writes the meta page
/// that makes them the current state and flushes that too (through a descriptor opened with
/// `O_DSYNC`). Each flush costs the disk a cache flush on top of its bytes.
package enum CommitDurability: Sendable {
    /// Both flushes: once the commit returns, the transaction survives a crash or power loss.
    case immediate
    /// The pages are flushed but the meta page is only written (`MDB_NOMETASYNC` for this commit):
    /// a crash may undo this transaction, never damage the environment, until the next immediate
    /// commit, whose flush carries the meta page too. For the intermediate steps of a larger write
    /// that ends in an immediate commit (a blob's chunk batches).
    case untilNextCommit
}
