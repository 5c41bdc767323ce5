import Foundation

/// Reads stored content (a blob's, a file's in a snapshot) through the parallel pipeline (docs/ARCHITECTURE.md, "Blob tier"):
///
/// ```
/// this thread:     manifest ─▶ chunk list (one list chunk at a time) ─▶ submit the chunks in range
/// worker × cores:  sealed chunk straight from the map ─▶ AES-GCM open ─▶ zstd ─▶ id check
/// this thread:     in order ─▶ trim to the range ─▶ output, SHA-256 of a full read checked at the end
/// ```
///
/// Workers read ahead up to a window of chunks. Every chunk is authenticated on its own (its record
/// binds its id, and the id is recomputed from the plaintext), so bytes reach the output only after
/// their chunk checked out; a whole-content digest, where there is one (blobs, files of version 1
/// snapshots), then confirms the manifest's chunk list.
package struct ContentReader {
    package let environment: Environment
    package let store: ContentStore
    package let keys: KeyRing

    package init(environment: Environment, store: ContentStore, keys: KeyRing) {
        self.environment = environment
        self.store = store
        self.keys = keys
    }

    /// A context for reading content of this reader's vault, to keep on one thread.
    package func makeContext() throws(CofferError) -> ContentReadContext {
        try ContentReadContext(keys: keys)
    }

    /// Streams the chunks overlapping `range`, in order, to `sink`.
    ///
    /// - Parameters:
    ///   - manifest: The content.
    ///   - range: The bytes to stream.
    ///   - sink: Where they go.
    ///   - context: A context this thread keeps from one read to the next; without one, the read
    ///     makes its own.
    ///   - parallelAbove: Content of more chunks than this is opened by worker threads; smaller
    ///     content on this thread (starting threads would cost more than the work). A caller that
    ///     already reads several contents at once passes more.
    ///   - progress: Called with the bytes streamed so far.
    package func stream(
        _ manifest: some StoredContent,
        range: Range<UInt64>,
        to sink: inout some ByteSink,
        context: ContentReadContext? = nil,
        parallelAbove: Int = 2,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CofferError) {
        let isWhole = range == 0..<manifest.size
        let chunkKeys: ChunkKeys
        let coder: ChunkRecord.Coder
        if let context {
            chunkKeys = try context.chunkKeys(for: manifest)
            coder = context.coder
        } else {
            chunkKeys = try ChunkKeys(content: manifest, keys: keys)
            coder = try ChunkRecord.Coder()
        }
        let hasher: SHA256?
        do {
            hasher = isWhole && manifest.expectedDigest != nil ? try SHA256() : nil
        } catch {
            throw CofferError(.internalError, "creating a digest context failed: \(error)", underlying: error)
        }
        // Contents of a few chunks (most files in a backup) are read on this thread, with its keys
        // and contexts.
        var directResults: [[UInt8]] = []
        var pipeline: OrderedPipeline<ChunkEntry, [UInt8]>?
        if case .inline(let entries) = manifest.chunks, entries.count <= parallelAbove {
            // Read on this thread below.
        } else {
            let workers = OrderedPipeline<ChunkEntry, [UInt8]>.defaultWorkerCount
            let fetch = makeWorker(scope: manifest.scope, level: manifest.level, write: manifest.write)
            pipeline = OrderedPipeline(workers: workers, window: workers * 4, makeTransform: fetch)
        }
        let chunks = store.chunks
        defer { pipeline?.shutDown() }
        // The slice of each submitted chunk that is inside the range, in submission order.
        var slices: [Range<Int>] = []
        var slicesHead = 0
        var done: Int64 = 0

        func deliverOne() throws(CofferError) {
            let next = pipeline == nil ? directResults.popLast() : try pipeline!.next()
            guard let plaintext = next else { return }
            let slice = slices[slicesHead]
            slicesHead += 1
            if slicesHead >= 1024 {
                slices.removeFirst(slicesHead)
                slicesHead = 0
            }
            try plaintext.withBytes { (raw) throws(CofferError) in
                try sink.write(UnsafeRawBufferPointer(rebasing: raw[slice]))
                if let hasher {
                    do {
                        try hasher.update(raw)
                    } catch {
                        throw CofferError(.internalError, "hashing the blob failed: \(error)", underlying: error)
                    }
                }
            }
            done += Int64(slice.count)
            progress?(done)
        }

        try manifest.chunks.forEachEntry(
            in: range,
            loadListChunk: { (reference) throws(CofferError) in
                try storage("reading a chunk list") {
                    try environment.read { txn in
                        try store.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                    }
                }
            },
            { (entry, offset) throws(CofferError) in
                let lower = Int(max(range.lowerBound, offset) - offset)
                let upper = Int(min(range.upperBound, offset + UInt64(entry.length)) - offset)
                if let pipeline {
                    while !pipeline.hasRoom { try deliverOne() }
                    slices.append(lower..<upper)
                    try pipeline.submit(entry)
                } else {
                    slices.append(lower..<upper)
                    directResults.append(
                        try Self.load(entry, from: chunks, keys: chunkKeys, coder: coder, in: environment)
                    )
                    try deliverOne()
                }
                return true
            }
        )
        pipeline?.finishSubmitting()
        while slicesHead < slices.count { try deliverOne() }
        if let hasher {
            let digest: [UInt8]
            do {
                digest = try hasher.finalize()
            } catch {
                throw CofferError(.internalError, "hashing the blob failed: \(error)", underlying: error)
            }
            guard digest == manifest.expectedDigest else {
                throw CofferError(.decode, "its content does not match its recorded SHA-256 digest")
            }
        }
    }

    /// Each worker's transform: load the chunk from the map, open it, check its length.
    private func makeWorker(
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?
    ) -> OrderedPipeline<ChunkEntry, [UInt8]>.TransformFactory {
        let keys = keys
        let environment = environment
        let chunks = store.chunks
        return { () throws(CofferError) in
            let chunkKeys = try ChunkKeys(scope: scope, level: level, write: write, keys: keys)
            let coder = try ChunkRecord.Coder()
            return { (entry) throws(CofferError) in
                try Self.load(entry, from: chunks, keys: chunkKeys, coder: coder, in: environment)
            }
        }
    }

    /// Loads one chunk from the map, opens it and checks its length.
    private static func load(
        _ entry: ChunkEntry,
        from chunks: ChunkStore,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in environment: Environment
    ) throws(CofferError) -> [UInt8] {
        let plaintext = try storage("reading a chunk") {
            try environment.read { txn in try chunks.load(entry.id, keys: keys, coder: coder, in: txn) }
        }
        guard let plaintext else {
            throw CofferError(
                .decode,
                "a chunk is missing (the blob was deleted or replaced during the read, or the vault is damaged; \(InterfaceName.verify) tells which)"
            )
        }
        guard plaintext.count == Int(entry.length) else {
            throw CofferError(
                .decode,
                "a chunk holds \(plaintext.count) bytes where its manifest says \(entry.length)"
            )
        }
        return plaintext
    }
}

/// Content stored as chunks, as a reader needs it: a blob's manifest, a file in a snapshot.
package protocol StoredContent {
    var scope: SyncScope { get }
    var level: ProtectionLevel { get }
    /// The keys of the write that stored it, for `completeUnlessOpen` content; `nil` otherwise.
    var write: WriteKeys? { get }
    var size: UInt64 { get }
    /// The content's SHA-256, checked after a whole read; `nil` when there is none to check.
    var expectedDigest: [UInt8]? { get }
    var chunks: ChunkList { get }
}

extension ChunkRecord {
    /// A check of chunk records against the keys of `content`'s write, when they are agreed per
    /// write (``SyncedRecords/perWriteChunkCheck(id:stored:)``); `nil` for other content.
    package static func perWriteCheck(
        of content: some StoredContent,
        keys: KeyRing,
        coder: Coder
    ) throws(CofferError) -> ChunkRecordCheck? {
        guard content.level.isSealedToClassKey else { return nil }
        let chunkKeys = try ChunkKeys(content: content, keys: keys)
        return { (id, stored) throws(CofferError) in try check(stored, id: id, keys: chunkKeys, coder: coder) }
    }
}

extension ChunkKeys {
    /// The chunk keys `content` is sealed with.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when they are not in memory.
    package convenience init(content: some StoredContent, keys: KeyRing) throws(CofferError) {
        try self.init(scope: content.scope, level: content.level, write: content.write, keys: keys)
    }
}
