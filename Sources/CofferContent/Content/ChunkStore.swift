/// Content-addressed chunks with exact reference counts, in the `chunks` and `chunkRefs` tables.
///
/// Counts change in the same transaction as whatever takes or drops the reference, and a chunk is
/// freed in the transaction that drops its last reference, so space comes back incrementally and a
/// crash can never leave a count that disagrees with the references: there is no prune pass and no
/// lock file. (Writes in progress protect the chunks they have taken through the `pending` table,
/// which the blob writer maintains.) Counts are kept apart from chunks so counting never rewrites a
/// chunk.
///
/// Sealing happens outside the transaction (in parallel workers); the store only decides whether the
/// sealed bytes are needed.
package struct ChunkStore {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    /// Counts one more reference to chunk `id`, storing `sealed` if the chunk is new.
    ///
    /// - Parameters:
    ///   - sealed: The sealed record; may be `nil` only when the chunk is known to exist.
    ///   - replacing: Whether `sealed` also replaces a stored record of the chunk, which was found
    ///     damaged (``stored(_:keys:cipher:in:)``): the same content, sealed afresh.
    /// - Returns: Whether the chunk was new (stored now).
    /// - Throws: ``CofferError`` `.internalError` if the chunk is new and `sealed` is `nil`.
    @discardableResult
    package func retain(_ id: ChunkID, sealed: [UInt8]?, replacing: Bool = false, in txn: Transaction) throws -> Bool {
        if try retainIfStored(id, in: txn) {
            if replacing, let sealed {
                try schema.records.put(id, sealed, in: txn)
                // Stored here in place of sites no one checked (``stored(_:keys:cipher:in:)``): born
                // now, so that the next push sends it, and a site of this vault's own then counts.
                if let content = StoreContent(schema: schema), try content.isUnchecked(id, in: txn),
                    var references = try references(of: id, in: txn)
                {
                    references.born = try ChangeLog.lastSequence(in: txn, schema: schema)
                    try set(references, of: id, in: txn)
                }
            }
            return false
        }
        guard let sealed else {
            throw CofferError(.internalError, "a chunk expected to be stored is missing; \(run: .verify)")
        }
        try schema.records.put(id, sealed, in: txn)
        try set(References(count: 1, born: try ChangeLog.lastSequence(in: txn, schema: schema)), of: id, in: txn)
        return true
    }

    /// Counts one more reference to chunk `id`, making its reference entry without a local record
    /// when it is new: for a chunk that lies in an object store, whose site the caller notes in the
    /// same transaction, which makes it offloaded (``StoreContent``).
    ///
    /// - Returns: Whether the chunk was new here.
    package func retainOffloaded(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        if try retainIfStored(id, in: txn) { return false }
        try set(References(count: 1, born: try ChangeLog.lastSequence(in: txn, schema: schema)), of: id, in: txn)
        return true
    }

    /// Counts one more reference to chunk `id` if it is stored; returns whether it was (one lookup, for
    /// callers that must not store a chunk they do not have, such as an import).
    package func retainIfStored(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        txn.noteScatteredTouch()
        guard var references = try references(of: id, in: txn) else { return false }
        references.count += 1
        try set(references, of: id, in: txn)
        return true
    }

    /// Drops one reference to chunk `id`, freeing the chunk when it was the last.
    ///
    /// - Returns: Whether the chunk was freed.
    /// - Throws: ``CofferError`` `.decode` if the chunk has no references to drop (the counts are
    ///   damaged).
    @discardableResult
    package func release(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        txn.noteScatteredTouch()
        guard var references = try references(of: id, in: txn), references.count > 0 else {
            throw CofferError(.decode, "a chunk was released more often than it was referenced; \(run: .verify)")
        }
        if references.count == 1, txn.deferredChunkFrees == nil {
            try free(id, in: txn)
            return true
        }
        references.count -= 1
        try set(references, of: id, in: txn)
        if references.count == 0 { txn.deferredChunkFrees?.append(id) }
        return false
    }

    private func free(_ id: ChunkID, in txn: Transaction) throws {
        try schema.records.delete(id, in: txn)
        try txn.delete(schema.chunkRefs, key: id)
        try StoreContent(schema: schema)?.forgetSite(of: id, in: txn)
    }

    /// Runs `body` with frees deferred: a chunk whose last reference goes keeps its record, with no
    /// reference, until `body` returns, and then goes unless something took it again meanwhile.
    ///
    /// An import applies a bundle's records this way, so a record deleted or replaced before another
    /// record of the same bundle takes its chunks (a rename: one name goes, another takes its content)
    /// does not free what the other needs, whatever order the records come in.
    package func deferringFrees<Result>(in txn: Transaction, _ body: () throws -> Result) throws -> Result {
        guard txn.deferredChunkFrees == nil else { return try body() }
        txn.deferredChunkFrees = []
        defer { txn.deferredChunkFrees = nil }
        let result = try body()
        let candidates = txn.deferredChunkFrees ?? []
        txn.deferredChunkFrees = nil
        for id in candidates where try references(of: id, in: txn)?.count == 0 {
            txn.noteScatteredTouch()
            try free(id, in: txn)
        }
        return result
    }

    /// A chunk's `chunkRefs` entry: how many references it has, and the change sequence that was the
    /// latest when it was stored (its "birth"), which tells an incremental export whether a peer that
    /// has seen the changes up to some sequence can already hold it.
    package struct References: Equatable {
        package var count: UInt64
        package var born: UInt64

        package init(count: UInt64, born: UInt64) {
            self.count = count
            self.born = born
        }

        package init(decoding bytes: UnsafeRawBufferPointer) throws(CofferError) {
            guard bytes.count == 16 else {
                throw CofferError(
                    .decode,
                    "a chunk's reference entry is \(bytes.count) bytes, not 16; the vault is damaged"
                )
            }
            var reader = BinaryReader(Array(bytes), what: "a chunk reference entry")
            count = try reader.readUInt64()
            born = try reader.readUInt64()
        }

        package var encoded: [UInt8] {
            var writer = BinaryWriter()
            writer.write(count)
            writer.write(born)
            return writer.bytes
        }
    }

    /// Counts chunk `id` as born at the latest change sequence, if it was born at `since` or later:
    /// the next export to a peer credited up to now sends it again. A backup that committed parts
    /// does this to its tree's chunks, stored before the parts that credited peers past them.
    package func noteBornNow(_ id: ChunkID, ifBornSince since: UInt64, in txn: Transaction) throws {
        guard var references = try references(of: id, in: txn), references.born >= since else { return }
        references.born = try ChangeLog.lastSequence(in: txn, schema: schema)
        try set(references, of: id, in: txn)
    }

    /// The reference entry of chunk `id`, or `nil` if it is not stored.
    package func references(of id: ChunkID, in txn: Transaction) throws -> References? {
        try txn.withValue(schema.chunkRefs, key: id) { try References(decoding: $0) }
    }

    /// The reference count of chunk `id`, or `nil` if it is not stored.
    package func referenceCount(of id: ChunkID, in txn: Transaction) throws -> UInt64? {
        try references(of: id, in: txn)?.count
    }

    /// Opens chunk `id` straight from the map, or, when it was offloaded, as fetched from the object
    /// store (``StoreContent``); returns `nil` if it is not stored.
    ///
    /// - Throws: ``CofferError`` `.io` naming the store when an offloaded chunk cannot be fetched.
    package func load(_ id: ChunkID, keys: ChunkKeys, coder: ChunkRecord.Coder, in txn: Transaction) throws -> [UInt8]?
    {
        try withRecord(id, in: txn) { stored in try ChunkRecord.open(stored, id: id, keys: keys, coder: coder) }
    }

    /// Calls `body` with chunk `id`'s record as stored: straight from the map, or fetched from the
    /// object store it was offloaded to (and offered to the local cache); `nil` if it is not stored.
    /// An offloaded chunk is fetched from each object it was noted in, in turn, until one gives it:
    /// an object gone or damaged (replaced, overwritten) is passed over for the next, and so is a
    /// record `body` refuses as damaged (``CofferError`` `.decode`: a reader checks each record's seal
    /// and id), which is not cached; `body` then throws the first refusal if none is accepted.
    package func withRecord<R>(
        _ id: ChunkID,
        in txn: Transaction,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        txn.noteScatteredTouch()
        let source = schema.offloadedChunks
        if let local = try schema.records.withRecord(id, in: txn, body) {
            if let source, try StoreContent(schema: schema)?.isCached(id, in: txn) == true { source.noteUse(of: id) }
            return local
        }
        guard let content = StoreContent(schema: schema), try txn.contains(schema.chunkRefs, key: id) else {
            return nil
        }
        let sites = try content.sites(of: id, in: txn)
        guard let first = sites.first else {
            guard try content.hasSite(id, in: txn) else { return nil }
            throw CofferError(
                .itemNotFound,
                "a chunk this vault offloaded lies in no object the store lists that this vault knows of (a compaction replaced them, they were deleted, or a read found them damaged): \(run: .pull), which looks for it in the store's other objects, then try again; if the pull says it lies nowhere, the store lost it (\(InterfaceName.verifyReadingData) names the content that uses it)"
            )
        }
        let readable = sites.filter { $0.object.remote == source?.remote }
        guard let source, !readable.isEmpty else {
            throw CofferError(
                .io,
                "a chunk this vault offloaded is held only in the object store \(first.object.remote), which is not attached: attach it with credentials that may read it (\(InterfaceName.attachObjectStore))"
            )
        }
        var next = readable.startIndex
        var refusal: (any Error)?
        while next < readable.endIndex {
            let (record, used) = try Self.fetch(id, from: readable[next...], source: source)
            switch Result(catching: { try record.withUnsafeBytes(body) }) {
            case .success(let value):
                source.offerToCache(id, record: record)
                return value
            case .failure(let error):
                guard (error as? CofferError)?.code == .decode else { throw error }
                refusal = refusal ?? error
                next = used + 1
            }
        }
        throw refusal ?? CofferError(.internalError, "an offloaded chunk had no site to read it from")
    }

    /// Chunk `id`'s record from the first of `sites` whose object gives it, and that site's index:
    /// one gone or damaged is passed over; any other failure (the store out of reach) ends the search.
    private static func fetch(
        _ id: ChunkID,
        from sites: ArraySlice<(site: ChunkSite, object: StoreObject)>,
        source: any OffloadedChunkSource
    ) throws(CofferError) -> (record: [UInt8], site: Int) {
        var failure: CofferError?
        for (index, (site, object)) in zip(sites.indices, sites) {
            switch Result(catching: { () throws(CofferError) in try source.record(of: id, at: site, in: object) }) {
            case .success(let record):
                return (record, index)
            case .failure(let error):
                guard error.code == .itemNotFound || error.code == .decode else { throw error }
                if error.code == .decode { source.noteDamaged(object) }
                failure = failure ?? error
            }
        }
        throw failure ?? CofferError(.internalError, "an offloaded chunk had no site to read it from")
    }

    /// What a writer finds stored under chunk `id`: nothing, an intact record, or a damaged one.
    package enum Stored: Sendable, Equatable {
        /// No chunk of that id: it is to be stored.
        case absent
        /// A record that authenticates (or whose key is not held here, so that cannot be told).
        case intact
        /// A record that fails authentication, or none at all where the reference count says there
        /// is one: the writer stores its own sealing of the same content in its place.
        case damaged
    }

    /// Whether chunk `id` is stored, and intact (``ChunkRecord/isIntact(_:id:keys:cipher:)``): the
    /// dedup check of a writer, which must not take a reference to a damaged record for content it
    /// holds itself (it would report the content stored when it cannot be read back).
    package func stored(_ id: ChunkID, keys: ChunkKeys, cipher: AESGCM, in txn: Transaction) throws -> Stored {
        guard try contains(id, in: txn) else { return .absent }
        let intact = try schema.records.withRecord(id, in: txn) { record in
            ChunkRecord.isIntact(record, id: id, keys: keys, cipher: cipher) ?? true
        }
        // An offloaded chunk is in the object store, checked when it was offloaded: content is
        // deduplicated against it without fetching it. Not so one whose sites only a records
        // object gave: the writer stores its own record (a member could name junk as the chunk's).
        if intact == nil, let content = StoreContent(schema: schema), try content.site(of: id, in: txn) != nil {
            return try content.isUnchecked(id, in: txn) ? .damaged : .intact
        }
        return intact == true ? .intact : .damaged
    }

    /// Whether chunk `id` is stored (a dedup check).
    package func contains(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        txn.noteScatteredTouch()
        return try txn.contains(schema.chunkRefs, key: id)
    }

    private func set(_ references: References, of id: ChunkID, in txn: Transaction) throws {
        try txn.put(schema.chunkRefs, key: id, value: references.encoded)
    }
}
