import Foundation
internal import Glibc

/// How a blob is written.
public struct BlobWriteOptions: Sendable, Hashable {
    /// Whether the blob travels to sync peers. Blobs are backups, so the default is ``SyncScope/syncable``.
    public var scope: SyncScope = .syncable
    /// When the blob can be read. The default, ``ProtectionLevel/afterFirstUnlock``, lets background
    /// work read it while the vault is locked (Apple's default for files, too).
    public var protection: ProtectionLevel = .afterFirstUnlock
    /// The zstd level, 1 (fastest) to 19 (smallest); 3 by default.
    public var compressionLevel: Int = 3

    /// Options with the defaults, changed by the arguments given.
    public init(
        scope: SyncScope = .syncable,
        protection: ProtectionLevel = .afterFirstUnlock,
        compressionLevel: Int = 3
    ) {
        self.scope = scope
        self.protection = protection
        self.compressionLevel = compressionLevel
    }

    /// The accepted compression levels.
    public static let compressionLevels = 1...19
}

/// Called with the number of bytes done so far, from the thread doing the work.
public typealias BlobProgress = @Sendable (Int64) -> Void

/// Writes one blob through the parallel pipeline (DESIGN.md section 5):
///
/// ```
/// this thread:     read 4 MiB at a time ─▶ FastCDC ─▶ submit chunk
/// worker × cores:  chunk id (HMAC) ─▶ already stored? ─▶ else zstd + AES-GCM
/// committer:       in order: SHA-256 of the content, batch of ≤ 8 MiB ─▶ one LMDB write transaction
///                  (retain each chunk, note it in `pending`)
/// last:            one transaction: remaining batch, list chunks, manifest, old blob released,
///                  pending entry dropped, change logged
/// ```
///
/// At most a window of chunks is in flight, so memory is bounded whatever the size. Until the last
/// transaction nothing is visible; if anything fails the references taken so far are released, and if
/// the process dies they are released by the next writer or `gc` (the `pending` entry names a process
/// that is gone).
final class BlobWriter {
    private let environment: Environment
    private let store: BlobStore
    private let keys: KeyRing
    private let name: String
    private let options: BlobWriteOptions
    private let progress: BlobProgress?
    private let chunkSizes: ChunkSizes

    /// Bytes read from the source at a time (plus room for one unfinished chunk carried over).
    static let segmentSize = 4 << 20
    /// A batch commits when it holds this many bytes or ``batchChunkLimit`` chunks.
    static let batchByteLimit = 8 << 20
    static let batchChunkLimit = 256

    init(
        vault: Vault,
        keys: KeyRing,
        name: String,
        options: BlobWriteOptions,
        progress: BlobProgress?
    ) throws(CofferError) {
        try BlobManifest.validate(name: name)
        guard BlobWriteOptions.compressionLevels.contains(options.compressionLevel) else {
            throw CofferError(
                .param,
                "compression level \(options.compressionLevel) is out of range; use 1 (fastest) to 19 (smallest)"
            )
        }
        environment = vault.environment
        store = BlobStore(schema: vault.schema)
        self.keys = keys
        self.name = name
        self.options = options
        self.progress = progress
        chunkSizes = vault.configuration.chunkSizes
    }

    /// A chunk on its way through the pipeline.
    struct ProcessedChunk {
        let plaintext: [UInt8]
        let id: [UInt8]
        /// `nil` when the chunk was already stored when the worker looked.
        let sealed: [UInt8]?
    }

    /// Stores everything `source` yields as the blob, replacing any blob of the same name (in either
    /// scope) in the same transaction that makes the new one visible.
    func write(from source: inout some ByteSource) throws(CofferError) -> BlobInfo {
        let scope = options.scope
        let level = options.protection
        // Fail before reading anything if the keys are not in memory.
        let chunkKeys = try ChunkKeys(scope: scope, level: level, keys: keys)
        let coder = try ChunkRecord.Coder(compressionLevel: options.compressionLevel)
        let chunker = FastCDC(gear: try gearTable(scope: scope), sizes: chunkSizes)
        let write = PendingWrites.WriteID.random()
        try storage("starting a blob write") {
            try environment.write { txn in
                _ = try store.pending.reclaimDead(store: store.chunks, in: txn)
                try store.pending.begin(write, in: txn)
            }
        }
        do {
            let committed = try runPipeline(source: &source, chunker: chunker, write: write)
            return try finish(committed, write: write, chunkKeys: chunkKeys, coder: coder)
        } catch {
            abandon(write)
            throw error
        }
    }

    private func gearTable(scope: SyncScope) throws(CofferError) -> GearTable {
        let seed = try keys.key(.gear, scope.keyScope, .afterFirstUnlock)
        do {
            return try GearTable(seed: seed)
        } catch {
            throw CofferError(.internalError, "deriving the chunker's gear table failed: \(error)", underlying: error)
        }
    }

    /// Releases what a failed write took. Best effort: if this fails too, the entry stays and `gc`
    /// (or the next write, once this process has exited) releases it.
    private func abandon(_ write: PendingWrites.WriteID) {
        _ = try? environment.write { txn in try store.pending.abandon(write, store: store.chunks, in: txn) }
    }

    // MARK: Pipeline

    /// What the committer hands to the final transaction.
    private struct Committed {
        var size: UInt64 = 0
        var chunkCount: UInt64 = 0
        var digest: [UInt8] = []
        var list = ChunkListBuilder()
        /// Chunks not yet committed: the last batch and any list chunks.
        var remaining: [ProcessedChunk] = []
        var batchNumber: UInt32 = 0
    }

    private func runPipeline(
        source: inout some ByteSource,
        chunker: FastCDC,
        write: PendingWrites.WriteID
    ) throws(CofferError) -> Committed {
        let workers = OrderedPipeline<[UInt8], ProcessedChunk>.defaultWorkerCount
        let pipeline = OrderedPipeline<[UInt8], ProcessedChunk>(
            workers: workers,
            window: workers * 16,
            makeTransform: makeWorker()
        )
        defer { pipeline.shutDown() }
        let committer = Committer(
            pipeline: pipeline,
            environment: environment,
            store: store,
            write: write,
            keys: try ChunkKeys(scope: options.scope, level: options.protection, keys: keys),
            coder: try ChunkRecord.Coder(compressionLevel: options.compressionLevel),
            progress: progress
        )
        let thread = Thread { committer.run() }
        thread.name = "coffer-committer"
        thread.start()
        do {
            try Self.chunk(&source, with: chunker) { (piece) throws(CofferError) in try pipeline.submit(piece) }
            pipeline.finishSubmitting()
        } catch {
            pipeline.cancel(error)
        }
        return try committer.wait()
    }

    /// Reads the source in segments and submits each chunk FastCDC cuts.
    static func chunk(
        _ source: inout some ByteSource,
        with chunker: FastCDC,
        submit: ([UInt8]) throws(CofferError) -> Void
    ) throws(CofferError) {
        var buffer = [UInt8](repeating: 0, count: Self.segmentSize + chunker.sizes.maximum)
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

    /// Each worker's transform: id, dedup check, and seal only what is new.
    private func makeWorker() -> OrderedPipeline<[UInt8], ProcessedChunk>.TransformFactory {
        let keys = keys
        let options = options
        let environment = environment
        let chunks = store.chunks
        return { () throws(CofferError) in
            let chunkKeys = try ChunkKeys(scope: options.scope, level: options.protection, keys: keys)
            let coder = try ChunkRecord.Coder(compressionLevel: options.compressionLevel)
            return { (plaintext) throws(CofferError) in
                let id = try chunkKeys.id(of: plaintext)
                let known = try storage("checking for a stored chunk") {
                    try environment.read { txn in try chunks.contains(id, in: txn) }
                }
                let sealed =
                    known
                    ? nil
                    : try plaintext.withBytes { (raw) throws(CofferError) in
                        try ChunkRecord.seal(raw, id: id, keys: chunkKeys, coder: coder)
                    }
                return ProcessedChunk(plaintext: plaintext, id: id, sealed: sealed)
            }
        }
    }

    /// Takes processed chunks in order on its own thread: hashes the content, builds the chunk list,
    /// and commits batches.
    private final class Committer: @unchecked Sendable {
        private let pipeline: OrderedPipeline<[UInt8], ProcessedChunk>
        private let environment: Environment
        private let store: BlobStore
        private let write: PendingWrites.WriteID
        private let keys: ChunkKeys
        private let coder: ChunkRecord.Coder
        private let progress: BlobProgress?
        private let done = DispatchSemaphore(value: 0)
        private var outcome: Result<Committed, CofferError>?

        init(
            pipeline: OrderedPipeline<[UInt8], ProcessedChunk>,
            environment: Environment,
            store: BlobStore,
            write: PendingWrites.WriteID,
            keys: ChunkKeys,
            coder: ChunkRecord.Coder,
            progress: BlobProgress?
        ) {
            self.pipeline = pipeline
            self.environment = environment
            self.store = store
            self.write = write
            self.keys = keys
            self.coder = coder
            self.progress = progress
        }

        func run() {
            outcome = Result { () throws(CofferError) in try commitAll() }
            if case .failure(let error) = outcome { pipeline.cancel(error) }
            done.signal()
        }

        func wait() throws(CofferError) -> Committed {
            done.wait()
            return try outcome!.get()
        }

        private func commitAll() throws(CofferError) -> Committed {
            let hasher: SHA256
            do {
                hasher = try SHA256()
            } catch {
                throw CofferError(.internalError, "creating a digest context failed: \(error)", underlying: error)
            }
            var state = Committed()
            var batchBytes = 0
            while let chunk = try pipeline.next() {
                do {
                    try hasher.update(chunk.plaintext)
                } catch {
                    throw CofferError(.internalError, "hashing the blob failed: \(error)", underlying: error)
                }
                state.size += UInt64(chunk.plaintext.count)
                state.chunkCount += 1
                batchBytes += chunk.plaintext.count
                // Keep the plaintext only of chunks that were found stored, in case they must be sealed after all.
                state.remaining.append(
                    ProcessedChunk(
                        plaintext: chunk.sealed == nil ? chunk.plaintext : [],
                        id: chunk.id,
                        sealed: chunk.sealed
                    )
                )
                if let full = state.list.append(ChunkEntry(id: chunk.id, length: UInt32(chunk.plaintext.count))) {
                    state.remaining.append(try storeListChunk(full, in: &state.list))
                }
                if batchBytes >= BlobWriter.batchByteLimit || state.remaining.count >= BlobWriter.batchChunkLimit {
                    try commit(state.remaining, batch: state.batchNumber)
                    state.remaining.removeAll(keepingCapacity: true)
                    state.batchNumber += 1
                    batchBytes = 0
                    progress?(Int64(state.size))
                }
            }
            if let last = state.list.finish() { state.remaining.append(try storeListChunk(last, in: &state.list)) }
            do {
                state.digest = try hasher.finalize()
            } catch {
                throw CofferError(.internalError, "hashing the blob failed: \(error)", underlying: error)
            }
            return state
        }

        /// Seals a full list chunk as a chunk of its own.
        private func storeListChunk(
            _ chunk: ChunkListBuilder.ListChunk,
            in list: inout ChunkListBuilder
        ) throws(CofferError) -> ProcessedChunk {
            let id = try keys.id(of: chunk.plaintext)
            let sealed = try chunk.plaintext.withBytes { (raw) throws(CofferError) in
                try ChunkRecord.seal(raw, id: id, keys: keys, coder: coder)
            }
            list.stored(chunk, id: id)
            return ProcessedChunk(plaintext: [], id: id, sealed: sealed)
        }

        private func commit(_ chunks: [ProcessedChunk], batch: UInt32) throws(CofferError) {
            try storage("storing a blob's chunks") {
                try environment.write { txn in
                    try BlobWriter.retain(
                        chunks,
                        batch: batch,
                        of: write,
                        store: store,
                        keys: keys,
                        coder: coder,
                        in: txn
                    )
                }
            }
        }
    }

    /// Takes a reference to each chunk (storing the new ones) and notes them under the write, in `txn`.
    private static func retain(
        _ chunks: [ProcessedChunk],
        batch: UInt32,
        of write: PendingWrites.WriteID,
        store: BlobStore,
        keys: ChunkKeys,
        coder: ChunkRecord.Coder,
        in txn: Transaction
    ) throws {
        for chunk in chunks {
            var sealed = chunk.sealed
            // A chunk a worker saw stored may have been freed since (its last blob deleted): then it
            // is sealed here and stored after all.
            if sealed == nil, try store.chunks.referenceCount(of: chunk.id, in: txn) == nil {
                sealed = try chunk.plaintext.withBytes { (raw) throws(CofferError) in
                    try ChunkRecord.seal(raw, id: chunk.id, keys: keys, coder: coder)
                }
            }
            try store.chunks.retain(chunk.id, sealed: sealed, in: txn)
        }
        try store.pending.note(chunks.map(\.id), batch: batch, of: write, in: txn)
    }

    // MARK: Final transaction

    private func finish(
        _ committed: Committed,
        write: PendingWrites.WriteID,
        chunkKeys: ChunkKeys,
        coder: ChunkRecord.Coder
    ) throws(CofferError) -> BlobInfo {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let id = try BlobManifest.id(of: name, scope: options.scope, keys: keys)
        var manifest = BlobManifest(
            name: name,
            scope: options.scope,
            level: options.protection,
            size: committed.size,
            digest: committed.digest,
            created: now,
            modified: now,
            chunkCount: committed.chunkCount,
            chunks: committed.list.list
        )
        try storage("committing the blob '\(name)'") {
            try environment.write { txn in
                try Self.retain(
                    committed.remaining,
                    batch: committed.batchNumber,
                    of: write,
                    store: store,
                    keys: chunkKeys,
                    coder: coder,
                    in: txn
                )
                var created = now
                if let old = try store.lookup(name, keys: keys, cipher: coder.cipher, in: txn) {
                    created = old.manifest.created
                    try store.remove(id: old.id, manifest: old.manifest, keys: keys, coder: coder, in: txn)
                }
                manifest.created = created
                try txn.put(
                    store.schema.blobs,
                    key: id,
                    value: try manifest.seal(id: id, keys: keys, cipher: coder.cipher)
                )
                try store.pending.finish(write, in: txn)
                if manifest.scope == .syncable {
                    try ChangeLog.append(.blobPut, recordID: id, in: txn, schema: store.schema)
                }
            }
        }
        return manifest.info
    }
}
