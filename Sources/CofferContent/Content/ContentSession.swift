import Foundation
internal import Glibc

/// A chunk on its way into the store.
package struct PendingChunk {
    package let id: ChunkID
    /// The sealed record; `nil` when the chunk was already stored when a worker looked.
    package let sealed: [UInt8]?
    /// Kept only for chunks found already stored, in case they are freed before the batch commits
    /// and must be sealed after all.
    package let plaintext: [UInt8]
    /// Whether ``sealed`` replaces a stored record of the chunk that was found damaged.
    package let replacesDamaged: Bool

    package init(id: ChunkID, sealed: [UInt8]?, plaintext: [UInt8], replacesDamaged: Bool = false) {
        self.id = id
        self.sealed = sealed
        self.plaintext = plaintext
        self.replacesDamaged = replacesDamaged
    }
}

/// What one content (a blob's bytes, a file's) became: its size, SHA-256, and chunk list.
package struct ContentSummary: Sendable {
    package let size: UInt64
    /// The content's SHA-256; `nil` when the session does not hash contents (a backup's files).
    package let digest: [UInt8]?
    package let chunkCount: UInt64
    package let chunks: ChunkList
    /// The sealed size of the chunks that were new when the workers looked: what this content added.
    package let addedBytes: UInt64

    package init(size: UInt64, digest: [UInt8]?, chunkCount: UInt64, chunks: ChunkList, addedBytes: UInt64) {
        self.size = size
        self.digest = digest
        self.chunkCount = chunkCount
        self.chunks = chunks
        self.addedBytes = addedBytes
    }
}

/// One write through the parallel pipeline, for one content or many (every file of a backup), with
/// one `pending` entry holding all the references it takes (docs/ARCHITECTURE.md, "Blob tier"):
///
/// ```
/// this thread:     read 4 MiB at a time ─▶ FastCDC ─▶ submit chunk … then an end marker per content
/// worker × cores:  chunk id (HMAC) ─▶ already stored? ─▶ else zstd + AES-GCM
/// committer:       in order: chunk list (and SHA-256, for blobs) per content; at each end marker, the handler
///                  gets the content's summary; hands each batch of ≤ 2 MiB to the flusher
/// flusher:         one LMDB write transaction per batch (retain each chunk, note it in `pending`),
///                  one batch behind, so the committer never waits for the disk (``BatchFlusher``)
/// finish:          one transaction: the remaining batch, then the caller's records, pending dropped
/// ```
///
/// At most a window of chunks is in flight, so memory is bounded whatever the size. Until the final
/// transaction nothing is visible; if anything fails the references taken are released (``abandon()``),
/// and if the process dies they are released by the next writer or `gc`.
package final class ContentSession<Marker>: @unchecked Sendable {
    /// Called on the committer thread, in order, at the end of each content (with its summary) or at
    /// a bare marker (`nil`); it may store extra chunks through the context (a backup's tree).
    package typealias Handler = (Marker, ContentSummary?, CommitContext) throws(CofferError) -> Void

    /// Bytes read from a source at a time (plus room for one unfinished chunk carried over).
    package static var segmentSize: Int { 4 << 20 }
    /// A batch commits when it holds this many bytes or this many chunks.
    package static var batchByteLimit: Int { 4 << 20 }
    package static var batchChunkLimit: Int { 256 }

    private enum Job {
        case chunk([UInt8])
        case end(Marker)
        case marker(Marker)
    }

    private enum Processed {
        case chunk(PendingChunk, plaintext: [UInt8])
        case end(Marker)
        case marker(Marker)
    }

    package let environment: Environment
    package let store: ContentStore
    package let keys: KeyRing
    package let scope: SyncScope
    package let level: ProtectionLevel
    /// A `completeUnlessOpen` session's write keys (its chunk ids, chunk keys and chunk boundaries
    /// come from them, so it dedups only within itself); `nil` for the other levels.
    package let writeKeys: WriteKeys?
    package let write = PendingWrites.WriteID.random()
    /// The session's chunker (its gear table is the scope's), for a caller that cuts its own stream.
    package let chunker: FastCDC
    private let pipeline: OrderedPipeline<Job, Processed>
    private let committer: Committer
    /// The committer's context, for hooks a caller installs before it submits anything
    /// (``CommitContext/onChunk``).
    package var commitContext: CommitContext { committer.context }
    /// The read buffer, reused for every content of the session (only the submitting thread uses it).
    private var readBuffer: [UInt8] = []

    /// Registers the write in `pending` (reclaiming dead writes first) and starts the pipeline.
    ///
    /// - Parameter hashesContents: Whether each content's summary carries its SHA-256 (a blob's
    ///   manifest records it; a backup's files do not, so their bytes are hashed once, for the ids).
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when the keys of `scope` and `level` are not
    ///   in memory, `.param` for a bad compression level.
    package init(
        vault: Vault,
        keys: KeyRing,
        scope: SyncScope,
        level: ProtectionLevel,
        writeKeys: WriteKeys? = nil,
        compressionLevel: Int,
        hashesContents: Bool,
        progress: (@Sendable (Int64) -> Void)?,
        handler: @escaping Handler
    ) throws(CofferError) {
        guard ChunkRecord.Coder.compressionLevels.contains(compressionLevel) else {
            throw CofferError(
                .param,
                "compression level \(compressionLevel) is out of range; use 1 (fastest) to 19 (smallest)"
            )
        }
        environment = vault.environment
        store = ContentStore(schema: vault.schema)
        self.keys = keys
        self.scope = scope
        self.level = level
        self.writeKeys = writeKeys
        // Fail before reading anything if the keys are not in memory.
        let committerKeys = try ChunkKeys(scope: scope, level: level, write: writeKeys, keys: keys)
        let coder = try ChunkRecord.Coder(compressionLevel: compressionLevel)
        let seed: SecureBytes
        if let writeKeys {
            seed = writeKeys.gearSeed
        } else {
            seed = try keys.key(.gear, scope.keyScope, .afterFirstUnlock)
        }
        do {
            chunker = FastCDC(gear: try GearTable(seed: seed), sizes: vault.configuration.chunkSizes)
        } catch {
            throw CofferError(.internalError, "deriving the chunker's gear table failed: \(error)", underlying: error)
        }
        let write = write
        let store = store
        try storage("starting a write") {
            _ = try store.pending.reclaimDead(store: store.chunks, environment: vault.environment)
            try vault.environment.write { txn in try store.pending.begin(write, in: txn) }
        }
        let workers = OrderedPipeline<Job, Processed>.defaultWorkerCount
        pipeline = OrderedPipeline(
            workers: workers,
            window: workers * 16,
            makeTransform: Self.makeWorker(
                keys: keys,
                scope: scope,
                level: level,
                writeKeys: writeKeys,
                compressionLevel: compressionLevel,
                environment: vault.environment,
                chunks: store.chunks
            )
        )
        committer = Committer(
            environment: vault.environment,
            store: store,
            write: write,
            context: CommitContext(keys: committerKeys, coder: coder),
            flusherContext: CommitContext(
                keys: try ChunkKeys(scope: scope, level: level, write: writeKeys, keys: keys),
                coder: try ChunkRecord.Coder(compressionLevel: compressionLevel)
            ),
            hashesContents: hashesContents,
            progress: progress,
            handler: handler
        )
        let pipeline = pipeline
        let committer = committer
        let thread = Thread {
            nameCurrentThread("coffer-committer")
            committer.run(pipeline)
        }
        thread.name = "coffer-committer"
        thread.start()
    }

    /// Chunks everything `source` yields as one content, then queues its end marker. Returns once the
    /// content is submitted (not committed): the next content can start at once.
    package func add(_ source: inout some ByteSource, marker: Marker) throws(CofferError) {
        try addContent(&source)
        try endContent(marker)
    }

    /// Chunks everything `source` yields as the current content; ``endContent(_:)`` ends it.
    package func addContent(_ source: inout some ByteSource) throws(CofferError) {
        let pipeline = pipeline
        try Self.chunk(&source, with: chunker, buffer: &readBuffer) { (piece) throws(CofferError) in
            try pipeline.submit(.chunk(piece))
        }
    }

    /// Submits one chunk of the current content, cut with ``chunker`` by a caller that reads and cuts
    /// its contents on its own threads (a backup's readers) and submits them in order, one thread at
    /// a time.
    package func addChunk(_ piece: [UInt8]) throws(CofferError) {
        try pipeline.submit(.chunk(piece))
    }

    /// Ends the current content: the handler gets its summary with `marker`.
    package func endContent(_ marker: Marker) throws(CofferError) {
        try pipeline.submit(.end(marker))
    }

    /// Queues a marker with no content, handled in order with the contents around it.
    package func addMarker(_ marker: Marker) throws(CofferError) {
        try pipeline.submit(.marker(marker))
    }

    /// Waits for every content to be committed, then runs `body` in the final transaction (after the
    /// remaining references are taken) and drops the `pending` entry there: what `body` writes becomes
    /// visible with everything it refers to. On failure, releases what the session took.
    ///
    /// - Parameter prepare: Runs first, once the committer is done, on this thread: chunks it stores
    ///   through the context (the last of a backup's tree) join the final transaction. (The
    ///   transaction's body may run more than once if the map must grow, so it must not store any.)
    package func finish<R>(
        prepare: (CommitContext) throws(CofferError) -> Void = { _ in },
        _ body: (Transaction, CommitContext) throws -> R
    ) throws(CofferError) -> R {
        do {
            let last = try committed(prepare: prepare)
            let result = try storage("committing the write") {
                try environment.write { txn in
                    try last.retain(in: txn)
                    return try body(txn, last.context)
                }
            }
            close()
            return result
        } catch {
            abandon(error)
            throw error
        }
    }

    /// What is left of a session once everything was committed but its final transaction: the last
    /// batch's references, to take in whichever transaction makes the session's records visible (a
    /// ``VaultTransaction`` takes several sessions' in one).
    package struct LastBatch {
        fileprivate let session: ContentSession
        fileprivate let chunks: [PendingChunk]
        fileprivate let batch: UInt32
        /// The commit context, for records that need the chunk keys or coder.
        package let context: CommitContext

        /// Takes the last batch's references and drops the session's `pending` entry, in `txn`:
        /// what `txn` writes besides becomes visible with everything the session stored. May run
        /// again in a fresh transaction (when the map grows).
        package func retain(in txn: Transaction) throws {
            try ContentSession.retain(
                chunks,
                batch: batch,
                of: session.write,
                store: session.store,
                context: context,
                in: txn
            )
            try session.store.pending.finish(session.write, in: txn)
        }
    }

    /// Waits for every content to be committed, runs `prepare` (chunks it stores join the last
    /// batch), and returns the last batch for the final transaction. On failure the caller abandons
    /// the session.
    package func committed(
        prepare: (CommitContext) throws(CofferError) -> Void = { _ in }
    ) throws(CofferError) -> LastBatch {
        pipeline.finishSubmitting()
        var remaining = try committer.wait()
        let context = committer.context
        try prepare(context)
        remaining.chunks += context.queued
        context.queued.removeAll()
        return LastBatch(session: self, chunks: remaining.chunks, batch: remaining.batch, context: context)
    }

    /// Stops the pipeline's threads after the final transaction committed.
    package func close() {
        pipeline.shutDown()
    }

    /// Stops the session and releases every reference it took. Best effort: if this fails too, the
    /// entry stays and `gc` (or the next write, once this process has exited) releases it.
    ///
    /// - Returns: What the release freed, or `nil` if it failed.
    @discardableResult
    package func abandon(
        _ error: CofferError = CofferError(.userCanceled, "the write was abandoned")
    ) -> PendingWrites.Released? {
        pipeline.cancel(error)
        _ = try? committer.wait()
        pipeline.shutDown()
        return try? store.pending.release(write, store: store.chunks, environment: environment)
    }

    /// Abandons the session for `error` and returns the error to throw: for a stop the user asked
    /// for, it also says that nothing was kept and what was given back.
    package func abandoning(_ error: CofferError) -> CofferError {
        let released = abandon(error)
        guard error.code == .userCanceled else { return error }
        guard let released else {
            return CofferError(
                .userCanceled,
                "\(error.message); nothing was stored, but releasing the chunks written so far failed: \(InterfaceName.collectGarbage) frees them"
            )
        }
        return CofferError(
            .userCanceled,
            "\(error.message); nothing was stored, and the \(ByteCount.format(released.freedBytes)) written so far (\(released.freedChunks) chunks) was released"
        )
    }

    // MARK: Chunking

    /// Reads the source in segments and submits each chunk FastCDC cuts.
    ///
    /// - Parameters:
    ///   - segmentSize: Bytes read at a time.
    ///   - buffer: The read buffer, reused between calls (allocated on first use): a backup of many
    ///     small files must not zero megabytes per file.
    package static func chunk(
        _ source: inout some ByteSource,
        with chunker: FastCDC,
        segmentSize: Int = segmentSize,
        buffer: inout [UInt8],
        submit: ([UInt8]) throws(CofferError) -> Void
    ) throws(CofferError) {
        if buffer.count != segmentSize + chunker.sizes.maximum {
            buffer = [UInt8](repeating: 0, count: segmentSize + chunker.sizes.maximum)
        }
        var start = 0
        var end = 0
        var atEnd = false
        while true {
            if !atEnd {
                try buffer.withMutableBytes { (raw) throws(CofferError) in
                    if start > 0 {
                        memmove(raw.baseAddress!, raw.baseAddress! + start, end - start)
                        end -= start
                        start = 0
                    }
                    while end < raw.count {
                        let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[end...]))
                        if count == 0 {
                            atEnd = true
                            break
                        }
                        end += count
                    }
                }
            }
            while true {
                let length = buffer.withUnsafeBytes { raw in
                    chunker.cut(UnsafeRawBufferPointer(rebasing: raw[start..<end]), isFinal: atEnd)
                }
                guard let length else { break }
                try submit(Array(buffer[start..<(start + length)]))
                start += length
            }
            if atEnd { return }
        }
    }

    /// Each worker's transform: id, dedup check, and seal only what is new (or what is stored but
    /// damaged, to replace it); markers pass through.
    private static func makeWorker(
        keys: KeyRing,
        scope: SyncScope,
        level: ProtectionLevel,
        writeKeys: WriteKeys?,
        compressionLevel: Int,
        environment: Environment,
        chunks: ChunkStore
    ) -> OrderedPipeline<Job, Processed>.TransformFactory {
        { () throws(CofferError) in
            let chunkKeys = try ChunkKeys(scope: scope, level: level, write: writeKeys, keys: keys)
            let coder = try ChunkRecord.Coder(compressionLevel: compressionLevel)
            return { (job) throws(CofferError) in
                switch job {
                case .end(let marker): return .end(marker)
                case .marker(let marker): return .marker(marker)
                case .chunk(let plaintext):
                    let id = try chunkKeys.id(of: plaintext)
                    let stored = try storage("checking for a stored chunk") {
                        try environment.read { txn in
                            try chunks.stored(id, keys: chunkKeys, cipher: coder.cipher, in: txn)
                        }
                    }
                    let known = stored == .intact
                    let sealed =
                        known
                        ? nil
                        : try plaintext.withBytes { (raw) throws(CofferError) in
                            try ChunkRecord.seal(raw, id: id, keys: chunkKeys, coder: coder)
                        }
                    return .chunk(
                        PendingChunk(
                            id: id,
                            sealed: sealed,
                            plaintext: known ? plaintext : [],
                            replacesDamaged: stored == .damaged
                        ),
                        plaintext: plaintext
                    )
                }
            }
        }
    }

    // MARK: Committing

    /// Takes a reference to each chunk (storing the new ones) and notes them under the write, in `txn`.
    package static func retain(
        _ chunks: [PendingChunk],
        batch: UInt32,
        of write: PendingWrites.WriteID,
        store: ContentStore,
        context: CommitContext,
        in txn: Transaction
    ) throws {
        for chunk in chunks {
            var sealed = chunk.sealed
            // A chunk a worker saw stored may have been freed since (its last owner deleted): then it
            // is sealed here and stored after all.
            if sealed == nil, try store.chunks.referenceCount(of: chunk.id, in: txn) == nil, !chunk.plaintext.isEmpty {
                sealed = try context.seal(chunk.plaintext, id: chunk.id)
            }
            try store.chunks.retain(chunk.id, sealed: sealed, replacing: chunk.replacesDamaged, in: txn)
        }
        try store.pending.note(chunks.map(\.id), batch: batch, of: write, in: txn)
    }

    /// The committer's keys and contexts, lent to the handler and the final transaction: to seal and
    /// queue extra chunks (list chunks, a backup's tree) and to take references to stored ones.
    package final class CommitContext: @unchecked Sendable {
        package let keys: ChunkKeys
        package let coder: ChunkRecord.Coder
        /// Chunks queued for the next batch.
        fileprivate(set) var queued: [PendingChunk] = []

        package init(keys: ChunkKeys, coder: ChunkRecord.Coder) {
            self.keys = keys
            self.coder = coder
        }

        package func seal(_ plaintext: [UInt8], id: ChunkID) throws(CofferError) -> [UInt8] {
            try plaintext.withBytes { (raw) throws(CofferError) in
                try ChunkRecord.seal(raw, id: id, keys: keys, coder: coder)
            }
        }

        /// Seals `plaintext` as a chunk, queues it, and returns its id.
        package func store(_ plaintext: [UInt8]) throws(CofferError) -> ChunkID {
            let id = try keys.id(of: plaintext)
            queued.append(PendingChunk(id: id, sealed: try seal(plaintext, id: id), plaintext: []))
            return id
        }

        /// Queues one more reference to a chunk that is stored (one a previous snapshot holds).
        package func retainStored(_ id: ChunkID) {
            queued.append(PendingChunk(id: id, sealed: nil, plaintext: []))
        }

        /// What the committer runs once the current item is handled (``pause(_:)``).
        fileprivate(set) var pauseRequest: ((Checkpoint) throws(CofferError) -> Void)?

        /// Called on the committer's thread after each chunk of a content is taken, in order, with
        /// the bytes of its sealed record when it is new here (0 when it was stored already): a
        /// backup counts what it added, and pauses for a part (``pause(_:)``), there too.
        package var onChunk: ((UInt64) -> Void)?

        /// Asks the committer to stop once the current chunk or marker is handled, commit every chunk
        /// the session has stored so far, run `body` on its thread with no transaction of the session
        /// open, and go on: a backup commits a part of itself and uploads it there (``Checkpoint``).
        package func pause(_ body: @escaping (Checkpoint) throws(CofferError) -> Void) {
            pauseRequest = body
        }
    }

    /// The content the committer was in the middle of at a pause: its chunks so far.
    package struct PartialContent {
        /// The chunk list so far: its stored list chunks and the entries after them (``ChunkListBuilder/finish()``
        /// gives the last list chunk to store, when there is one).
        package let list: ChunkListBuilder
        package let chunkCount: UInt64
        package let size: UInt64
    }

    /// A point in a session where every chunk it stored is committed: records committed here may
    /// refer to them (``CommitContext/pause(_:)``).
    package struct Checkpoint {
        fileprivate let environment: Environment
        fileprivate let store: ContentStore
        fileprivate let write: PendingWrites.WriteID
        /// The content whose chunks the session stored in part so far, when it paused within one:
        /// what `body` commits must refer to them too.
        package let partial: PartialContent?

        /// Commits `body` in one write transaction, and counts the write as begun after it
        /// (``PendingWrites/advanceBegin(of:in:)``): what `body` commits must refer to every chunk
        /// the session stored so far that another device needs (an export credits its receiver with
        /// them).
        package func commit<R>(_ what: String, _ body: (Transaction) throws -> R) throws(CofferError) -> R {
            let store = store
            let write = write
            return try storage(what) {
                try environment.write { txn in
                    let result = try body(txn)
                    try store.pending.advanceBegin(of: write, in: txn)
                    return result
                }
            }
        }
    }

    /// Takes processed chunks in order on its own thread: hashes each content, builds its chunk list,
    /// calls the handler at each marker, and commits batches.
    private final class Committer: @unchecked Sendable {
        package let environment: Environment
        package let store: ContentStore
        package let write: PendingWrites.WriteID
        package let context: CommitContext
        /// The flusher's own keys and contexts, to re-seal a chunk freed since a worker saw it.
        package let flusherContext: CommitContext
        package let hashesContents: Bool
        package let progress: (@Sendable (Int64) -> Void)?
        package let handler: Handler
        private let done = DispatchSemaphore(value: 0)
        private var outcome: Result<(chunks: [PendingChunk], batch: UInt32), CofferError>?

        package init(
            environment: Environment,
            store: ContentStore,
            write: PendingWrites.WriteID,
            context: CommitContext,
            flusherContext: CommitContext,
            hashesContents: Bool,
            progress: (@Sendable (Int64) -> Void)?,
            handler: @escaping Handler
        ) {
            self.environment = environment
            self.store = store
            self.write = write
            self.context = context
            self.flusherContext = flusherContext
            self.hashesContents = hashesContents
            self.progress = progress
            self.handler = handler
        }

        package func run(_ pipeline: OrderedPipeline<Job, Processed>) {
            let flusher = makeFlusher(pipeline)
            outcome = Result { () throws(CofferError) in
                do throws(CofferError) {
                    let remaining = try commitAll(pipeline, flusher)
                    try flusher.finish()
                    progress?(remaining.bytesHandled)
                    return (remaining.chunks, remaining.batch)
                } catch {
                    flusher.cancel()
                    _ = try? flusher.finish()
                    throw error
                }
            }
            if case .failure(let error) = outcome { pipeline.cancel(error) }
            done.signal()
        }

        /// The thread that commits the full batches, each in one write transaction, with its own
        /// context (the committer's keeps sealing list and tree chunks meanwhile).
        private func makeFlusher(_ pipeline: OrderedPipeline<Job, Processed>) -> BatchFlusher {
            let environment = environment
            let store = store
            let write = write
            let context = flusherContext
            let progress = progress
            return BatchFlusher(
                commit: { (batch) throws(CofferError) in
                    // A batch needs no durability of its own: the write's last transaction, which
                    // names the content, commits immediately and so makes every batch durable.
                    try storage("storing chunks") {
                        try environment.write(durability: .untilNextCommit) { txn in
                            try ContentSession.retain(
                                batch.chunks,
                                batch: batch.number,
                                of: write,
                                store: store,
                                context: context,
                                in: txn
                            )
                        }
                    }
                    progress?(batch.bytesHandled)
                },
                onFailure: { error in pipeline.cancel(error) }
            )
        }

        /// Waits for the committer to end; returns what is left for the final transaction.
        package func wait() throws(CofferError) -> (chunks: [PendingChunk], batch: UInt32) {
            done.wait()
            done.signal()  // later waits return at once
            return try outcome!.get()
        }

        /// Takes every result in order; returns the last, unfinished batch, its number, and the bytes
        /// handled in all.
        private func commitAll(
            _ pipeline: OrderedPipeline<Job, Processed>,
            _ flusher: BatchFlusher
        ) throws(CofferError) -> (
            chunks: [PendingChunk], batch: UInt32, bytesHandled: Int64
        ) {
            let hasher: SHA256?
            do {
                hasher = hashesContents ? try SHA256() : nil
            } catch {
                throw CofferError(.internalError, "creating a digest context failed: \(error)", underlying: error)
            }
            var size: UInt64 = 0
            var added: UInt64 = 0
            var chunkCount: UInt64 = 0
            var list = ChunkListBuilder()
            var batch: [PendingChunk] = []
            var batchBytes = 0
            var batchNumber: UInt32 = 0
            var total: Int64 = 0

            func storeListChunk(_ chunk: ChunkListBuilder.ListChunk) throws(CofferError) {
                list.stored(chunk, id: try context.store(chunk.plaintext))
            }

            while let item = try pipeline.next() {
                switch item {
                case .chunk(let chunk, let plaintext):
                    do {
                        try hasher?.update(plaintext)
                    } catch {
                        throw CofferError(.internalError, "hashing the content failed: \(error)", underlying: error)
                    }
                    size += UInt64(plaintext.count)
                    total += Int64(plaintext.count)
                    chunkCount += 1
                    added += UInt64(chunk.sealed?.count ?? 0)
                    batchBytes += plaintext.count
                    batch.append(chunk)
                    if let full = list.append(ChunkEntry(id: chunk.id, length: UInt32(plaintext.count))) {
                        try storeListChunk(full)
                    }
                    context.onChunk?(UInt64(chunk.sealed?.count ?? 0))
                case .end(let marker):
                    if let last = list.finish() { try storeListChunk(last) }
                    let digest: [UInt8]?
                    do {
                        digest = try hasher?.finalize()
                    } catch {
                        throw CofferError(.internalError, "hashing the content failed: \(error)", underlying: error)
                    }
                    let summary = ContentSummary(
                        size: size,
                        digest: digest,
                        chunkCount: chunkCount,
                        chunks: list.list,
                        addedBytes: added
                    )
                    size = 0
                    added = 0
                    chunkCount = 0
                    list = ChunkListBuilder()
                    try handler(marker, summary, context)
                case .marker(let marker):
                    try handler(marker, nil, context)
                }
                if !context.queued.isEmpty {
                    batch += context.queued
                    context.queued.removeAll()
                }
                let pause = context.pauseRequest
                if (pause != nil && !batch.isEmpty) || batchBytes >= ContentSession.batchByteLimit
                    || batch.count >= ContentSession.batchChunkLimit
                {
                    try flusher.submit(BatchFlusher.Batch(chunks: batch, number: batchNumber, bytesHandled: total))
                    batch.removeAll(keepingCapacity: true)
                    batchNumber += 1
                    batchBytes = 0
                }
                if let pause {
                    context.pauseRequest = nil
                    try flusher.drain()
                    let partial = chunkCount > 0 ? PartialContent(list: list, chunkCount: chunkCount, size: size) : nil
                    try pause(Checkpoint(environment: environment, store: store, write: write, partial: partial))
                }
            }
            return (batch, batchNumber, total)
        }
    }
}
