public import Foundation

/// What ``Vault/offloadContent(to:keep:progress:)-4e8mf`` did.
public struct OffloadSummary: Sendable, Equatable, Codable {
    /// The store offloaded to.
    public var remote: String
    /// Chunks whose local record was dropped now.
    public var offloadedChunks = 0
    /// The bytes of their records.
    public var offloadedBytes: UInt64 = 0
    /// Chunks the store holds that are kept locally (within the budget): the cache.
    public var keptChunks = 0
    /// The bytes of their records.
    public var keptBytes: UInt64 = 0
    /// Syncable chunks the store does not hold yet (kept: they are the only copy).
    public var localOnlyChunks = 0
    /// The bytes of their records.
    public var localOnlyBytes: UInt64 = 0
    /// Chunks that were offloaded before, and stay so.
    public var alreadyOffloaded = 0
    /// Chunks the store holds that stay here whatever the budget: chunk lists and snapshot trees,
    /// which deleting or replacing a record reads.
    public var structureChunks = 0
    /// The bytes of their records.
    public var structureBytes: UInt64 = 0
    /// What the push before the offload said.
    public var notices: [String] = []
}

extension Vault {
    /// Attaches `remote` as the object store this vault reads offloaded chunks from, keeping what it
    /// fetches in a local cache of the budget the vault's offload settings name.
    ///
    /// `coffer` attaches the store the vault remembers whenever it opens one (with the credentials
    /// of the environment); an app that opens an offloaded vault does the same, once it is unlocked
    /// or before its first read:
    ///
    /// ```swift
    /// let vault = try Vault.open(at: url)
    /// try vault.unlock(passphrase: passphrase)
    /// if let location = try vault.offloadLocation {
    ///     try vault.attachObjectStore(S3Remote(try S3Location(location), credentials: try .fromEnvironment()))
    /// }
    /// ```
    ///
    /// - Throws: ``CofferError`` `.param` when the vault offloaded to another store.
    public func attachObjectStore(_ remote: S3Remote) throws(CofferError) {
        try checkOpen()
        let (schema, environment) = (schema, environment)
        let settings = try storage("reading the offload settings") {
            try environment.read { txn in try OffloadSettings.load(in: txn, schema: schema) }
        }
        if let settings, settings.remote != remote.identity {
            throw CofferError(
                .param,
                "this vault offloaded its content to \(settings.location) (\(settings.remote)), not to \(remote.location); attach that store"
            )
        }
        schema.offloadedChunks?.finish()
        let cache = OffloadCache(environment: environment, schema: schema, budget: settings?.keep ?? 0)
        schema.offloadedChunks = StoreChunkReader(
            remote: remote,
            keys: { [weak self] () throws(CofferError) -> KeyRing in
                guard let self else { throw CofferError(.closed, "the vault was closed") }
                return try self.keyRing()
            },
            cache: cache
        )
        schema.contentUploader = StoreUploader(vault: self, remote: remote, keep: settings?.keep ?? 0)
    }

    /// The object store this vault offloaded content to, as `s3://BUCKET/PREFIX`, or `nil` when it
    /// never offloaded.
    public var offloadLocation: String? {
        get throws(CofferError) { try offloadSettings()?.location }
    }

    /// The endpoint of the store this vault offloaded to, when it is not AWS S3.
    public var offloadEndpoint: URL? {
        get throws(CofferError) { try offloadSettings()?.endpoint.flatMap { URL(string: $0) } }
    }

    /// The signing region of the store this vault offloaded to.
    public var offloadRegion: String? {
        get throws(CofferError) { try offloadSettings()?.region }
    }

    package func offloadSettings() throws(CofferError) -> OffloadSettings? {
        try checkOpen()
        let schema = schema
        return try storage("reading the offload settings") {
            try environment.read { txn in try OffloadSettings.load(in: txn, schema: schema) }
        }
    }

    /// Drops the local copies of chunks that `remote` verifiably holds, keeping at most `keep` bytes of
    /// them, most recently used first; later reads fetch them from the store on demand.
    ///
    /// First pushes (so the store holds this vault's changes), then lists the store: a chunk is
    /// offloaded only when it lies in a bundle this vault pushed under a head it wrote, or pulled and
    /// applied, and that object is listed now with the size this vault noted. Records (items,
    /// manifests, snapshots), chunk lists and snapshot trees, indexes and everything device-bound
    /// stay local; chunks the store does
    /// not hold stay too. The vault remembers the store and the budget (``attachObjectStore(_:)``),
    /// and its pulls learn where a compaction moved what it offloaded.
    ///
    /// - Throws: ``CofferError`` `.param` when the vault offloaded to another store before; the
    ///   errors of ``push(to:progress:)-4qpe7``.
    public func offloadContent(
        to remote: S3Remote,
        keep: UInt64 = 0,
        progress: SyncProgress? = nil
    ) throws(CofferError)
        -> OffloadSummary
    {
        try checkOpen()
        _ = try unlockedRoots()
        if let settings = try offloadSettings(), settings.remote != remote.identity {
            throw CofferError(
                .param,
                "this vault offloaded its content to \(settings.location) (\(settings.remote)) before; offload to that store again (\(InterfaceName.offload(to: settings.location))). Nothing was changed"
            )
        }
        var summary = OffloadSummary(remote: remote.location.description)
        summary.notices = try push(to: remote, progress: progress).notices
        let (schema, environment, identity) = (schema, environment, remote.identity)
        try beginOffloading(to: remote, keep: keep)
        // What the store lists now: objects gone are forgotten, and what lay in them is found again
        // in the checkpoints that replaced them.
        summary.notices += try refreshStoreSites(remote: remote, keepingBudget: false)
        let dropped = try dropOffloadableChunks(remote: identity, keep: keep)
        (summary.offloadedChunks, summary.offloadedBytes) = (dropped.offloaded.chunks, dropped.offloaded.bytes)
        (summary.keptChunks, summary.keptBytes) = (dropped.kept.chunks, dropped.kept.bytes)
        summary.alreadyOffloaded = dropped.alreadyOffloaded
        (summary.structureChunks, summary.structureBytes) = (dropped.structure.chunks, dropped.structure.bytes)
        // What stays because the store lacks it: syncable chunks without a site there.
        try storage("counting what stays") {
            try environment.read { txn in
                let content = StoreContent(schema: schema)
                try schema.records.forEach(in: txn) { key, value in
                    let id = try ChunkID(stored: key)
                    guard BundleExporter<FileOutput>.scope(ofChunk: value) == .syncable else { return true }
                    if let content, try content.sites(of: id, in: txn).contains(where: { $0.object.remote == identity })
                    {
                        return true
                    }
                    summary.localOnlyChunks += 1
                    summary.localOnlyBytes += UInt64(value.count)
                    return true
                }
            }
        }
        return summary
    }

    /// Records that this vault offloads to `remote`, keeping at most `keep` bytes of its content
    /// here, and attaches it: what an offload starts with, and a thin join.
    package func beginOffloading(to remote: S3Remote, keep: UInt64) throws(CofferError) {
        let (schema, environment, identity) = (schema, environment, remote.identity)
        try storage("offloading") {
            try schema.ensureStoreContent(in: environment)
            try environment.write { txn in
                let settings = OffloadSettings(
                    remote: identity,
                    location: remote.location.description,
                    endpoint: remote.addressing == .path ? remote.endpoint.absoluteString : nil,
                    region: remote.region,
                    keep: keep
                )
                try settings.store(in: txn, schema: schema)
                try Vault.markFormat(in: txn, schema: schema, atLeast: Schema.offloadedFormatVersion)
            }
        }
        try attachObjectStore(remote)
    }

    /// What ``dropOffloadableChunks(remote:keep:)`` did: chunks and bytes.
    package struct DroppedChunks {
        package var offloaded: (chunks: Int, bytes: UInt64) = (0, 0)
        package var kept: (chunks: Int, bytes: UInt64) = (0, 0)
        package var alreadyOffloaded = 0
        /// Chunks the store holds that stay because they hold records' structure (``RecordStructure``).
        package var structure: (chunks: Int, bytes: UInt64) = (0, 0)
    }

    /// Drops the local records of chunks with a site in `remote` (an object this vault pushed under
    /// its head, or pulled), keeping at most `keep` bytes of them, most recently used (else most
    /// recently stored) first; the kept ones become the cache. Chunk lists and snapshot trees
    /// (``RecordStructure``) always stay. With `readOnly`, only chunks read since they were cached
    /// are kept: a backup's uploads drop what it wrote, which is rarely read soon, and leave the
    /// budget to what reads cached.
    package func dropOffloadableChunks(
        remote identity: String,
        keep: UInt64,
        readOnly: Bool = false
    ) throws(CofferError) -> DroppedChunks {
        let (schema, environment) = (schema, environment)
        var result = DroppedChunks()
        // The chunks the store holds, most recently used (or stored) first.
        struct Candidate {
            let id: ChunkID
            let length: Int
            let rank: (UInt64, UInt64)
        }
        var candidates: [Candidate] = []
        let structure = try RecordStructure(environment: environment, schema: schema, keys: try keyRing()).chunks()
        bringBack(structure)
        try storage("choosing what to offload") {
            try environment.read { txn in
                guard let content = StoreContent(schema: schema) else { return }
                var lastUse: [ChunkID: UInt64] = [:]
                try content.forEachCached(in: txn) { id, use, _ in
                    lastUse[id] = use
                    return true
                }
                let chunks = ChunkStore(schema: schema)
                try content.forEachSite(in: txn) { id, _ in
                    // A chunk none of whose sites was checked (a records object's word) is not counted
                    // as held by the store.
                    guard let references = try chunks.references(of: id, in: txn), references.count > 0,
                        try content.sites(of: id, in: txn).contains(where: { $0.object.remote == identity }),
                        try !content.isUnchecked(id, in: txn)
                    else { return true }
                    guard let length = try schema.records.withRecord(id, in: txn, { $0.count }) else {
                        result.alreadyOffloaded += 1
                        return true
                    }
                    guard !structure.contains(id) else {
                        result.structure.chunks += 1
                        result.structure.bytes += UInt64(length)
                        return true
                    }
                    candidates.append(Candidate(id: id, length: length, rank: (lastUse[id] ?? 0, references.born)))
                    return true
                }
            }
        }
        candidates.sort { $0.rank > $1.rank }
        var kept: UInt64 = 0
        let batch = 1024
        for start in stride(from: 0, to: candidates.count, by: batch) {
            let slice = candidates[start..<min(candidates.count, start + batch)]
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            // Counted from scratch in the transaction, which runs again if the map has to grow.
            let batchResult = try storage("offloading") {
                try environment.write { txn -> (kept: UInt64, result: DroppedChunks) in
                    var batchKept = kept
                    var batchResult = result
                    guard let content = StoreContent(schema: schema) else { return (batchKept, batchResult) }
                    for candidate in slice {
                        if batchKept + UInt64(candidate.length) <= keep, !readOnly || candidate.rank.0 > 0 {
                            batchKept += UInt64(candidate.length)
                            batchResult.kept.chunks += 1
                            batchResult.kept.bytes += UInt64(candidate.length)
                            if try !content.isCached(candidate.id, in: txn) {
                                try content.noteCached(candidate.id, length: candidate.length, lastUse: now, in: txn)
                            }
                            continue
                        }
                        try content.dropLocalRecord(candidate.id, in: txn)
                        try content.forgetCached(candidate.id, in: txn)
                        batchResult.offloaded.chunks += 1
                        batchResult.offloaded.bytes += UInt64(candidate.length)
                    }
                    return (batchKept, batchResult)
                }
            }
            (kept, result) = batchResult
        }
        // Cache entries of chunks that lie in no object the store lists now are forgotten (their
        // records stay: they are the only copy here).
        try storage("trimming the cache") {
            try environment.write { txn in
                guard let content = StoreContent(schema: schema) else { return }
                try OffloadCache.trim(content, to: keep, in: txn)
            }
        }
        return result
    }

    /// Fetches, and keeps for good, the chunks of `structure` that are offloaded: an earlier Coffer
    /// offloaded chunk lists and snapshot trees too. Best effort: one the store cannot give now stays
    /// offloaded, read on demand as before, and is tried again at the next offload, push or pull.
    private func bringBack(_ structure: Set<ChunkID>) {
        let (schema, environment) = (schema, environment)
        var fetched: [(ChunkID, [UInt8])] = []
        _ = try? environment.read { txn in
            guard let content = StoreContent(schema: schema) else { return }
            let chunks = ChunkStore(schema: schema)
            for id in structure where try content.isOffloaded(id, in: txn) {
                guard let record = try? chunks.withRecord(id, in: txn, { Array($0) }) else { continue }
                fetched.append((id, record))
            }
        }
        guard !fetched.isEmpty else { return }
        _ = try? environment.write { txn in
            guard let content = StoreContent(schema: schema) else { return }
            for (id, record) in fetched { try content.keepForGood(id, record: record, in: txn) }
        }
    }

    /// Forgets the objects of `remote` that are not in `listed` (key → size) or whose size changed:
    /// sites in them no longer count.
    static func forgetObjects(
        of remote: String,
        notIn listed: [String: UInt64],
        content: StoreContent,
        in txn: Transaction
    ) throws {
        for (number, object) in try content.objects(in: remote, txn: txn) where listed[object.key] != object.size {
            try content.forget(number, in: txn)
        }
    }
}

extension Vault {
    /// Whether this vault imports bundles from the store `remote` (its identity) thin: it offloads
    /// to that store, with the store attached to read from (``BundleImporter``).
    func importsThin(from remote: String) throws(CofferError) -> Bool {
        guard schema.offloadedChunks?.remote == remote else { return false }
        let schema = schema
        let offloadedTo = try storage("reading the offload settings") {
            try environment.read { txn in try OffloadSettings.load(in: txn, schema: schema)?.remote }
        }
        return offloadedTo == remote
    }
}
