import Foundation

/// Reads offloaded chunks back from the object store they lie in (``OffloadedChunkSource``): for a
/// chunk's site it fetches the stream segments that hold the chunk frame (one ranged GET), opens them
/// under the bundle's key with its header as associated data, checks the frame's chunk id, and
/// returns the record. Fetched records go to the local cache (``OffloadCache``).
///
/// The clear header of each object read from is fetched once and kept (a few kilobytes: the header
/// carries the membership log), with the stream key derived from it.
package final class StoreChunkReader: OffloadedChunkSource {
    package let remote: String
    private let client: S3Client
    private let keys: @Sendable () throws(CofferError) -> KeyRing
    package let cache: OffloadCache
    private let heads = Locked<[String: StreamHead]>([:])
    /// Objects whose header held but whose stream did not (a segment, or a chunk not where noted):
    /// what the rest holds may be intact, so the damage is remembered (``noteDamaged(_:)``).
    private let damagedPastHeader = Locked<Set<String>>([])
    /// Opened segments, shared by the chunks in them and read ahead for a reader going in order.
    private let segmentCache = SegmentCache(budget: 64 << 20)
    /// Object headers kept at most (each a few kilobytes, at most the log's cap).
    private static let keptHeads = 64

    /// A reader of `remote` for a vault whose keys `keys` gives, keeping what it fetches in `cache`.
    package init(remote: S3Remote, keys: @escaping @Sendable () throws(CofferError) -> KeyRing, cache: OffloadCache) {
        self.remote = remote.identity
        client = S3Client(remote)
        self.keys = keys
        self.cache = cache
    }

    /// What opening segments of one object needs: its header as read, the nonce prefix, the key.
    private struct StreamHead: @unchecked Sendable {
        let bytes: [UInt8]
        let noncePrefix: [UInt8]
        let key: SecureBytes
    }

    package func record(of id: ChunkID, at site: ChunkSite, in object: StoreObject) throws(CofferError) -> [UInt8] {
        do {
            return try fetch(id, at: site, in: object)
        } catch  where error.code == .itemNotFound {
            throw CofferError(
                .itemNotFound,
                "a chunk this vault offloaded lay in \(object.key) at \(remote), which is gone (a compaction replaced it, or it was deleted): \(run: .pull), which finds where else the store holds it, then try again",
                underlying: error
            )
        } catch  where error.code != .decode && error.code != .internalError {
            throw CofferError(
                error.code,
                "a chunk this vault offloaded could not be read from the object store \(remote): \(error.message). Everything held locally stays readable; try again when the store can be reached",
                underlying: error
            )
        }
    }

    private func fetch(_ id: ChunkID, at site: ChunkSite, in object: StoreObject) throws(CofferError) -> [UInt8] {
        let head = try streamHead(of: object)
        let segmentSize = UInt64(object.segmentSize)
        let sealedSize = segmentSize + UInt64(AESGCM.tagByteCount)
        let headerLength = UInt64(object.headerLength)
        guard object.size > headerLength else { throw damaged(object, "it holds no stream", pastHeader: true) }
        let segments = (object.size - headerLength + sealedSize - 1) / sealedSize
        // The frame body: the chunk id, then the record.
        let start = site.offset - UInt64(ChunkID.size)
        let end = site.offset + UInt64(site.length)
        let first = start / segmentSize
        let last = (end - 1) / segmentSize
        guard site.offset >= UInt64(ChunkID.size), last < segments else {
            throw damaged(object, "a chunk's site lies outside it", pastHeader: true)
        }
        let opened = try segmentCache.segments(first, last, of: Self.identity(of: object), count: segments) {
            [self] (range) throws(CofferError) -> [[UInt8]] in
            try open(range, of: object, head: head, segments: segments)
        }
        let base = first * segmentSize
        let frameID = Self.gather(start..<site.offset, from: opened, startingAt: base)
        let record = Self.gather(site.offset..<end, from: opened, startingAt: base)
        guard frameID == id.bytes, record.count == Int(site.length) else {
            throw damaged(object, "the chunk is not where this vault noted it", pastHeader: true)
        }
        return record
    }

    /// The stream bytes `range` from consecutive segments' plaintexts, the first starting at stream
    /// offset `base` (copied a run at a time: a chunk is a fraction of the segments it lies in).
    private static func gather(_ range: Range<UInt64>, from segments: [[UInt8]], startingAt base: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(range.count)
        var position = base
        for segment in segments {
            let end = position + UInt64(segment.count)
            let from = max(range.lowerBound, position)
            let to = min(range.upperBound, end)
            if from < to { bytes.append(contentsOf: segment[Int(from - position)..<Int(to - position)]) }
            position = end
        }
        return bytes
    }

    /// Fetches segments `range` of `object` with one ranged GET and opens each.
    private func open(
        _ range: ClosedRange<UInt64>,
        of object: StoreObject,
        head: StreamHead,
        segments: UInt64
    ) throws(CofferError) -> [[UInt8]] {
        let sealedSize = UInt64(object.segmentSize) + UInt64(AESGCM.tagByteCount)
        let headerLength = UInt64(object.headerLength)
        let from = headerLength + range.lowerBound * sealedSize
        let to = min(object.size, headerLength + (range.upperBound + 1) * sealedSize)
        let sealed = try client.getRange(object.key, Int64(from)..<Int64(to), etag: nil)
        guard sealed.count == Int(to - from) else {
            throw CofferError(
                .io,
                "the store returned \(sealed.count) bytes of a range of \(to - from) of \(object.key)"
            )
        }
        let cipher: AESGCM
        do { cipher = try AESGCM() } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
        var opened: [[UInt8]] = []
        var position = 0
        for index in range {
            let length = min(Int(sealedSize), sealed.count - position)
            let nonce = BundleStream.nonce(
                prefix: head.noncePrefix,
                counter: UInt32(index),
                last: index == segments - 1
            )
            do {
                opened.append(
                    try cipher.open(
                        nonce + sealed[position..<(position + length)],
                        key: head.key,
                        authenticating: head.bytes
                    )
                )
            } catch {
                throw damaged(object, "its segment \(index) does not authenticate", pastHeader: true)
            }
            position += length
        }
        return opened
    }

    private func damaged(_ object: StoreObject, _ why: String, pastHeader: Bool = false) -> CofferError {
        if pastHeader { damagedPastHeader.withLock { _ = $0.insert(Self.identity(of: object)) } }
        return CofferError(
            .decode,
            "a chunk this vault offloaded cannot be read from \(object.key) at \(remote): \(why), and no other object this vault knows of gives it. \(run: .pull) looks for it in the store's other objects; \(InterfaceName.verifyReadingData) tells which content is affected"
        )
    }

    /// What tells one object from another in the caches: its key, and the size and header length
    /// noted for it (an object written again under the same key is another one).
    private static func identity(of object: StoreObject) -> String {
        "\(object.key) \(object.size) \(object.headerLength)"
    }

    /// The header of `object`, fetched once.
    private func streamHead(of object: StoreObject) throws(CofferError) -> StreamHead {
        let identity = Self.identity(of: object)
        if let head = heads.withLock({ $0[identity] }) { return head }
        let bytes = try client.getRange(object.key, 0..<Int64(object.headerLength), etag: nil)
        var source = DataSource(bytes)
        let header: BundleHeader
        let headerBytes: [UInt8]
        do {
            (header, headerBytes) = try BundleHeader.read(from: &source)
        } catch  where error.code == .param || error.code == .decode {
            throw damaged(object, "it no longer starts with the bundle header this vault noted (it was overwritten)")
        }
        guard headerBytes.count == Int(object.headerLength), header.segmentSize == Int(object.segmentSize) else {
            throw damaged(object, "its header is not the one this vault noted (the object was replaced)")
        }
        let root = try keys().root(.sync, epoch: header.epoch)
        let head = StreamHead(
            bytes: headerBytes,
            noncePrefix: header.noncePrefix,
            key: try header.streamKey(syncRoot: root)
        )
        heads.withLock {
            if $0.count >= Self.keptHeads { $0.removeAll() }
            $0[identity] = head
        }
        return head
    }

    package func offerToCache(_ id: ChunkID, record: [UInt8]) { cache.offer(id, record: record) }

    package func noteUse(of id: ChunkID) { cache.noteUse(of: id) }

    package func noteDamaged(_ object: StoreObject) {
        let pastHeader = damagedPastHeader.withLock { $0.contains(Self.identity(of: object)) }
        cache.noteDamaged(object, remembering: pastHeader)
    }

    package func finish() { cache.finish() }
}
