import Foundation

/// What ``Blobs/collectGarbage()-5m133`` freed.
public struct GarbageCollectionReport: Sendable, Hashable {
    /// Writes whose process died before they committed, now released.
    public let abandonedWrites: Int
    /// Chunk references those writes held, now released.
    public let releasedReferences: Int
    /// Chunks freed (by those releases, or stored without any reference).
    public let freedChunks: Int
    /// Stored bytes those chunks took.
    public let freedBytes: Int64
}

/// What ``Blobs/verify(readingData:)-53rte`` checked and found.
public struct VerificationReport: Sendable, Hashable {
    /// Blobs checked.
    public let blobCount: Int
    /// Snapshots checked.
    public let snapshotCount: Int
    /// Chunks stored.
    public let chunkCount: Int
    /// Bytes of content read, decrypted and checked (0 without `readingData`).
    public let bytesRead: Int64
    /// Chunks read, decrypted and checked against their ids (0 without `readingData`).
    public var chunksRead = 0
    /// The stored bytes of those chunks (0 without `readingData`).
    public var chunkBytesRead: Int64 = 0
    /// Everything found wrong, in the order found; empty when the vault is healthy.
    public let problems: [VerificationProblem]

    /// Whether nothing was found wrong.
    public var isHealthy: Bool { problems.isEmpty }
}

/// What the vault's content holds, blobs and snapshots together, from ``Blobs/statistics()-8jzhe``: the
/// chunks are shared by both, so only the whole compares with them.
public struct BlobStatistics: Sendable, Hashable {
    /// Number of blobs.
    public let blobCount: Int
    /// Their total size: what reading them all would return.
    public let blobBytes: Int64
    /// Number of snapshots.
    public let snapshotCount: Int
    /// The total size of the snapshots' regular files, each snapshot counted in full: what
    /// restoring them all would write.
    public let snapshotBytes: Int64
    /// Number of distinct chunks stored (content and list chunks).
    public let chunkCount: Int
    /// The plaintext size of the distinct chunks: ``logicalBytes`` after deduplication.
    public let uniqueBytes: Int64
    /// What the chunk records take: after deduplication, compression and encryption.
    public let storedBytes: Int64

    /// Blobs and snapshot files together: what the chunks stand for.
    public var logicalBytes: Int64 { blobBytes + snapshotBytes }
    /// Logical bytes per unique byte (2.0: each byte is stored for two).
    public var deduplicationRatio: Double { uniqueBytes == 0 ? 1 : Double(logicalBytes) / Double(uniqueBytes) }
    /// Unique bytes per stored byte (2.0: compression halved them).
    public var compressionRatio: Double { storedBytes == 0 ? 1 : Double(uniqueBytes) / Double(storedBytes) }
}

extension Blobs {
    /// Frees what no blob will use: the chunk references of writes whose process died mid-write (a
    /// write in progress, in this or another process, is left alone), and chunks stored without any
    /// reference. Reference counts are exact, so deleting a blob already frees its chunks; this only
    /// cleans up after crashes.
    public func collectGarbage() throws(CofferError) -> GarbageCollectionReport {
        try vault.checkOpen()
        let schema = vault.schema
        let store = BlobStore(schema: schema)
        return try storage("collecting garbage") {
            let reclaimed = try store.pending.reclaimDead(store: store.chunks, environment: vault.environment)
            let (orphans, orphanBytes) = try vault.environment.write { txn in
                var orphans: [[UInt8]] = []
                var bytes: Int64 = 0
                try schema.records.forEach(in: txn) { key, value in
                    if try !txn.contains(schema.chunkRefs, key: key) {
                        orphans.append(Array(key))
                        bytes += Int64(value.count)
                    }
                    return true
                }
                for id in orphans { try schema.records.delete(ChunkID(id), in: txn) }
                return (orphans.count, bytes)
            }
            return GarbageCollectionReport(
                abandonedWrites: reclaimed.writes,
                releasedReferences: reclaimed.references,
                freedChunks: reclaimed.freedChunks + orphans,
                freedBytes: reclaimed.freedBytes + orphanBytes
            )
        }
    }

    /// Checks the blob tier: every manifest opens, every chunk it lists is stored, every stored
    /// chunk's reference count equals the references manifests and writes in progress hold, and no
    /// chunk is stored without one. With `readingData`, also reads every blob in full: decrypts and
    /// decompresses each chunk, recomputes its id and the blob's SHA-256. Damage is reported per
    /// blob, by name, and checking goes on past it.
    ///
    /// - Throws: ``CofferError`` only when the check itself cannot run (the vault is closed, locked
    ///   before first unlock, or unreadable); what it finds is in the report.
    public func verify(readingData: Bool = false) throws(CofferError) -> VerificationReport {
        try verify(reading: readingData ? .all : .none, progress: nil)
    }

    /// Checks the blob tier as ``verify(readingData:)-53rte`` does, reporting how much content it has read.
    ///
    /// - Parameters:
    ///   - readingData: Whether to read every chunk, blob and snapshot file in full.
    ///   - progress: Called now and then, while content is read, with the bytes read so far.
    /// - Throws: ``CofferError`` only when the check itself cannot run.
    public func verify(
        readingData: Bool,
        progress: @escaping @Sendable (Int64) -> Void
    ) throws(CofferError) -> VerificationReport {
        try verify(reading: readingData ? .all : .none, progress: progress)
    }

    /// Checks the structure as ``verify(readingData:)-53rte`` does, then reads, decrypts and checks only
    /// the chunks of `subset` against their ids (restic's `check --read-data-subset`), so a large
    /// vault can be read a part at a time: the slices `1/M` to `M/M` together read every chunk
    /// once. Whole blobs and snapshot files are not read (their digests need every chunk), so
    /// ``VerificationReport/bytesRead`` counts the chunks' stored bytes.
    public func verify(readingDataSubset subset: DataSubset) throws(CofferError) -> VerificationReport {
        try verify(reading: .subset(subset), progress: nil)
    }

    /// Checks as ``verify(readingDataSubset:)-3zhpn`` does, reporting how much it has read.
    ///
    /// - Parameters:
    ///   - subset: The slice of the chunks to read, or a random share of them.
    ///   - progress: Called now and then with the stored bytes of the chunks read so far.
    /// - Throws: ``CofferError`` only when the check itself cannot run.
    public func verify(
        readingDataSubset subset: DataSubset,
        progress: @escaping @Sendable (Int64) -> Void
    ) throws(CofferError) -> VerificationReport {
        try verify(reading: .subset(subset), progress: progress)
    }

    /// What a verification reads.
    private enum Reading {
        case none, all
        case subset(DataSubset)
    }

    private func verify(
        reading: Reading,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CofferError) -> VerificationReport {
        try vault.checkOpen()
        let keys = try vault.keyRing()
        let schema = vault.schema
        let store = BlobStore(schema: schema)
        let coder = try ChunkRecord.Coder()
        var names: [String] = []
        var problems: [VerificationProblem] = []
        var snapshotRecords: [SnapshotRecord] = []
        var structureSound = true
        let snapshots = SnapshotStore(environment: vault.environment, schema: schema, keys: keys)
        // One read transaction for every structural check: the data file's own walk, the snapshots'
        // and blobs' references and the chunks' counts all describe one snapshot of the vault, so a
        // writer committing meanwhile never shows up as a count that disagrees.
        let (blobCount, chunkCount) = try storage("verifying the blobs") {
            try vault.environment.read { txn -> (Int, Int) in
                problems = try vault.checkDataFile(in: txn)
                // LMDB walks no page the checked reader has not found sound.
                guard problems.isEmpty else {
                    structureSound = false
                    problems.append(
                        VerificationProblem(
                            blob: nil,
                            message:
                                "the data file's structure is damaged, so nothing stored in it was read (reading a damaged page could stop the process); restore the vault from a complete copy"
                        )
                    )
                    return (0, 0)
                }
                var expected: [ChunkID: UInt64] = [:]
                snapshotRecords = try Self.snapshotRecords(snapshots, in: txn, problems: &problems)
                for record in snapshotRecords {
                    do {
                        try snapshots.forEachReference(of: record, in: txn, coder: coder) {
                            expected[$0, default: 0] += 1
                        }
                    } catch {
                        let message = CofferError.wrapping(error, while: "verifying a snapshot").message
                        problems.append(VerificationProblem(blob: nil, message: message))
                    }
                }
                var blobCount = 0
                var chunkKeys: [String: ChunkKeys] = [:]
                try txn.forEach(in: schema.blobs) { key, value in
                    blobCount += 1
                    let id = Array(key)
                    var name: String?
                    do {
                        let manifest = try BlobManifest.open(value, id: id, keys: keys, cipher: coder.cipher)
                        name = manifest.name
                        names.append(manifest.name)
                        // A write-only client's blob has a random id: nothing to compare.
                        let expectedID =
                            manifest.isDrop
                            ? id : try BlobManifest.id(of: manifest.name, scope: manifest.scope, keys: keys)
                        guard expectedID == id else {
                            throw CofferError(.decode, "its manifest is stored under another blob's id")
                        }
                        let keysForBlob: ChunkKeys
                        if manifest.level.isSealedToClassKey {
                            keysForBlob = try ChunkKeys(content: manifest, keys: keys)
                        } else {
                            let slot = "\(manifest.scope.code)/\(manifest.level.code)"
                            keysForBlob = try chunkKeys[slot] ?? ChunkKeys(content: manifest, keys: keys)
                            chunkKeys[slot] = keysForBlob
                        }
                        try store.forEachReference(of: manifest, keys: keysForBlob, coder: coder, in: txn) { chunk in
                            expected[chunk, default: 0] += 1
                        }
                    } catch {
                        var message = CofferError.wrapping(error, while: "verifying a blob").message
                        if name == nil {
                            let prefix = id.prefix(6).hexEncoded
                            message = "the manifest stored under id \(prefix)…: \(message)"
                        }
                        problems.append(VerificationProblem(blob: name, message: message))
                    }
                    return true
                }
                try store.pending.forEachNotedChunk(in: txn) { expected[$0, default: 0] += 1 }
                // Sync records held back for missing chunks keep references to those that arrived.
                try HeldRecords(schema: schema).forEachKeptReference(in: txn) { expected[$0, default: 0] += 1 }
                for problem in try schema.records.packProblems(in: txn) {
                    problems.append(VerificationProblem(blob: nil, message: problem))
                }
                var chunkCount = 0
                try schema.records.forEachID(in: txn) { key in
                    chunkCount += 1
                    guard let id = try? ChunkID(stored: key) else {
                        problems.append(
                            VerificationProblem(
                                blob: nil,
                                message: "a chunk is stored under a key of \(key.count) bytes"
                            )
                        )
                        return
                    }
                    let count = try store.chunks.referenceCount(of: id, in: txn)
                    let wanted = expected.removeValue(forKey: id) ?? 0
                    if count == nil || count == 0 {
                        problems.append(
                            VerificationProblem(
                                blob: nil,
                                message:
                                    "a chunk is stored with no reference count; \(InterfaceName.collectGarbage) frees it"
                            )
                        )
                    } else if count != wanted {
                        problems.append(
                            VerificationProblem(
                                blob: nil,
                                message: "a chunk's reference count is \(count!) but \(wanted) references exist"
                            )
                        )
                    }
                }
                // Chunks offloaded to an object store are not here, by design: their counts are
                // checked all the same (and their content when it is read).
                if !expected.isEmpty, let content = StoreContent(schema: schema) {
                    for (id, wanted) in expected where try content.isOffloaded(id, in: txn) {
                        expected.removeValue(forKey: id)
                        let count = try store.chunks.referenceCount(of: id, in: txn) ?? 0
                        if count != wanted {
                            problems.append(
                                VerificationProblem(
                                    blob: nil,
                                    message:
                                        "an offloaded chunk's reference count is \(count) but \(wanted) references exist"
                                )
                            )
                        }
                    }
                }
                if !expected.isEmpty {
                    problems.append(
                        VerificationProblem(blob: nil, message: "\(expected.count) chunks that blobs list are missing")
                    )
                }
                return (blobCount, chunkCount)
            }
        }
        var bytesRead: Int64 = 0
        var chunksRead = 0
        var chunkBytesRead: Int64 = 0
        if structureSound, case .subset(let subset) = reading {
            let checked = try checkChunks(keys: keys, in: subset, progress: progress)
            problems += checked.problems
            (chunksRead, bytesRead, chunkBytesRead) = (checked.chunks, checked.bytes, checked.bytes)
        }
        if structureSound, case .all = reading {
            let checked = try checkChunks(keys: keys, in: nil, progress: progress)
            problems += checked.problems
            (chunksRead, chunkBytesRead) = (checked.chunks, checked.bytes)
            // The chunks' stored bytes, then the content read in full: what the reader waits for.
            let chunkBytes = checked.bytes
            let reader = BlobReader(vault: vault, keys: keys)
            for name in names.sorted() {
                var sink = ClosureSink { bytes in
                    bytesRead += Int64(bytes.count)
                    progress?(chunkBytes + bytesRead)
                }
                do {
                    try reader.read(name, to: &sink)
                } catch  where error.code == .itemNotFound {
                    // Removed by another process since the structure was read: nothing wrong.
                } catch {
                    let message = error.message.replacingOccurrences(of: "blob '\(name)' is damaged: ", with: "")
                    problems.append(VerificationProblem(blob: name, message: message))
                }
            }
            let blobBytes = bytesRead
            bytesRead += try checkSnapshotFiles(
                snapshotRecords,
                store: snapshots,
                reader: ContentReader(environment: vault.environment, store: ContentStore(schema: schema), keys: keys),
                problems: &problems,
                progress: progress.map { report in { @Sendable read in report(chunkBytes + blobBytes + read) } }
            )
        }
        var report = VerificationReport(
            blobCount: blobCount,
            snapshotCount: snapshotRecords.count,
            chunkCount: chunkCount,
            bytesRead: bytesRead,
            problems: problems
        )
        report.chunksRead = chunksRead
        report.chunkBytesRead = chunkBytesRead
        return report
    }

    /// Counts and sizes of what the blob tier holds.
    public func statistics() throws(CofferError) -> BlobStatistics {
        let blobs = try list()
        let snapshots = try vault.snapshots.list()
        let schema = vault.schema
        return try storage("reading blob statistics") {
            try vault.environment.read { txn in
                var unique: Int64 = 0
                var stored: Int64 = 0
                var count = 0
                try schema.records.forEach(in: txn) { _, value in
                    count += 1
                    stored += Int64(value.count)
                    if value.count >= ChunkRecord.headerSize {
                        unique += Int64(value[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                    }
                    return true
                }
                return BlobStatistics(
                    blobCount: blobs.count,
                    blobBytes: blobs.reduce(0) { $0 + $1.size },
                    snapshotCount: snapshots.count,
                    snapshotBytes: snapshots.reduce(0) { $0 + $1.statistics.bytes },
                    chunkCount: count,
                    uniqueBytes: unique,
                    storedBytes: stored
                )
            }
        }
    }

    /// Reads every distinct file content of the snapshots in full (each checked chunk by chunk and
    /// against its SHA-256); returns the bytes read. Contents shared by several files or snapshots are
    /// read once.
    private func checkSnapshotFiles(
        _ records: [SnapshotRecord],
        store: SnapshotStore,
        reader: ContentReader,
        problems: inout [VerificationProblem],
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CofferError) -> Int64 {
        var checked = Set<ChunkList>()
        var bytesRead: Int64 = 0
        for record in records {
            let label = "snapshot \(record.info.shortID) ('\(record.name)')"
            var found: [VerificationProblem] = []
            defer {
                // A snapshot forgotten by another process since the structure was read loses its
                // chunks: nothing wrong.
                let stillThere = try? vault.environment.read { txn in
                    try txn.contains(store.schema.snapshots, key: record.id)
                }
                if stillThere != false { problems += found }
            }
            do {
                try store.forEachEntry(of: record) { (entry) throws(CofferError) in
                    guard let content = entry.content, checked.insert(content.chunks).inserted else { return }
                    var sink = ClosureSink { bytes in
                        bytesRead += Int64(bytes.count)
                        progress?(bytesRead)
                    }
                    do throws(CofferError) {
                        try reader.stream(
                            try FileContent(entry, scope: record.scope, level: record.level, write: record.write),
                            range: 0..<entry.size,
                            to: &sink,
                            progress: nil
                        )
                    } catch {
                        found.append(
                            VerificationProblem(
                                blob: nil,
                                message: "\(label), file '\(entry.displayPath)': \(error.message)"
                            )
                        )
                    }
                }
            } catch {
                found.append(VerificationProblem(blob: nil, message: "\(label): \(error.message)"))
            }
        }
        return bytesRead
    }

    /// Every snapshot record that opens, read in `txn`; the ones that do not are reported.
    private static func snapshotRecords(
        _ store: SnapshotStore,
        in txn: Transaction,
        problems: inout [VerificationProblem]
    ) throws -> [SnapshotRecord] {
        let cipher: AESGCM
        do {
            cipher = try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
        var records: [SnapshotRecord] = []
        var failures: [String] = []
        try txn.forEach(in: store.schema.snapshots) { key, value in
            do {
                records.append(try SnapshotRecord.open(value, id: Array(key), keys: store.keys, cipher: cipher))
            } catch {
                let prefix = key.prefix(4).hexEncoded
                failures.append(
                    "snapshot \(prefix)…: \(CofferError.wrapping(error, while: "reading a snapshot").message)"
                )
            }
            return true
        }
        problems += failures.map { VerificationProblem(blob: nil, message: $0) }
        return records
    }

    /// Opens every stored chunk once (decrypt, decompress, recompute its id) with the keys its header
    /// names, whatever refers to it.
    private func checkChunks(
        keys: KeyRing,
        in subset: DataSubset?,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CofferError) -> (problems: [VerificationProblem], chunks: Int, bytes: Int64) {
        let coder = try ChunkRecord.Coder()
        var chunkKeys: [[UInt8]: ChunkKeys] = [:]
        var damaged = 0
        var locked = 0
        var chunks = 0
        var bytes: Int64 = 0
        var random = SystemRandomNumberGenerator()
        try storage("reading every chunk") {
            try vault.environment.read { txn in
                // A packed record whose pack is damaged fails like a record that does not authenticate.
                let unreadable = { (key: UnsafeRawBufferPointer) in
                    if let subset, !subset.contains(chunkKey: key, random: &random) { return }
                    chunks += 1
                    damaged += 1
                }
                try vault.schema.records.forEach(in: txn, unreadable: unreadable) { key, value in
                    if let subset, !subset.contains(chunkKey: key, random: &random) { return true }
                    chunks += 1
                    bytes += Int64(value.count)
                    progress?(bytes)
                    txn.noteScatteredTouch()
                    guard let (sealed, _) = ChunkRecord.sealedScope(of: value),
                        let level = ProtectionLevel(code: value[2])
                    else {
                        damaged += 1
                        return true
                    }
                    // A completeUnlessOpen chunk's key is its write's: it is opened when its blob or
                    // snapshot is read in full below, not here.
                    guard !level.isSealedToClassKey else { return true }
                    let scope = sealed.scope
                    let slot = [scope.code, level.code]
                    do {
                        let keysForChunk =
                            try chunkKeys[slot] ?? ChunkKeys(scope: scope, level: level, write: nil, keys: keys)
                        chunkKeys[slot] = keysForChunk
                        _ = try ChunkRecord.open(value, id: try ChunkID(stored: key), keys: keysForChunk, coder: coder)
                    } catch let error as CofferError where error.code == .interactionNotAllowed {
                        locked += 1
                    } catch {
                        damaged += 1
                    }
                    return true
                }
            }
        }
        var problems: [VerificationProblem] = []
        if damaged > 0 {
            let (chunks, fail, it, uses) =
                damaged == 1 ? ("chunk", "fails", "it", "uses") : ("chunks", "fail", "them", "use")
            let named =
                subset == nil
                ? "What \(uses) \(it) is named below" : "\(InterfaceName.verifyReadingData) names what \(uses) \(it)"
            problems.append(
                VerificationProblem(
                    blob: nil,
                    message:
                        "\(damaged) stored \(chunks) \(fail) authentication: altered or damaged. \(named); storing that content again the same way (a put, or a backup that reads the file again) stores \(it) anew"
                )
            )
        }
        if locked > 0 {
            problems.append(
                VerificationProblem(
                    blob: nil,
                    message: "\(locked) whenUnlocked chunks could not be checked while locked"
                )
            )
        }
        return (problems, chunks, bytes)
    }
}
