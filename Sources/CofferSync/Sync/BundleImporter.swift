/// Imports one bundle in two phases, so nothing becomes visible before the whole stream verifies:
///
/// 1. **Staging**: frames are read as the stream authenticates them. Each chunk record is checked
///    against its id (``ArrivingChunkCheck``: a member can sign a bundle that seals anything under
///    any id), then stored (or, when already here, counted once more) under a `pending` write that holds a reference to each, so
///    `gc` leaves them alone and a failed import releases them; records are kept in `pending` too.
///    Both go in batches of transactions, so memory stays bounded whatever the bundle's size.
/// 2. **Commit**: after the last segment and the end frame verify, one transaction applies each
///    staged record whose version beats this vault's (last writer wins, see ``ImportApplier``) and
///    whose chunks are all here (in the bundle or already), holds back those that lack some
///    (``HeldRecords``: asked for in this vault's next bundles), applies records held back before
///    whose chunks have now arrived, records what the exporting device asks for, and releases the
///    staging references and entries. Chunks no applied record uses go with them.
///
/// A vault that offloads its content to the store a bundle is pulled from imports it *thin*: a
/// chunk is noted where it lies in the bundle's object and its record is not kept here, except the
/// records' structure (chunk lists, snapshot trees), fetched back before the commit
/// (``keepStructure(of:)``). So a vault joined with `--thin`, or offloaded, holds its records and a
/// bounded cache, whatever the store holds.
///
/// Any failure releases what was staged, leaving the vault as it was.
package struct BundleImporter {
    package let vault: Vault
    package let keys: KeyRing
    /// The exporting device's change sequences the bundle covers (its header's).
    package let sequences: (first: UInt64, last: UInt64)
    /// The membership-log merge that commits with the records (``ImportPlan``).
    package let group: ImportPlan?
    /// The object store the bundle was pulled from (its identity), if any: the changes its records
    /// make here are noted as held there already (``RemoteOrigins``).
    package let origin: String?
    /// The store object the bundle is read from, if any: where each chunk record lies in it is
    /// noted with the records (``StoreContent``).
    package let object: StoreObject?
    /// Set when the stream is the records object of the bundle `object` (``RecordsObject``), which a
    /// thin import reads instead: what its first frame must say. Its site frames are noted as
    /// unchecked sites in `object`.
    package let describing: RecordsBinding?

    package init(
        vault: Vault,
        keys: KeyRing,
        sequences: (first: UInt64, last: UInt64),
        group: ImportPlan? = nil,
        origin: String? = nil,
        object: StoreObject? = nil,
        describing: RecordsBinding? = nil
    ) {
        self.vault = vault
        self.keys = keys
        self.sequences = sequences
        self.group = group
        self.origin = origin
        self.object = object
        self.describing = describing
    }

    /// Batches of at most this many chunks or bytes are committed together while staging: large
    /// enough that the commits' flushes do not dominate, small enough to bound memory.
    private static let batchChunks = 1024
    /// A thin import's chunks are a site each, not a record: many more go in one batch.
    private static let batchSites = 32768
    private static let batchBytes = 8 << 20
    /// At most this many chunk records, or bytes of them, are being checked at once.
    private static let checkWindow = 64
    private static let checkBytes = 16 << 20

    /// A chunk frame's record on its way through the check, with where it lies in the bundle.
    private struct ArrivingChunk {
        let site: BundleChunkSite
        let record: [UInt8]
    }

    package func run<Source: ByteSource>(
        _ frames: inout BundleFrameReader<Source>,
        summary: ImportSummary
    ) throws(CofferError) -> ImportSummary {
        let pending = PendingWrites(schema: vault.schema)
        let write = PendingWrites.WriteID.random()
        let thin = try thinObject()
        if describing != nil, thin == nil {
            throw CofferError(.internalError, "a records object is read only by a thin import")
        }
        try storage("starting the import") {
            if thin != nil { try vault.schema.ensureStoreContent(in: vault.environment) }
            try vault.environment.write { txn in try pending.begin(write, in: txn) }
        }
        do {
            var summary = summary
            var wanted: [ChunkID] = []
            var resend: UInt64?
            var sites: [BundleChunkSite] = []
            let unchecked = UncheckedChunks(source: summary.sourceDevice)
            try stage(
                &frames,
                write: write,
                thin: thin,
                unchecked: unchecked,
                summary: &summary,
                wanted: &wanted,
                resend: &resend,
                sites: &sites
            )
            if let thin {
                // The stream verified: where its chunks lie may count now (not before: a forged
                // stream's sites would come first for chunks this vault holds already), but for
                // those of a write-only client's chunks that a record has yet to check, at the commit.
                let checked = sites.filter { !unchecked.awaitsCheck($0) }
                let fromRecordsObject = describing != nil
                try storage("noting where chunks lie") {
                    try vault.environment.write { txn in
                        try BundleChunkSite.note(
                            checked,
                            in: thin,
                            schema: vault.schema,
                            txn: txn,
                            unchecked: fromRecordsObject
                        )
                    }
                }
                try keepStructure(of: write)
                sites = sites.filter { unchecked.awaitsCheck($0) }
            }
            return try commit(
                write: write,
                summary: summary,
                unchecked: unchecked,
                wanted: wanted,
                resend: resend,
                sites: sites
            )
        } catch {
            // Staged chunks and records go; the vault is as it was.
            _ = try? pending.release(write, store: ChunkStore(schema: vault.schema), environment: vault.environment)
            throw error
        }
    }

    /// The object of a thin import (see above): the bundle's, when this vault offloads to its store
    /// and reads from it, and it is not an answer-only bundle, which its device's next push writes
    /// over (``isReplaceable(_:)``). A vault whose store is not attached imports whole, and its next
    /// offload, push or pull drops what its budget does not keep.
    private func thinObject() throws(CofferError) -> StoreObject? {
        guard let object, !isReplaceable(object.key), try vault.importsThin(from: object.remote) else { return nil }
        return object
    }

    private func stage<Source: ByteSource>(
        _ frames: inout BundleFrameReader<Source>,
        write: PendingWrites.WriteID,
        thin: StoreObject?,
        unchecked: UncheckedChunks,
        summary: inout ImportSummary,
        wanted: inout [ChunkID],
        resend: inout UInt64?,
        sites: inout [BundleChunkSite]
    ) throws(CofferError) {
        var chunks: [(id: ChunkID, record: [UInt8])] = []
        // A thin import's chunks: where each lies in the object, its record left there.
        var offloaded: [BundleChunkSite] = []
        var records: [[UInt8]] = []
        var bytes = 0
        var batch: UInt32 = 0
        var recordIndex: UInt32 = 0
        // Each chunk record is checked against its id on worker threads, and comes back in order to be
        // staged. This thread, which reads the stream and writes the vault, is the import's critical
        // path: the workers leave it a core of its own.
        let (keys, source) = (keys, summary.sourceDevice)
        let checks = OrderedPipeline<ArrivingChunk, ArrivingChunk>(
            workers: max(OrderedPipeline<ArrivingChunk, ArrivingChunk>.defaultWorkerCount - 1, 1),
            window: Self.checkWindow
        ) { () throws(CofferError) in
            let check = try ArrivingChunkCheck(keys: keys, source: source)
            return { (chunk) throws(CofferError) in
                try check.check(chunk.site.id, record: chunk.record)
                return chunk
            }
        }
        defer { checks.shutDown() }
        var checking = 0
        var checkingBytes = 0
        func flush() throws(CofferError) {
            guard !chunks.isEmpty || !offloaded.isEmpty || !records.isEmpty else { return }
            let schema = vault.schema
            let (chunksToStore, recordsToStage, firstIndex, batchNumber) = (chunks, records, recordIndex, batch)
            let chunksToNote = offloaded
            let stored = try storage("staging the bundle") {
                try vault.environment.write { txn in
                    let store = ChunkStore(schema: schema)
                    let pending = PendingWrites(schema: schema)
                    var stored = 0
                    for chunk in chunksToStore where try store.retain(chunk.id, sealed: chunk.record, in: txn) {
                        stored += 1
                        if ArrivingChunkCheck.isSealedPerWrite(chunk.record) { unchecked.insert(chunk.id) }
                    }
                    // A thin import's chunks get their references now, their sites once the stream
                    // verifies (``run``).
                    for chunk in chunksToNote where try store.retainOffloaded(chunk.id, in: txn) { stored += 1 }
                    try pending.note(
                        chunksToStore.map(\.id) + chunksToNote.map(\.id),
                        batch: batchNumber,
                        of: write,
                        in: txn
                    )
                    for (offset, record) in recordsToStage.enumerated() {
                        try pending.stage(record, index: firstIndex + UInt32(offset), of: write, in: txn)
                    }
                    return stored
                }
            }
            summary.newChunks += stored
            recordIndex += UInt32(records.count)
            batch += 1
            chunks.removeAll(keepingCapacity: true)
            offloaded.removeAll(keepingCapacity: true)
            records.removeAll(keepingCapacity: true)
            bytes = 0
        }
        // A records object's chunk frames (a write-only client's chunks) lie at offsets of its own
        // stream, not the bundle's: they are stored whole, and get no site.
        let describing = describing
        func takeChecked() throws(CofferError) {
            guard let chunk = try checks.next() else { return }
            checking -= 1
            checkingBytes -= chunk.record.count
            if object != nil, describing == nil { sites.append(chunk.site) }
            // A write-only client's chunks are stored whole even in a thin import: they are checked
            // when a record takes them, at the commit (``UncheckedChunks``). The next offload drops
            // what the budget does not keep.
            if thin != nil, describing == nil, !ArrivingChunkCheck.isSealedPerWrite(chunk.record) {
                offloaded.append(chunk.site)
                bytes += ChunkID.size + 12
            } else {
                chunks.append((chunk.site.id, chunk.record))
                bytes += chunk.record.count
            }
            if chunks.count >= Self.batchChunks || offloaded.count >= Self.batchSites || bytes >= Self.batchBytes {
                try flush()
            }
        }
        var first = true
        while let frame = try frames.next() {
            if let describing {
                // The records object names its bundle first (``RecordsBinding``).
                guard first == (frame == .binding(describing)) else {
                    throw CofferError(
                        .decode,
                        "the records object does not describe the bundle beside it (another copy's, or altered)"
                    )
                }
            }
            first = false
            switch frame {
            case .chunk(let id, let record):
                try ChunkRecord.checkHeader(record, scope: .syncable)
                let offset = frames.lastBodyOffset + UInt64(ChunkID.size)
                let site = try BundleChunkSite(id: id, offset: offset, record: record)
                while checking > 0, !checks.hasRoom || checkingBytes >= Self.checkBytes { try takeChecked() }
                try checks.submit(ArrivingChunk(site: site, record: record))
                checking += 1
                checkingBytes += record.count
                summary.chunks += 1
            case .record:
                let encoded = frame.encoded
                records.append(Array(encoded.dropFirst(BundleFrame.headerSize)))
                bytes += encoded.count
            case .want(let chunkIDs):
                wanted = chunkIDs
            case .resend(let requests):
                resend = requests.first { $0.device == vault.deviceID.bytes }?.after
            case .site(let id, let offset, let length):
                guard describing != nil else {
                    throw CofferError(.decode, "the bundle holds a chunk's site, which only a records object holds")
                }
                let site = BundleChunkSite(id: id, offset: offset, length: length)
                sites.append(site)
                offloaded.append(site)
                bytes += ChunkID.size + 12
            case .binding:
                guard describing != nil else {
                    throw CofferError(.decode, "the bundle names another bundle, which only a records object does")
                }
            case .end, .signature:
                break  // never returned: the reader checks the end frame and then returns nil
            }
            if chunks.count >= Self.batchChunks || offloaded.count >= Self.batchSites || bytes >= Self.batchBytes {
                try flush()
            }
        }
        // A records object with no frame at all names no bundle either.
        if describing != nil, first {
            throw CofferError(.decode, "the records object does not describe the bundle beside it (it names none)")
        }
        checks.finishSubmitting()
        while checking > 0 { try takeChecked() }
        try flush()
    }

    /// Fetches back, and keeps here, the structure chunks (chunk lists, snapshot trees) of the
    /// records a thin import staged that it left in the store: the commit's walk of each record reads
    /// them, and releasing a record later must not need the store (``RecordStructure``). Read outside
    /// any write, since each is fetched from the store, then written at once (a small part of a
    /// vault: a list chunk's entry is 36 bytes per content chunk, a tree's about a hundred bytes per
    /// path). A record that loses to this vault's version costs a fetch for nothing.
    private func keepStructure(of write: PendingWrites.WriteID) throws(CofferError) {
        let (schema, environment, keys) = (vault.schema, vault.environment, keys)
        let tiers = SyncTiers(environment: environment, schema: schema, keys: keys, coder: try ChunkRecord.Coder())
        var fetched: [(id: ChunkID, record: [UInt8])] = []
        try storage("fetching the chunk lists and snapshot trees") {
            try environment.read { txn in
                guard let content = StoreContent(schema: schema) else { return }
                let chunks = ChunkStore(schema: schema)
                var seen: Set<ChunkID> = []
                try PendingWrites(schema: schema).forEachStagedRecord(of: write, in: txn) { body in
                    guard
                        case .record(let kind, let id, let entry, let stored) = try BundleFrame.decode(
                            type: 2,
                            body: body
                        ),
                        !entry.isDeleted
                    else { return }
                    try tiers[kind].forEachStructureChunk(id: id, stored: stored, in: txn) {
                        (chunk) throws(CofferError) in
                        try storage("fetching a chunk list or snapshot tree") {
                            guard seen.insert(chunk).inserted, try content.isOffloaded(chunk, in: txn),
                                let record = try chunks.withRecord(chunk, in: txn, { Array($0) })
                            else { return }
                            fetched.append((chunk, record))
                        }
                    }
                }
            }
        }
        guard !fetched.isEmpty else { return }
        try storage("keeping the chunk lists and snapshot trees") {
            try environment.write { txn in
                guard let content = StoreContent(schema: schema) else { return }
                for (id, record) in fetched { try content.keepForGood(id, record: record, in: txn) }
            }
        }
    }

    private func commit(
        write: PendingWrites.WriteID,
        summary: ImportSummary,
        unchecked: UncheckedChunks,
        wanted: [ChunkID],
        resend: UInt64?,
        sites: [BundleChunkSite]
    ) throws(CofferError) -> ImportSummary {
        let sequences = self.sequences
        let vault = vault
        let keys = keys
        let keychain = Keychain(vault: vault, accessGroups: nil, authenticationHandler: nil)
        let group = group
        let origin = origin
        let object = object
        if object != nil {
            try storage("noting where chunks lie") { try vault.schema.ensureStoreContent(in: vault.environment) }
        }
        var applied = try storage("applying the bundle") {
            try vault.environment.write { txn in
                try group?.commit(in: txn)
                // Where this bundle's chunks lie in its object (before the staging references go,
                // which forget the sites of chunks no record kept). Those of a write-only client's
                // chunks stored now wait for a record to check them (below).
                let awaitingCheck = sites.filter { unchecked.awaitsCheck($0) }
                if let object {
                    let checked = sites.filter { !unchecked.awaitsCheck($0) }
                    try BundleChunkSite.note(checked, in: object, schema: vault.schema, txn: txn)
                }
                let before = try ChangeLog.lastSequence(in: txn, schema: vault.schema)
                var applier = try ImportApplier(
                    txn: txn,
                    vault: vault,
                    keys: keys,
                    keychain: keychain,
                    origin: origin == nil ? .bundleImport : .pull,
                    summary: summary,
                    unchecked: unchecked
                )
                let pending = PendingWrites(schema: vault.schema)
                // A record that goes before another takes its chunks (a rename) must not free them.
                try ChunkStore(schema: vault.schema).deferringFrees(in: txn) {
                    try pending.forEachStagedRecord(of: write, in: txn) { body in
                        guard
                            case .record(let kind, let id, let entry, let stored) = try BundleFrame.decode(
                                type: 2,
                                body: body
                            )
                        else { throw CofferError(.internalError, "a staged import record is not a record") }
                        try applier.apply(kind, id: id, entry: entry, stored: stored, body: body)
                    }
                    // The changes this bundle's own records made are in the store it came from. (Held
                    // records applied below may have come from anywhere: they are not noted.)
                    let applied = try ChangeLog.lastSequence(in: txn, schema: vault.schema)
                    if let origin, applied > before {
                        try RemoteOrigins(schema: vault.schema, remote: origin)
                            .record(
                                (before + 1)...applied,
                                from: summary.sourceDevice,
                                signedWith: group?.signer,
                                in: txn
                            )
                    }
                    // Records held back before may be complete now, with this bundle's chunks.
                    try applier.applyHeld()
                }
                if let object {
                    // A write-only client's chunks a record checked now (the others go with the
                    // staging references).
                    let checked = awaitingCheck.filter { !unchecked.awaitsCheck($0) }
                    try BundleChunkSite.note(checked, in: object, schema: vault.schema, txn: txn)
                }
                // What the exporting device asked for replaces what it asked before. (A vault's own
                // bundle, imported back, says nothing new.)
                let requests = SyncRequests(schema: vault.schema)
                let source = summary.sourceDevice.bytes
                // Staged chunks no record took are freed with the staging references: not new here
                // after all (round 44 saw "4 of 4 chunks new" where none was kept).
                func finish() throws -> ImportSummary {
                    var summary = applier.summary
                    let freed = try pending.abandon(write, store: ChunkStore(schema: vault.schema), in: txn).freed
                    summary.newChunks = max(0, summary.newChunks - freed)
                    return summary
                }
                guard source != vault.deviceID.bytes else { return try finish() }
                try requests.recordWanted(wanted, by: source, in: txn)
                try requests.recordResend(resend, for: source, in: txn)
                // Records refused for clock stamps ahead of this machine's clock count as not
                // arrived: the device is asked to send its changes again from before this bundle,
                // and a later import applies them (a pull imports the bundle again by itself).
                if applier.summary.refusedFutureRecords > 0 {
                    if origin == nil, try requests.gaps(in: txn).first(where: { $0.device == source }) == nil {
                        try requests.recordGap(try requests.applied(from: source, in: txn), of: source, in: txn)
                    }
                    return try finish()
                }
                // A bundle that starts past what arrived before leaves a gap: asked for again.
                let gap = try requests.noteImported(from: source, first: sequences.first, last: sequences.last, in: txn)
                if let gap {
                    try requests.recordGap(gap, of: source, in: txn)
                } else if let open = try requests.gaps(in: txn).first(where: { $0.device == source }),
                    sequences.first <= open.after + 1
                {
                    try requests.recordGap(nil, of: source, in: txn)
                }
                return try finish()
            }
        }
        // What devices no longer members sent (revoked, or their join voided) waits for data they
        // may never send: it no longer makes the import incomplete (red team round 44, G2). A vault
        // without a membership log (made before them, fed bundles that carry none) lists itself
        // alone, so it sets nothing apart.
        if applied.held > 0, try vault.readMetaIfPresent(GroupContext.Meta.log) != nil {
            let active = Set(try vault.members().filter(\.isActive).map(\.deviceID))
            let schema = vault.schema
            applied.tallyHeld(
                try storage("counting the records held back") {
                    try vault.environment.read { txn in try HeldRecords(schema: schema).tally(active: active, in: txn) }
                }
            )
        }
        return applied
    }
}
