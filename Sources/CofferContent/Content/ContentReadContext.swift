/// What reading content needs on one thread, kept from one read to the next: the cipher and zstd
/// contexts, and the chunk keys of the scope and level read last.
///
/// Making them costs more than reading a small file: a zstd decompression context alone allocates
/// about 160 KiB (mapped, faulted in, zeroed and unmapped again each time), and each key schedules
/// two HMAC contexts. A restore writes thousands of small files, so each of its workers keeps one
/// context for all of them. Not thread-safe: one per thread.
package final class ContentReadContext {
    package let coder: ChunkRecord.Coder
    private let ring: KeyRing
    private var lastKeys: (scope: SyncScope, level: ProtectionLevel, keys: ChunkKeys)?

    /// A context for content sealed under `ring`'s keys.
    package init(keys ring: KeyRing) throws(CofferError) {
        coder = try ChunkRecord.Coder()
        self.ring = ring
    }

    /// The chunk keys `content` is sealed with: those kept from the last read if it had the same
    /// scope and level. Content of a `completeUnlessOpen` write has keys of its own, never kept.
    package func chunkKeys(for content: some StoredContent) throws(CofferError) -> ChunkKeys {
        if content.write == nil, let lastKeys, lastKeys.scope == content.scope, lastKeys.level == content.level {
            return lastKeys.keys
        }
        let keys = try ChunkKeys(content: content, keys: ring)
        if content.write == nil { lastKeys = (content.scope, content.level, keys) }
        return keys
    }
}
