import Foundation

/// Reads any byte range of one stored content (a blob, a file in a snapshot) chunk by chunk, for a
/// reader that does not read from start to end in one go: a mounted file, read by the kernel in
/// pieces and at any offset.
///
/// Only the chunks overlapping a range are opened, each checked against its id as always, and kept
/// in a shared ``DecodedChunkCache``. The chunk list is located by binary search: an inline list's
/// entries at once, an indirect list's one list chunk at a time (the one holding the offset, kept
/// until a read leaves it), so memory per reader stays at most one list chunk (256 KiB) whatever
/// the content's size. A range read cannot check a whole-content digest; every byte returned has
/// passed its chunk's authentication and id check. Safe to use from several threads.
package final class ContentRangeReader: Sendable {
    private let environment: Environment
    private let store: ContentStore
    private let cache: DecodedChunkCache
    private let scope: SyncScope
    private let level: ProtectionLevel
    /// A `completeUnlessOpen` content's write keys, taken when the reader was made: like a file of
    /// that class open when the device locks, it stays readable until the reader goes.
    private let write: WriteKeys?
    /// The content's size in bytes.
    private let size: UInt64
    private let chunks: ChunkList
    /// Where each top-level piece of the list starts: each entry of an inline list, each list chunk
    /// of an indirect one; a last element holds the size.
    private let starts: [UInt64]
    private let coders = Locked<[PooledCoder]>([])
    /// The list chunk loaded last (indirect lists): its index, its entries and where each starts.
    private let listChunk = Locked<LoadedListChunk?>(nil)

    /// A coder between uses: taken out of the pool by one thread at a time, so never shared.
    private struct PooledCoder: @unchecked Sendable {
        let coder: ChunkRecord.Coder
    }

    private struct LoadedListChunk {
        let index: Int
        let entries: [ChunkEntry]
        let starts: [UInt64]
    }

    /// A reader of `content` in `environment`, keeping opened chunks in `cache`.
    ///
    /// - Throws: ``CofferError`` `.decode` if the chunk list does not add up to the content's size.
    package init(
        _ content: some StoredContent,
        environment: Environment,
        store: ContentStore,
        cache: DecodedChunkCache
    ) throws(CofferError) {
        self.environment = environment
        self.store = store
        self.cache = cache
        scope = content.scope
        level = content.level
        write = content.write
        size = content.size
        chunks = content.chunks
        var starts: [UInt64] = []
        var offset: UInt64 = 0
        switch content.chunks {
        case .inline(let entries):
            starts.reserveCapacity(entries.count + 1)
            for entry in entries {
                starts.append(offset)
                offset += UInt64(entry.length)
            }
        case .indirect(let references):
            starts.reserveCapacity(references.count + 1)
            for reference in references {
                starts.append(offset)
                offset += reference.byteCount
            }
        }
        guard offset == content.size else {
            throw CofferError(
                .decode,
                "its chunk list covers \(offset) bytes where its size is \(content.size); it is damaged"
            )
        }
        starts.append(offset)
        self.starts = starts
    }

    /// Copies the bytes from `offset` into `buffer`, as many as fit or as the content has.
    ///
    /// - Parameter keys: The vault's keys now (``Vault/keyRing()``): a `whenUnlocked` content is not
    ///   read while the vault is locked, even from the cache.
    /// - Returns: The bytes copied: fewer than the buffer holds only at the end of the content.
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if the content's keys are not in memory,
    ///   `.decode` if a chunk is missing or fails its checks.
    package func read(
        at offset: UInt64,
        into buffer: UnsafeMutableRawBufferPointer,
        keys: KeyRing
    ) throws(CofferError) -> Int {
        guard offset < size, buffer.count > 0 else { return 0 }
        let end = min(size, offset + UInt64(buffer.count))
        let chunkKeys = try ChunkKeys(scope: scope, level: level, write: write, keys: keys)
        let coder = try takeCoder()
        defer { coders.withLock { $0.append(PooledCoder(coder: coder)) } }
        var position = offset
        while position < end {
            let (entry, start) = try locate(position, keys: chunkKeys, coder: coder)
            let plaintext = try open(entry, keys: chunkKeys, coder: coder)
            let from = Int(position - start)
            let upTo = Int(min(end, start + UInt64(entry.length)) - start)
            plaintext.withUnsafeBytes { raw in
                let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[Int(position - offset)...])
                destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[from..<upTo]))
            }
            position = start + UInt64(upTo)
        }
        return Int(end - offset)
    }

    /// The chunk holding byte `position`, and where it starts.
    private func locate(
        _ position: UInt64,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder
    ) throws(CofferError) -> (ChunkEntry, UInt64) {
        let index = Self.piece(holding: position, in: starts)
        switch chunks {
        case .inline(let entries):
            return (entries[index], starts[index])
        case .indirect(let references):
            let loaded = try listChunk.withLock { (loaded) throws(CofferError) -> LoadedListChunk in
                if let current = loaded, current.index == index { return current }
                let entries = try storage("reading a chunk list") {
                    try environment.read { txn in
                        try store.listChunkEntries(references[index], keys: keys, coder: coder, in: txn)
                    }
                }
                var entryStarts: [UInt64] = []
                entryStarts.reserveCapacity(entries.count + 1)
                var offset = starts[index]
                for entry in entries {
                    entryStarts.append(offset)
                    offset += UInt64(entry.length)
                }
                entryStarts.append(offset)
                let current = LoadedListChunk(index: index, entries: entries, starts: entryStarts)
                loaded = current
                return current
            }
            let entryIndex = Self.piece(holding: position, in: loaded.starts)
            return (loaded.entries[entryIndex], loaded.starts[entryIndex])
        }
    }

    /// The chunk's plaintext, from the cache or opened from the map.
    private func open(_ entry: ChunkEntry, keys: ChunkKeys, coder: ChunkRecord.Coder) throws(CofferError) -> [UInt8] {
        if let held = cache.plaintext(of: entry.id, scope: scope, level: level) { return held }
        let plaintext = try storage("reading a chunk") {
            try environment.read { txn in try store.chunks.load(entry.id, keys: keys, coder: coder, in: txn) }
        }
        guard let plaintext else {
            throw CofferError(
                .decode,
                "a chunk is missing (the content was deleted or replaced, or the vault is damaged; \(InterfaceName.verify) tells which)"
            )
        }
        guard plaintext.count == Int(entry.length) else {
            throw CofferError(.decode, "a chunk holds \(plaintext.count) bytes where its list says \(entry.length)")
        }
        cache.insert(plaintext, of: entry.id, scope: scope, level: level)
        return plaintext
    }

    private func takeCoder() throws(CofferError) -> ChunkRecord.Coder {
        if let pooled = coders.withLock({ $0.popLast() }) { return pooled.coder }
        return try ChunkRecord.Coder()
    }

    /// The index of the piece holding `position`: the last start at or before it (`starts` ascends,
    /// its last element is the end, and `position` is before it).
    static func piece(holding position: UInt64, in starts: [UInt64]) -> Int {
        var low = 0
        var high = starts.count - 1
        while high - low > 1 {
            let middle = (low + high) / 2
            if starts[middle] <= position { low = middle } else { high = middle }
        }
        return low
    }
}
