import Foundation

extension Vault {
    /// After a pull from `remote`: forgets the objects the store no longer lists, finds again the
    /// chunks this vault offloaded that lie in none it knows of any more (a compaction deleted their
    /// objects, someone else did, or the store was rolled back: in the checkpoints that replaced them,
    /// else in any other object it lists), and, for the store this vault offloads to, drops what the
    /// pull brought beyond the cache budget. Returns notices for the pull's summary.
    func refreshStoreSites(remote: S3Remote, keepingBudget: Bool = true) throws(CofferError) -> [String] {
        let (schema, environment, identity) = (schema, environment, remote.identity)
        guard StoreContent(schema: schema) != nil else { return [] }
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let listing = try client.list(prefix: layout.listingPrefix)
        let listed = Dictionary(listing.map { ($0.key, UInt64($0.size)) }) { first, _ in first }
        try storage("noting what the store holds") {
            try environment.write { txn in
                guard let content = StoreContent(schema: schema) else { return }
                try Self.forgetObjects(of: identity, notIn: listed, content: content, in: txn)
            }
        }
        var notices: [String] = []
        var homeless = try offloadedChunksWithoutSite()
        if !homeless.isEmpty {
            // Objects read whole have every site noted: none of those chunks lies there. Of the
            // others, checkpoints first (a compaction's), then every device's bundles, newest first
            // (a device that pushed the same content; an older vault noted one site per chunk).
            let whole = try storage("reading the store's objects") {
                try environment.read { txn -> Set<String> in
                    guard let content = StoreContent(schema: schema) else { return [] }
                    var keys: Set<String> = []
                    for (number, object) in try content.objects(in: identity, txn: txn)
                    where try content.isWhole(number, in: txn) {
                        keys.insert(object.key)
                    }
                    return keys
                }
            }
            let checkpoints = layout.checkpoints(in: listing).filter { $0.value.hasCut && $0.value.hasBundle }
                .map { layout.checkpointBundleKey($0.key) }.sorted(by: >)
            let bundles = layout.devices(in: listing).flatMap { device, objects in
                objects.bundles.sorted { $0.last > $1.last }.map { layout.bundleKey(device, $0) }
            }
            // The signing keys of the active members, once for the whole search.
            let signers = Dictionary(
                try members().filter(\.isActive).map { ($0.deviceID, Array($0.identity.signingKey)) },
                uniquingKeysWith: { first, _ in first }
            )
            for key in checkpoints + bundles where !homeless.isEmpty && !whole.contains(key) {
                guard let size = listed[key] else { continue }
                do {
                    try noteSites(ofObject: key, size: size, client: client, signers: signers)
                } catch  where error.code == .itemNotFound {
                    continue  // deleted meanwhile: a compaction's checkpoint holds what it held
                } catch  where [.decode, .param, .keyUnavailable, .notTrusted].contains(error.code) {
                    // Not a bundle of this group that this vault can read and trust (overwritten,
                    // damaged, sealed under an epoch it never held, signed by no active member):
                    // nothing of it counts now. It is read again by the next search (its header
                    // mostly, where such an object fails): the same name and size may hold the
                    // original again, put back, which a compaction must not delete unread (red
                    // team round 40, F1).
                    continue
                }
                homeless = try withoutSite(homeless)
            }
            if !homeless.isEmpty {
                notices.append(
                    "\(homeless.count) chunk\(homeless.count == 1 ? "" : "s") this vault offloaded lie in no object \(remote.location) lists now that this vault can read (gone, or found damaged); reading the content that uses them fails until a device that holds them writes them again: its next push does for changes no bundle or checkpoint holds any more, and its compaction (\(InterfaceName.compactRemote)) for those in a damaged object (\(InterfaceName.verify) names what uses them)."
                )
            }
        }
        if keepingBudget, let settings = try offloadSettings(), settings.remote == identity {
            _ = try dropOffloadableChunks(remote: identity, keep: settings.keep)
        }
        return notices
    }

    /// Those of `chunks` that still have no site in an object still known: what a search looks for
    /// after each object it read, without going through every site again.
    private func withoutSite(_ chunks: Set<ChunkID>) throws(CofferError) -> Set<ChunkID> {
        let schema = schema
        return try storage("reading where offloaded chunks lie") {
            try environment.read { txn in
                guard let content = StoreContent(schema: schema) else { return chunks }
                return try chunks.filter { try content.site(of: $0, in: txn) == nil }
            }
        }
    }

    /// The chunks this vault offloaded whose site is gone (its object forgotten).
    private func offloadedChunksWithoutSite() throws(CofferError) -> Set<ChunkID> {
        let schema = schema
        return try storage("reading where offloaded chunks lie") {
            try environment.read { txn in
                guard let content = StoreContent(schema: schema) else { return [] }
                var homeless: Set<ChunkID> = []
                try content.forEachSite(in: txn) { id, _ in
                    if try content.site(of: id, in: txn) == nil, try txn.contains(schema.chunkRefs, key: id),
                        try !schema.records.contains(id, in: txn)
                    {
                        homeless.insert(id)
                    }
                    return true
                }
                return homeless
            }
        }
    }

    /// Reads the bundle object `key` through for where its chunk records lie, and notes them, once
    /// its signature verifies under the key `signers` holds for its device (the active members):
    /// only an object an active member signed counts (a thief holding a
    /// stolen device's group keys can seal any stream in the store, and a site it made up would
    /// come first), and only when each of its chunk records holds what its id names
    /// (``ArrivingChunkCheck``; a write-only client's, which only its write's record can check,
    /// only when it is a copy of the one this vault held). No record is applied.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` for an object no active member signed, `.param` for
    ///   one of another group or no bundle at all, `.decode` for a damaged one.
    func noteSites(
        ofObject key: String,
        size: UInt64,
        client: S3Client,
        signers: [UUID: [UInt8]]
    ) throws(CofferError) {
        var source = S3RangeSource(client: client, key: key, size: Int64(size), etag: nil)
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        guard header.syncGroupID == syncGroupID else {
            throw CofferError(.param, "\(key) is an object of another sync group")
        }
        guard header.version >= 2, let signer = signers[header.deviceID] else {
            throw CofferError(.notTrusted, "\(key) was not signed by an active member of the group")
        }
        let root = try keyRing().root(.sync, epoch: header.epoch)
        let stream = try BundleStreamReader(
            source: source,
            header: header,
            headerBytes: headerBytes,
            key: try header.streamKey(syncRoot: root)
        )
        var frames = try BundleFrameReader(
            source: stream,
            signer: signer,
            headerBytes: headerBytes
        )
        var sites: [BundleChunkSite] = []
        // Each record is checked against its id, as an import does: a member can seal junk under
        // any id, and a site in its object would come first where the genuine one is gone.
        let check = try ArrivingChunkCheck(keys: try keyRing(), source: header.deviceID)
        while let frame = try frames.next() {
            guard case .chunk(let id, let record) = frame else { continue }
            try ChunkRecord.checkHeader(record, scope: .syncable)
            try check.check(id, record: record)
            let offset = frames.lastBodyOffset + UInt64(ChunkID.size)
            sites.append(try BundleChunkSite(id: id, offset: offset, record: record))
        }
        let object = StoreObject(
            remote: client.remote.identity,
            key: key,
            size: size,
            headerLength: UInt32(headerBytes.count),
            segmentSize: UInt32(header.segmentSize)
        )
        let schema = schema
        try storage("noting where chunks lie") {
            try schema.ensureStoreContent(in: environment)
            try environment.write { txn in
                try BundleChunkSite.note(sites, in: object, schema: schema, txn: txn, onlyReferenced: true)
            }
        }
    }
}
