/// The chunks that hold the structure of this vault's records rather than their content: blobs' list
/// chunks, snapshots' trees and their files' list chunks (``SyncedRecords/forEachStructureChunk(id:in:_:)``).
///
/// Offloading never drops them. Releasing a record, when a pull replaces or deletes it or this vault
/// deletes it, reads them to find the content chunks it references; by then the store may no longer
/// hold them (a compaction writes only what its checkpoint's records reference), and a vault that
/// could not release a record could not apply the change. They are a small part of a vault (a list
/// chunk's entry is 36 bytes per content chunk; a tree about a hundred bytes per path).
///
/// Finding a snapshot's means reading its whole tree, so what was found is noted in `storeContent`
/// against a digest of the record, and read again only for a record not seen before.
struct RecordStructure {
    let environment: Environment
    let schema: Schema
    let tiers: SyncTiers

    init(environment: Environment, schema: Schema, keys: KeyRing) throws(CofferError) {
        self.environment = environment
        self.schema = schema
        let coder = try ChunkRecord.Coder()
        tiers = SyncTiers(environment: environment, schema: schema, keys: keys, coder: coder)
    }

    /// Every structure chunk of every record this vault holds. Notes what it had to walk a snapshot's
    /// tree to find, and forgets what it noted of records that are gone.
    func chunks() throws(CofferError) -> Set<ChunkID> {
        let (schema, tiers) = (schema, tiers)
        struct Walked {
            let kind: SyncRecordKind
            let id: [UInt8]
            let digest: [UInt8]
            let chunks: [ChunkID]
        }
        var structure: Set<ChunkID> = []
        var walked: [Walked] = []
        var stale: [(SyncRecordKind, [UInt8])] = []
        try storage("finding the chunk lists and snapshot trees") {
            try environment.read { txn in
                let content = StoreContent(schema: schema)
                for kind in SyncRecordKind.allCases {
                    let tier = tiers[kind]
                    // Only a snapshot's walk reads chunks (its tree); the others read the record alone.
                    let noted = kind == .snapshot ? content : nil
                    try txn.forEach(in: tier.table) { key, value in
                        let id = Array(key)
                        let digest = noted == nil ? [] : try SHA256.hash(value)
                        if let noted, let chunks = try noted.structure(of: kind, id: id, digest: digest, in: txn) {
                            structure.formUnion(chunks)
                            return true
                        }
                        var chunks: [ChunkID] = []
                        try tier.forEachStructureChunk(id: id, stored: nil, in: txn) { chunks.append($0) }
                        structure.formUnion(chunks)
                        if noted != nil { walked.append(Walked(kind: kind, id: id, digest: digest, chunks: chunks)) }
                        return true
                    }
                }
                try content?.forEachNotedStructure(in: txn) { kind, id in
                    if try !txn.contains(tiers[kind].table, key: id) { stale.append((kind, id)) }
                    return true
                }
            }
        }
        guard !walked.isEmpty || !stale.isEmpty else { return structure }
        try storage("noting the chunk lists and snapshot trees") {
            try environment.write { txn in
                guard let content = StoreContent(schema: schema) else { return }
                for record in walked {
                    try content.noteStructure(
                        of: record.kind,
                        id: record.id,
                        digest: record.digest,
                        chunks: record.chunks,
                        in: txn
                    )
                }
                for (kind, id) in stale { try content.forgetStructure(of: kind, id: id, in: txn) }
            }
        }
        return structure
    }
}
