import Foundation

/// The middle of a rekey (``Vault/rekey(passphrase:newPassphrase:progress:)``): every device-bound
/// record (items, blob manifests, snapshot records, chunks) sealed again in the new generation, in
/// batches of one write transaction each, so that memory and the writer lock stay bounded and a run
/// killed at any moment loses at most the batch in flight. Records already in the generation are
/// skipped, which is what makes an interrupted run resumable: the next one walks the tables again and
/// re-seals only what is left. Syncable records are never touched.
struct RekeyPass {
    let vault: Vault
    /// The generation records move to.
    let generation: KeyEpoch

    /// A batch ends after this many stored bytes re-sealed...
    private static let batchBytes = 16 << 20
    /// ...or this many records examined, whichever comes first.
    private static let batchRecords = 2048

    /// The kinds of sealed record, one table each (chunk records on their own, then packed ones), in
    /// the order they are walked.
    private enum Kind: CaseIterable {
        case items
        case blobManifests
        case snapshots
        case chunks
        case packedChunks

        private func table(_ schema: Schema) -> Table? {
            switch self {
            case .items: return schema.items
            case .blobManifests: return schema.blobs
            case .snapshots: return schema.snapshots
            case .chunks: return schema.chunks
            case .packedChunks: return schema.packs?.locators
            }
        }

        func count(_ schema: Schema, in txn: Transaction) throws -> Int {
            try table(schema).map { try txn.count($0) } ?? 0
        }

        /// Visits the records from the first key not less than `start`.
        func forEach(
            _ schema: Schema,
            in txn: Transaction,
            from start: [UInt8],
            _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
        ) throws {
            if self == .packedChunks { return try schema.records.forEachPacked(in: txn, from: start, body) }
            guard let table = table(schema) else { return }
            try txn.forEach(in: table, from: start, body)
        }

        /// Stores `record` under `key` (a re-sealed packed chunk goes to the transaction's open pack).
        func put(_ schema: Schema, key: [UInt8], record: [UInt8], in txn: Transaction) throws {
            if self == .packedChunks { return try schema.records.put(try ChunkID(stored: key), record, in: txn) }
            guard let table = table(schema) else { return }
            try txn.put(table, key: key, value: record)
        }
    }

    /// What the batches have done so far.
    private struct Tally {
        var examined = 0
        var resealed = 0
        var resealedBytes: Int64 = 0
    }

    /// Walks every table, reporting after each batch.
    func run(progress: ((RekeyProgress) -> Void)?) throws(CofferError) {
        let schema = vault.schema
        let total = try storage("counting the vault's records") {
            try vault.environment.read { txn in try Kind.allCases.reduce(0) { $0 + (try $1.count(schema, in: txn)) } }
        }
        var tally = Tally()
        progress?(RekeyProgress(examined: 0, total: total, resealed: 0, resealedBytes: 0))
        for kind in Kind.allCases {
            var after: [UInt8]?
            repeat {
                after = try batch(kind, after: after, tally: &tally)
                progress?(
                    RekeyProgress(
                        examined: tally.examined,
                        total: max(total, tally.examined),
                        resealed: tally.resealed,
                        resealedBytes: tally.resealedBytes
                    )
                )
            } while after != nil
        }
    }

    /// Re-seals one batch of `kind` from the first key past `after` in one write transaction; returns
    /// the last key examined, or `nil` when the table is done.
    private func batch(_ kind: Kind, after: [UInt8]?, tally: inout Tally) throws(CofferError) -> [UInt8]? {
        let keys = try vault.keyRing()
        guard keys.currentEpoch(.device) == generation else {
            throw CofferError(
                .interactionNotAllowed,
                "another process ended or replaced this rekey meanwhile; \(run: .rekey) again to check"
            )
        }
        let resealer = try Resealer(keys: keys, generation: generation)
        let schema = vault.schema
        return try storage("re-sealing the vault's device-bound records") {
            try vault.environment.write { txn -> [UInt8]? in
                var rewritten: [(key: [UInt8], value: [UInt8])] = []
                var bytes = 0
                var examined = 0
                var last: [UInt8]?
                var finished = true
                try kind.forEach(schema, in: txn, from: after.map { $0 + [0] } ?? []) { key, value in
                    if examined == Self.batchRecords || bytes >= Self.batchBytes {
                        finished = false
                        return false
                    }
                    examined += 1
                    last = Array(key)
                    if let resealed = try resealer.reseal(kind, key: key, value: value) {
                        rewritten.append((Array(key), resealed))
                        bytes += resealed.count
                    }
                    return true
                }
                for (key, value) in rewritten { try kind.put(schema, key: key, record: value, in: txn) }
                tally.examined += examined
                tally.resealed += rewritten.count
                tally.resealedBytes += Int64(bytes)
                return finished ? nil : last
            }
        }
    }

    /// Re-seals single records: the keys and cipher contexts of one batch.
    private struct Resealer {
        let keys: KeyRing
        let generation: KeyEpoch
        let cipher: AESGCM
        let chunkKeys: [ProtectionLevel: ChunkKeys]

        init(keys: KeyRing, generation: KeyEpoch) throws(CofferError) {
            self.keys = keys
            self.generation = generation
            do {
                cipher = try AESGCM()
            } catch {
                throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
            }
            var chunkKeys: [ProtectionLevel: ChunkKeys] = [:]
            for level in ProtectionLevel.symmetricLevels {
                chunkKeys[level] = try ChunkKeys(scope: .deviceBound, level: level, write: nil, keys: keys)
            }
            self.chunkKeys = chunkKeys
        }

        /// The record stored under `key` sealed again in the generation, or `nil` when it is
        /// syncable or in the generation already.
        func reseal(_ kind: Kind, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> [UInt8]? {
            switch kind {
            case .items:
                let header = try ItemRecord.Header(stored: value)
                guard header.scope == .deviceBound, header.epoch != generation else { return nil }
                let level = header.accessibility.level
                return try ItemRecord.reseal(
                    value,
                    id: Array(key),
                    header: header,
                    opening: try keys.key(.item, .device, level, epoch: header.epoch),
                    sealing: try keys.key(.item, .device, level, epoch: generation),
                    in: generation,
                    cipher: cipher
                )
            case .blobManifests, .snapshots:
                let versions = kind == .snapshots ? SnapshotRecord.readableVersions : BlobManifest.readableVersions
                let what = kind == .snapshots ? "a snapshot record" : "a blob manifest"
                let header = try SealedRecord.peekHeader(value, versions: versions, what: what)
                guard header.scope == .deviceBound, header.epoch != generation else { return nil }
                return try SealedRecord.reseal(
                    value,
                    versions: versions,
                    label: kind == .snapshots ? SnapshotRecord.label : BlobManifest.label,
                    id: Array(key),
                    keys: keys,
                    cipher: cipher,
                    what: what
                )
            case .chunks, .packedChunks:
                guard let (sealed, _) = ChunkRecord.sealedScope(of: value) else {
                    throw CofferError(.decode, "a chunk record's header is invalid; the record was altered or damaged")
                }
                guard sealed.scope == .deviceBound, sealed.epoch != generation else { return nil }
                // A completeUnlessOpen chunk is keyed by its write's secret, which the rekey moves by
                // sealing its box (in the manifest) to the new generation's class key.
                if value.count > 2, value[2] == ProtectionLevel.completeUnlessOpen.code { return nil }
                guard value.count > 2, let level = ProtectionLevel(code: value[2]), let chunkKeys = chunkKeys[level]
                else {
                    throw CofferError(.decode, "a chunk record's header is invalid; the record was altered or damaged")
                }
                return try ChunkRecord.reseal(value, id: try ChunkID(stored: key), keys: chunkKeys, cipher: cipher)
            }
        }
    }
}
