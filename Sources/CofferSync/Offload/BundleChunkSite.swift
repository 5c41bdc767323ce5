/// Where one chunk record went in a bundle's stream, as its exporter wrote it or its importer read
/// it: noted as the chunk's site once the bundle is in an object store (``StoreContent``).
package struct BundleChunkSite: Sendable {
    /// The chunk.
    package var id: ChunkID
    /// The record's first byte in the stream's plaintext.
    package var offset: UInt64
    /// The record's length.
    package var length: UInt32
    /// The SHA-256 of a record sealed with keys agreed per write (a write-only client's), which only
    /// its write's record can check: its site is noted only for a copy of the record this vault
    /// holds or held (``StoreContent/isGenuineCopy(digest:of:in:)``). `nil` for a record checked
    /// with the group's keys as it was read.
    package var perWriteDigest: [UInt8]?

    package init(id: ChunkID, offset: UInt64, length: UInt32, perWriteDigest: [UInt8]? = nil) {
        self.id = id
        self.offset = offset
        self.length = length
        self.perWriteDigest = perWriteDigest
    }

    /// The site of chunk frame `record` read at `offset` of a stream, with its digest when it is
    /// sealed with keys agreed per write.
    package init(id: ChunkID, offset: UInt64, record: [UInt8]) throws(CofferError) {
        var digest: [UInt8]?
        if StoreContent.isSealedPerWrite(record) {
            do { digest = try SHA256.hash(record) } catch {
                throw CofferError(.internalError, "hashing a chunk record failed: \(error)", underlying: error)
            }
        }
        self.init(id: id, offset: offset, length: UInt32(record.count), perWriteDigest: digest)
    }

    /// Notes `sites`, every chunk record `object` holds, in `txn` (the store-content table must
    /// exist), and that the object's sites are all noted (``StoreContent/noteWhole(_:in:)``); with
    /// `onlyReferenced`, only those of chunks this vault holds a reference to (the others, should
    /// they come back, come with a bundle of their own). A record sealed per write is noted only
    /// when it is a copy of the one this vault holds or held (``perWriteDigest``).
    ///
    /// With `unchecked`, the sites are a records object's word (``RecordsObject``): noted as
    /// unchecked (``StoreContent/isUnchecked(_:in:)``), and the object is not marked whole, so a
    /// search for chunks still reads it through.
    package static func note(
        _ sites: [BundleChunkSite],
        in object: StoreObject,
        schema: Schema,
        txn: Transaction,
        onlyReferenced: Bool = false,
        unchecked: Bool = false
    ) throws {
        guard let content = StoreContent(schema: schema), !isReplaceable(object.key) else { return }
        let number = try content.number(of: object, in: txn)
        let offloadedTo = try OffloadSettings.load(in: txn, schema: schema)?.remote
        for site in sites where try !onlyReferenced || txn.contains(schema.chunkRefs, key: site.id) {
            if let digest = site.perWriteDigest, try !content.isGenuineCopy(digest: digest, of: site.id, in: txn) {
                continue
            }
            try content.note(
                site.id,
                at: ChunkSite(object: number, offset: site.offset, length: site.length),
                offloadedTo: offloadedTo,
                checked: !unchecked,
                in: txn
            )
        }
        if !unchecked { try content.noteWhole(number, in: txn) }
    }
}

/// Whether `key` names a bundle the next push of its device writes over: an answer-only bundle
/// `<last + 1>-<last>` (docs/FORMAT.md, "Remote layout"). Its chunks also lie in the bundles that
/// first carried them, and a site in it would point into other bytes once it is replaced.
func isReplaceable(_ key: String) -> Bool {
    guard let name = key.split(separator: "/").last, name.hasSuffix(".bundle") else { return false }
    let parts = name.dropLast(".bundle".count).split(separator: "-")
    guard parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]) else { return false }
    return first > last
}

/// Where an export put its chunk records, and the shape of its stream: what noting them as sites
/// needs once the bundle is an object in a store.
package struct BundleSites: Sendable {
    /// The length of the bundle's clear header.
    package var headerLength: UInt32
    /// The stream's plaintext segment size.
    package var segmentSize: UInt32
    /// The bundle's size in bytes.
    package var size: UInt64
    /// Each chunk record's place in the stream.
    package var chunks: [BundleChunkSite]

    package init(headerLength: UInt32, segmentSize: UInt32, size: UInt64, chunks: [BundleChunkSite]) {
        self.headerLength = headerLength
        self.segmentSize = segmentSize
        self.size = size
        self.chunks = chunks
    }

    /// The object `key` in `remote` these sites describe.
    package func object(remote: String, key: String) -> StoreObject {
        StoreObject(remote: remote, key: key, size: size, headerLength: headerLength, segmentSize: segmentSize)
    }
}
