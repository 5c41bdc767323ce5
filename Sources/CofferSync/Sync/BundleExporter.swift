/// Writes the frames of one export from one read transaction (a consistent view of the vault):
/// everything syncable (a full export), or what changed after a peer's cursor (an incremental one).
///
/// Only records whose stored header says `syncable` are ever written, checked here for every record
/// and chunk, so a device-bound record cannot reach a bundle even through a damaged change log.
package struct BundleExporter<Sink: ByteSink> {
    package let txn: Transaction
    package let environment: Environment
    package let schema: Schema
    package let keys: KeyRing
    package let coder: ChunkRecord.Coder
    private let tiers: SyncTiers
    package var writer: BundleStreamWriter<Sink>
    private(set) var summary = ExportSummary()
    private var chunkFrames: UInt64 = 0
    private var recordFrames: UInt64 = 0
    /// The group key epochs this device holds: a record or chunk sealed in another (one whose key a
    /// `group new` left out, red team round 10, F2) opens for no one it exports to, and would make
    /// their imports fail, so it is left out.
    private let heldEpochs: Set<KeyEpoch>
    /// Chunks written so far, when not all were (an incremental export), so a requested chunk goes once.
    private var written: Set<ChunkID> = []
    private var wroteEveryChunk = false
    /// Where each chunk record went in the stream, when the bundle goes to an object store: the
    /// vault notes these sites once the store holds the bundle (``StoreContent``).
    package var sites: [BundleChunkSite]?
    /// The chunks written sealed per write (a write-only client's), gathered with ``sites``.
    package private(set) var chunksSealedPerWrite: Set<ChunkID> = []
    /// Set for the export of a records object (``RecordsObject``): the bundle's export, made in the
    /// same read transaction and so meeting the same records and chunks in the same order. Each
    /// chunk record it wrote becomes a site frame, but for those sealed per write.
    package var describing: DescribedBundle?

    /// What a records object's export knows of the bundle it describes.
    package struct DescribedBundle {
        /// Where the bundle's export put each chunk record.
        package let sites: [ChunkID: BundleChunkSite]
        /// The chunks it wrote that are sealed per write: written whole.
        package let sealedPerWrite: Set<ChunkID>

        package init(sites: [BundleChunkSite], sealedPerWrite: Set<ChunkID>) {
            self.sites = Dictionary(sites.map { ($0.id, $0) }) { first, _ in first }
            self.sealedPerWrite = sealedPerWrite
        }
    }

    package init(
        txn: Transaction,
        environment: Environment,
        schema: Schema,
        keys: KeyRing,
        writer: BundleStreamWriter<Sink>
    ) throws(CofferError) {
        self.txn = txn
        self.environment = environment
        self.schema = schema
        self.keys = keys
        self.writer = writer
        heldEpochs = Set(keys.epochs(.sync)).union([.original])
        let coder = try ChunkRecord.Coder()
        self.coder = coder
        tiers = SyncTiers(environment: environment, schema: schema, keys: keys, coder: coder)
    }

    /// Writes every syncable record and deletion, each after the chunks it references that are not
    /// written yet, then every other syncable chunk (those of records held back, of writes in
    /// progress). Content lies in the bundle in the order its records read it, so a reader fetching
    /// chunks from the bundle as an object in a store (``StoreContent``) finds neighbours together.
    package mutating func writeEverything() throws {
        var placed: Set<ChunkID> = []
        try txn.forEach(in: schema.versions) { key, value in
            let (kind, id) = try Self.decodeVersionKey(key)
            let entry = try VersionEntry(decoding: value)
            if !entry.isDeleted { try writeChunks(of: kind, id: id, skipping: &placed) }
            try writeRecord(kind, id: id, entry: entry)
            return true
        }
        try schema.records.forEach(in: txn) { key, value in
            let id = try ChunkID(stored: key)
            if !placed.contains(id), Self.scope(ofChunk: value) == .syncable { try writeChunk(id: id, record: value) }
            return true
        }
        // Chunks offloaded to an object store are fetched back from it (syncable all: only
        // syncable chunks reach a store).
        if let content = StoreContent(schema: schema) {
            var offloaded: [ChunkID] = []
            try content.forEachSite(in: txn) { id, _ in
                if !placed.contains(id), try content.isOffloaded(id, in: txn) { offloaded.append(id) }
                return true
            }
            for id in offloaded { try writeStoredChunk(id, syncableOnly: false) }
        }
        wroteEveryChunk = true
        summary.deviceBoundLeftBehind = try countDeviceBound()
    }

    /// Writes the syncable chunks the record `id` references that `placed` does not hold yet, and
    /// adds them to it.
    private mutating func writeChunks(of kind: SyncRecordKind, id: [UInt8], skipping placed: inout Set<ChunkID>) throws
    {
        var referenced: [ChunkID] = []
        try forEachReference(kind, id: id) { (chunkID) throws(CofferError) in
            if placed.insert(chunkID).inserted { referenced.append(chunkID) }
        }
        for chunkID in referenced { try writeStoredChunk(chunkID, syncableOnly: true) }
    }

    /// Writes the records changed after `cursor` (once each, in their latest version) and the
    /// chunks their manifests need that the peer cannot hold yet: those stored at or after `cursor`
    /// (see ``ChunkStore/References``). A record whose latest change `excluded` holds (the object
    /// store pushed to has it already, ``RemoteOrigins``) is left out.
    package mutating func writeChanges(
        after cursor: UInt64,
        excluding excluded: SequenceRanges = SequenceRanges()
    ) throws {
        var changed = ChangedRecords()
        try ChangeLog.forEach(after: cursor, in: txn, schema: schema) { sequence, kind, id in
            changed.append(sequence: sequence, key: VersionEntry.key(kind.record, id: id))
            return true
        }
        changed.finish()
        var considered: Set<ChunkID> = []
        try changed.forEachRecord { key, sequence in
            if !excluded.isEmpty, excluded.contains(sequence) {
                summary.alreadyInStore += 1
                return
            }
            try writeChange(key, chunksBornFrom: cursor, considered: &considered)
        }
    }

    /// Writes one changed record in its latest version, after the chunks it references that were
    /// stored at or after `born` and are not written yet.
    private mutating func writeChange(
        _ key: [UInt8],
        chunksBornFrom born: UInt64,
        considered: inout Set<ChunkID>
    ) throws {
        let (kind, id) = try Self.decodeVersionKey(key)
        guard let entry = try VersionEntry.load(kind, id: id, in: txn, schema: schema) else {
            throw CofferError(.decode, "a changed \(kind.noun) has no version entry; the vault is damaged")
        }
        if !entry.isDeleted {
            let schema = schema
            try forEachReference(kind, id: id) { (chunkID) throws(CofferError) in
                guard considered.insert(chunkID).inserted else { return }
                try storage("exporting") {
                    guard let references = try ChunkStore(schema: schema).references(of: chunkID, in: txn) else {
                        throw CofferError(.decode, "a chunk of a changed \(kind.noun) is missing; \(run: .verify)")
                    }
                    if references.born >= born { try writeStoredChunk(chunkID, syncableOnly: false) }
                }
            }
        }
        try writeRecord(kind, id: id, entry: entry)
    }

    /// Writes a records object's first frame: the bundle it describes (``RecordsBinding``).
    package mutating func writeBinding(_ binding: RecordsBinding) throws(CofferError) {
        try write(BundleFrame.binding(binding).encoded)
    }

    /// Writes the chunks other devices asked for that this vault holds (and the bundle lacks so far),
    /// then this vault's own request: the chunks its held records lack (a want frame), if any.
    package mutating func writeRequests() throws {
        let held = HeldRecords(schema: schema)
        let chunks = ChunkStore(schema: schema)
        let requests = SyncRequests(schema: schema)
        for (_, ids) in try requests.wanted(in: txn) {
            guard !wroteEveryChunk else { continue }
            for id in ids where !written.contains(id) {
                guard try chunks.contains(id, in: txn) else { continue }
                try writeStoredChunk(id, syncableOnly: true)
            }
        }
        var wanted: [ChunkID] = []
        var seen: Set<ChunkID> = []
        let missing = MissingChunks(txn: txn, schema: schema, tiers: tiers)
        for record in try held.all(in: txn) {
            for id in try missing.of(record.kind, id: record.id, stored: record.stored) where seen.insert(id).inserted {
                wanted.append(id)
            }
        }
        if !wanted.isEmpty {
            try write(BundleFrame.want(chunkIDs: wanted).encoded)
            summary.wantedChunks = wanted.count
        }
        let gaps = try requests.gaps(in: txn)
        if !gaps.isEmpty {
            try write(BundleFrame.resend(gaps).encoded)
            summary.resendRequests = gaps.count
        }
    }

    /// Ends the stream: with `signer` (a version-2 bundle), this device's signature of everything
    /// before it, then the end frame; returns the sink.
    package mutating func finish(signer: Ed25519PrivateKey? = nil) throws(CofferError) -> Sink {
        if let signer {
            let digest = try writer.finishDigest()
            let signature: [UInt8]
            do {
                signature = try signer.signature(of: BundleFrame.signedMessage(digest: digest))
            } catch {
                throw CofferError(.internalError, "signing the bundle failed: \(error)", underlying: error)
            }
            try write(BundleFrame.signature(signature).encoded)
        }
        try write(BundleFrame.end(chunks: chunkFrames, records: recordFrames).encoded)
        return try writer.finish()
    }

    // MARK: Frames

    /// How this export treats offloaded chunks the store no longer gives (``UnreadableChunks``).
    package var unreadableChunks = UnreadableChunks.leaveOut

    /// Writes chunk `id`'s record as stored here, or fetched from the object store it was offloaded
    /// to (only a syncable one when `syncableOnly`); one the store no longer gives is left out and
    /// counted (``ExportSummary/lostChunks``), as ``unreadableChunks`` says.
    private mutating func writeStoredChunk(_ id: ChunkID, syncableOnly: Bool) throws {
        if try describedChunk(id) { return }
        do {
            try ChunkStore(schema: schema).withRecord(id, in: txn) { (record) throws in
                if !syncableOnly || Self.scope(ofChunk: record) == .syncable { try writeChunk(id: id, record: record) }
            }
        } catch let error as CofferError
            where (error.code == .itemNotFound || (error.code == .decode && unreadableChunks == .leaveOut))
            && (try? schema.records.contains(id, in: txn)) == false
        {
            summary.lostChunks += 1
        }
    }

    /// In a records object's export, writes chunk `id`'s site in the bundle, or nothing when the
    /// bundle left it out; returns `false` when the record itself is to be written (one sealed per
    /// write, or not a records object's export).
    private mutating func describedChunk(_ id: ChunkID) throws(CofferError) -> Bool {
        guard let describing, !describing.sealedPerWrite.contains(id) else { return false }
        guard let site = describing.sites[id] else { return true }
        try write(BundleFrame.site(id: id, offset: site.offset, length: site.length).encoded)
        if !wroteEveryChunk { written.insert(id) }
        return true
    }

    private mutating func writeChunk(id: ChunkID, record: UnsafeRawBufferPointer) throws(CofferError) {
        if try describedChunk(id) { return }
        guard Self.scope(ofChunk: record) == .syncable else {
            throw CofferError(.internalError, "an export reached a device-bound chunk; nothing was written")
        }
        if let epoch = RecordEpochs.epoch(ofChunk: record), !heldEpochs.contains(epoch) { return }
        // Straight from the map into the stream: the frame header, the id, the record as stored.
        try writeFrameHeader(type: 1, bodyLength: ChunkID.size + record.count)
        try write(id.bytes)
        if sites != nil {
            sites?.append(BundleChunkSite(id: id, offset: writer.plaintextLength, length: UInt32(record.count)))
            if StoreContent.isSealedPerWrite(record) { chunksSealedPerWrite.insert(id) }
        }
        try writer.write(record)
        if !wroteEveryChunk { written.insert(id) }
        chunkFrames += 1
        summary.chunks += 1
        // Every chunk read maps pages of the map (whole folios on this kernel); dropping them every few
        // chunks keeps resident memory bounded however large the export (see Environment).
        txn.noteScatteredTouch()
    }

    private mutating func writeRecord(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry) throws {
        let prefix = [kind.rawValue] + id + entry.encoded
        if entry.isDeleted {
            try writeFrameHeader(type: 2, bodyLength: prefix.count)
            try write(prefix)
        } else {
            let written: Bool? = try txn.withValue(table(kind), key: id) { (stored) throws in
                guard Self.scope(of: kind, stored: stored) == .syncable else {
                    throw CofferError(
                        .internalError,
                        "a \(kind.noun) logged as syncable is stored device-bound; it was not exported"
                    )
                }
                if let epoch = RecordEpochs.epoch(of: kind, stored: stored), !heldEpochs.contains(epoch) {
                    return false
                }
                try writeFrameHeader(type: 2, bodyLength: prefix.count + stored.count)
                try write(prefix)
                try writer.write(stored)
                return true
            }
            guard let written else {
                throw CofferError(.decode, "a syncable \(kind.noun) recorded as live is missing; the vault is damaged")
            }
            guard written else { return }
        }
        recordFrames += 1
        summary.records.count(kind, deleted: entry.isDeleted)
        // Records are looked up at scattered places too: a million of them would otherwise keep
        // gigabytes of the map's pages mapped (see writeChunk).
        txn.noteScatteredTouch()
    }

    private mutating func writeFrameHeader(type: UInt8, bodyLength: Int) throws(CofferError) {
        var header = BinaryWriter()
        header.write(type)
        header.write(UInt32(bodyLength))
        try write(header.bytes)
    }

    private mutating func write(_ bytes: [UInt8]) throws(CofferError) {
        try bytes.withBytes { (raw) throws(CofferError) in try writer.write(raw) }
    }

    // MARK: Records

    private func table(_ kind: SyncRecordKind) -> Table { tiers[kind].table }

    /// Calls `body` with each chunk a live blob or snapshot references (items reference none).
    private func forEachReference(
        _ kind: SyncRecordKind,
        id: [UInt8],
        _ body: (ChunkID) throws(CofferError) -> Void
    ) throws {
        try tiers[kind].forEachReference(id: id, in: txn, body)
    }

    private func countDeviceBound() throws -> Int {
        var count = 0
        for kind in SyncRecordKind.allCases {
            // This scan reads every record's header: uncounted, it mapped the whole table (300 MiB for
            // a million items); the scan itself notes its touches (Transaction.forEach).
            try txn.forEach(in: table(kind)) { _, stored in
                if Self.scope(of: kind, stored: stored) == .deviceBound { count += 1 }
                return true
            }
        }
        return count
    }

    /// The scope in a stored record's clear header: byte 2 of an item record, byte 1 of a manifest.
    package static func scope(of kind: SyncRecordKind, stored: UnsafeRawBufferPointer) -> SyncScope? {
        let offset = kind == .item ? 2 : 1
        return stored.count > offset ? SealedScope.scope(code: stored[offset]) : nil
    }

    /// The scope in a chunk record's clear header (byte 1).
    package static func scope(ofChunk stored: UnsafeRawBufferPointer) -> SyncScope? {
        stored.count > 1 ? SealedScope.scope(code: stored[1]) : nil
    }

    package static func decodeVersionKey(_ key: some Collection<UInt8>) throws(CofferError) -> (SyncRecordKind, [UInt8])
    {
        guard let kind = key.first.flatMap(SyncRecordKind.init(rawValue:)), key.count == 1 + kind.idLength else {
            throw CofferError(.decode, "a record version key is malformed; the vault is damaged")
        }
        return (kind, Array(key.dropFirst()))
    }
}

/// What an export does with a chunk this vault offloaded that the object store no longer gives.
package enum UnreadableChunks: Sendable {
    /// Left out when no object it lies in is listed any more, or every one is damaged: the
    /// rest of the export goes (a push after the store lost it), and the records that use it
    /// wait at the other devices until one that holds it answers their request for it.
    case leaveOut
    /// Left out only when no object it lies in is listed any more; a damaged one fails the
    /// export. A compaction, which deletes objects, must not pass over one it cannot read: an
    /// object it would delete may hold the chunk still.
    case leaveOutGone
}
