/// Reads chunk records a vault offloaded to an object store (``StoreContent``): what the content
/// readers fall back to when a chunk has a site but no local record. The sync layer provides it
/// (it speaks to the store) and attaches it to the vault's ``Schema``.
package protocol OffloadedChunkSource: AnyObject, Sendable {
    /// The store this source reads from (its identity: endpoint, bucket and prefix).
    var remote: String { get }

    /// Chunk `id`'s record as it was stored here, fetched from `object` at `site`, its id checked
    /// against the frame that holds it and the stream segments around it authenticated. The record
    /// itself is authenticated by whoever opens it.
    ///
    /// - Throws: ``CofferError`` `.io` naming the store when it cannot be reached, `.itemNotFound`
    ///   when the object is gone, `.decode` when what the store returns is not the chunk.
    func record(of id: ChunkID, at site: ChunkSite, in object: StoreObject) throws(CofferError) -> [UInt8]

    /// Offers a fetched record to the local cache, which keeps it if the budget allows (without
    /// waiting: a reader must not wait for a write while it holds a read transaction).
    func offerToCache(_ id: ChunkID, record: [UInt8])

    /// Notes that a cached chunk was read, so the cache drops it after chunks read less recently.
    func noteUse(of id: ChunkID)

    /// Notes that `object` is not the bundle this vault noted (overwritten, damaged: what a read
    /// found there did not authenticate, or was not the chunk): the sites in it stop counting, so
    /// reads go to the chunks' other sites and the next search for chunks reads it through again.
    func noteDamaged(_ object: StoreObject)

    /// Writes what the cache was offered and stops (the vault is closing).
    func finish()
}
