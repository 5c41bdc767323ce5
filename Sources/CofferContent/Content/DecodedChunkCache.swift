import Foundation

/// Chunks already opened, shared by every ``ContentRangeReader`` of a view (a mounted vault), the
/// most recently used kept within a byte budget, so that memory stays bounded whatever is read.
///
/// A reader jumping around a file, or the kernel reading a file in pieces smaller than its chunks,
/// asks for the same chunk several times; each is opened (AES-GCM, zstd, id check) once while it
/// stays in the budget. Entries are keyed by chunk id and namespace; a reader obtains the
/// namespace's keys before it looks here, so a locked vault's `whenUnlocked` chunks are never served
/// from the cache, and ``removeAll(level:)`` drops them from memory once the vault locks.
package final class DecodedChunkCache: Sendable {
    private struct Key: Hashable, Sendable {
        let id: ChunkID
        let scope: SyncScope
        let level: ProtectionLevel
    }

    private let chunks: BoundedCache<Key, [UInt8]>

    /// A cache holding at most `budget` bytes of plaintext (the newest chunk is always kept).
    package init(budget: Int) {
        chunks = BoundedCache(budget: budget)
    }

    /// The chunk's plaintext, if held.
    package func plaintext(of id: ChunkID, scope: SyncScope, level: ProtectionLevel) -> [UInt8]? {
        chunks.value(for: Key(id: id, scope: scope, level: level))
    }

    /// Keeps `plaintext` as chunk `id`'s, evicting the least recently used chunks beyond the budget.
    package func insert(_ plaintext: [UInt8], of id: ChunkID, scope: SyncScope, level: ProtectionLevel) {
        chunks.insert(plaintext, for: Key(id: id, scope: scope, level: level), cost: plaintext.count)
    }

    /// Drops every chunk of protection `level` (a vault that just locked drops its `whenUnlocked` ones).
    package func removeAll(level: ProtectionLevel) {
        chunks.removeAll { $0.level == level }
    }

    /// The plaintext bytes held now.
    package var heldBytes: Int { chunks.heldCost }
}
