/// One framed record inside a bundle's stream (docs/FORMAT.md, "Bundle records"):
///
/// ```
/// frame   = type (1) ‖ body length (UInt32) ‖ body
/// chunk   (type 1): chunk id (32) ‖ the chunk record as stored
/// record  (type 2): kind (1) ‖ record id (32, or 16 for a snapshot) ‖ stamp (UInt64) ‖ device id (16)
///                   ‖ state (1 live, 0 deleted) ‖ the record as stored (live only)
/// end     (type 3): chunk frames (UInt64) ‖ record frames (UInt64)
/// signature (type 6, version-2 bundles, just before the end frame): Ed25519 (64) by the exporting
///           device over "coffer/v2/bundle-signature" ‖ 0 ‖ SHA-256(header ‖ every frame before it)
/// site    (type 7, records objects only): chunk id (32) ‖ record offset (UInt64) ‖ record length (UInt32)
/// binding (type 8, records objects only, first): the bundle's salt (32) ‖ SHA-256 of its header (32)
///           ‖ its size (UInt64)
/// ```
///
/// Records and chunks travel exactly as stored, still sealed under sync-root keys; the frame adds only
/// what import needs to place them and to decide which version wins. The end frame closes the stream:
/// a reader refuses a stream without one, or with anything after it, or whose counts disagree.
package enum BundleFrame: Equatable {
    /// A chunk record, copied as stored.
    case chunk(id: ChunkID, record: [UInt8])
    /// A syncable record and its version; `stored` is empty for a deletion (a tombstone).
    case record(SyncRecordKind, id: [UInt8], entry: VersionEntry, stored: [UInt8])
    /// The end of the stream, with how many frames of each type came before it.
    case end(chunks: UInt64, records: UInt64)
    /// Chunks the exporting device lacks for records it holds back (``HeldRecords``): whoever has
    /// them sends them in its next bundle. Written only when there are some, after the records.
    case want(chunkIDs: [ChunkID])
    /// Devices whose changes the exporting device has a gap in (a bundle of theirs was lost): each
    /// device named resends its changes after the sequence given in its next bundle.
    case resend([ResendRequest])
    /// The exporting device's signature of everything before it (version-2 bundles).
    case signature([UInt8])
    /// Where a chunk record lies in the bundle a records object describes (``RecordsObject``), in
    /// place of the record.
    case site(id: ChunkID, offset: UInt64, length: UInt32)
    /// The bundle a records object describes (``RecordsObject``): its first frame.
    case binding(RecordsBinding)

    package static let headerSize = 5

    /// The message a bundle's signature is over, for the digest of its header and frames.
    package static func signedMessage(digest: [UInt8]) -> [UInt8] {
        Array("coffer/v2/bundle-signature".utf8) + [0] + digest
    }

    /// The largest body a reader accepts: a chunk of the largest declared size, sealed, with its id.
    package static let maximumBodySize = (16 << 20) + 1024

    private enum FrameType: UInt8 {
        case chunk = 1
        case record = 2
        case end = 3
        case want = 4
        case resend = 5
        case signature = 6
        case site = 7
        case binding = 8
    }

    /// The frame as written: header and body.
    package var encoded: [UInt8] {
        var body = BinaryWriter()
        let type: FrameType
        switch self {
        case .chunk(let id, let record):
            type = .chunk
            body.write(id)
            body.write(raw: record)
        case .record(let kind, let id, let entry, let stored):
            type = .record
            body.write(kind.rawValue)
            body.write(raw: id)
            body.write(raw: entry.encoded)
            body.write(raw: stored)
        case .want(let ids):
            type = .want
            body.write(UInt32(ids.count))
            for id in ids { body.write(id) }
        case .resend(let requests):
            type = .resend
            body.write(UInt32(requests.count))
            for request in requests {
                body.write(raw: request.device)
                body.write(request.after)
            }
        case .end(let chunks, let records):
            type = .end
            body.write(chunks)
            body.write(records)
        case .signature(let signature):
            type = .signature
            body.write(raw: signature)
        case .site(let id, let offset, let length):
            type = .site
            body.write(id)
            body.write(offset)
            body.write(length)
        case .binding(let binding):
            type = .binding
            body.write(raw: binding.bundleSalt)
            body.write(raw: binding.headerDigest)
            body.write(binding.bundleSize)
        }
        var frame = BinaryWriter()
        frame.write(type.rawValue)
        frame.write(UInt32(body.bytes.count))
        frame.write(raw: body.bytes)
        return frame.bytes
    }

    /// Decodes one frame's body.
    ///
    /// - Throws: ``CofferError`` `.decode` naming what is wrong.
    package static func decode(type code: UInt8, body: [UInt8]) throws(CofferError) -> BundleFrame {
        guard let type = FrameType(rawValue: code) else {
            throw CofferError(
                .decode,
                "the bundle holds a record of unknown type \(code); it is damaged or newer than this Coffer"
            )
        }
        var reader = BinaryReader(body, what: "a bundle record")
        switch type {
        case .chunk:
            let id = try reader.readChunkID()
            return .chunk(id: id, record: Array(body.dropFirst(ChunkID.size)))
        case .record:
            let code = try reader.readUInt8()
            guard let kind = SyncRecordKind(rawValue: code) else {
                throw CofferError(.decode, "the bundle holds a record of unknown kind \(code)")
            }
            let id = try reader.readBytes(kind.idLength)
            let entry = try VersionEntry(decoding: try reader.readBytes(VersionEntry.encodedSize))
            let stored = Array(body.dropFirst(1 + kind.idLength + VersionEntry.encodedSize))
            guard entry.isDeleted == stored.isEmpty else {
                throw CofferError(
                    .decode,
                    "a \(kind.noun) in the bundle is \(entry.isDeleted ? "deleted but carries a record" : "live but carries no record")"
                )
            }
            return .record(kind, id: id, entry: entry, stored: stored)
        case .want:
            let count = Int(try reader.readUInt32())
            guard count * 32 == body.count - 4 else {
                throw CofferError(.decode, "a bundle's list of wanted chunks has the wrong length")
            }
            var ids: [ChunkID] = []
            for _ in 0..<count { ids.append(try reader.readChunkID()) }
            return .want(chunkIDs: ids)
        case .resend:
            let count = Int(try reader.readUInt32())
            guard count * 24 == body.count - 4 else {
                throw CofferError(.decode, "a bundle's list of resend requests has the wrong length")
            }
            var requests: [ResendRequest] = []
            for _ in 0..<count {
                requests.append(ResendRequest(device: try reader.readBytes(16), after: try reader.readUInt64()))
            }
            return .resend(requests)
        case .end:
            let chunks = try reader.readUInt64()
            let records = try reader.readUInt64()
            try reader.finish()
            return .end(chunks: chunks, records: records)
        case .signature:
            let signature = try reader.readBytes(64)
            try reader.finish()
            return .signature(signature)
        case .site:
            let id = try reader.readChunkID()
            let offset = try reader.readUInt64()
            let length = try reader.readUInt32()
            try reader.finish()
            return .site(id: id, offset: offset, length: length)
        case .binding:
            let salt = try reader.readBytes(32)
            let digest = try reader.readBytes(32)
            let size = try reader.readUInt64()
            try reader.finish()
            return .binding(RecordsBinding(bundleSalt: salt, headerDigest: digest, bundleSize: size))
        }
    }
}

/// Reads the frames of a bundle's (already authenticated) plaintext stream, one at a time.
package struct BundleFrameReader<Source: ByteSource> {
    private var source: Source
    private var chunks: UInt64 = 0
    private var records: UInt64 = 0
    private var ended = false
    private let signer: [UInt8]?
    /// Signing keys the device named once had on a branch without effect (a copy's rekey that lost):
    /// a signature under one of them is refused as such, not as a forgery.
    private let displacedSigners: [[UInt8]]
    private var digest: BackgroundDigest?
    private var signed = false
    /// Plaintext bytes of the stream read so far.
    private var consumed: UInt64 = 0
    /// Where the last frame's body began in the stream's plaintext: for a chunk frame, its record
    /// begins ``ChunkID/size`` bytes later (its site, ``StoreContent``).
    package private(set) var lastBodyOffset: UInt64 = 0

    /// Reads frames from `source`. With `signer` (a version-2 bundle: the exporting device's Ed25519
    /// public key), the stream must end with that device's signature frame over `headerBytes` and
    /// every frame before it, or it is refused.
    package init(
        source: Source,
        signer: [UInt8]? = nil,
        displacedSigners: [[UInt8]] = [],
        headerBytes: [UInt8] = []
    ) throws(CofferError) {
        self.source = source
        self.signer = signer
        self.displacedSigners = displacedSigners
        if signer != nil {
            do {
                let digest = try BackgroundDigest()
                digest.update(headerBytes)
                self.digest = digest
            } catch {
                throw CofferError(.internalError, "hashing the bundle failed: \(error)", underlying: error)
            }
        }
    }

    /// The next chunk or record frame, or `nil` after the end frame (once its counts are checked and
    /// nothing follows it).
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed frame, a stream that stops before its end
    ///   frame, or bytes after it.
    package mutating func next() throws(CofferError) -> BundleFrame? {
        guard !ended else { return nil }
        let header = try source.read(upTo: BundleFrame.headerSize)
        guard header.count == BundleFrame.headerSize else {
            throw CofferError(.decode, "the bundle's records stop before their end marker; the bundle is incomplete")
        }
        let length = Int(header[1...4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length <= BundleFrame.maximumBodySize else {
            throw CofferError(.decode, "a bundle record declares \(length) bytes, more than any record can hold")
        }
        let body = try source.read(upTo: length)
        guard body.count == length else {
            throw CofferError(.decode, "the bundle's records stop inside a record; the bundle is incomplete")
        }
        lastBodyOffset = consumed + UInt64(BundleFrame.headerSize)
        consumed += UInt64(BundleFrame.headerSize + length)
        let frame = try BundleFrame.decode(type: header[0], body: body)
        if signed, case .end = frame {
        } else if signed {
            throw CofferError(.decode, "the bundle holds records after its signature; it was altered")
        }
        if case .signature = frame {
        } else {
            digest?.update(header)
            digest?.update(body)
        }
        switch frame {
        case .chunk: chunks += 1
        case .record: records += 1
        case .want, .resend, .site, .binding: break
        case .signature(let signature):
            try verify(signature)
            signed = true
            return try next()
        case .end(let declaredChunks, let declaredRecords):
            guard signer == nil || signed else {
                throw CofferError(
                    .notTrusted,
                    "the bundle is not signed by the device it names; it was altered or forged, and was refused"
                )
            }
            guard declaredChunks == chunks, declaredRecords == records else {
                throw CofferError(
                    .decode,
                    "the bundle declares \(declaredChunks) chunks and \(declaredRecords) records but holds \(chunks) and \(records)"
                )
            }
            guard try source.read(upTo: 1).isEmpty else {
                throw CofferError(.decode, "the bundle holds data after its end marker")
            }
            ended = true
            return nil
        }
        return frame
    }
}

extension BundleFrameReader {
    private mutating func verify(_ signature: [UInt8]) throws(CofferError) {
        guard let signer, let digest, !signed else {
            throw CofferError(
                .decode,
                "the bundle holds a signature it should not (a version-1 bundle, or a second one)"
            )
        }
        let valid: Bool
        var byDisplacedKey = false
        do {
            let message = BundleFrame.signedMessage(digest: try digest.finalize())
            valid = try Ed25519PrivateKey.isValidSignature(signature, of: message, by: signer)
            if !valid {
                for key in displacedSigners
                where try Ed25519PrivateKey.isValidSignature(signature, of: message, by: key) {
                    byDisplacedKey = true
                }
            }
        } catch {
            throw CofferError(.internalError, "checking the bundle's signature failed: \(error)", underlying: error)
        }
        guard !byDisplacedKey else {
            throw CofferError(
                .notTrusted,
                "the bundle was made by a copy of the device it names whose replacement of the device's keys has no effect: another copy of it replaced them first, and the group heard of that one first (its files leaked or were copied). It was refused; nothing changed. If the device's owner rekeyed it and it still syncs, nothing needs doing: this was a leaked copy, and it is shut out. If the owner's own rekey is the one without effect (its import says so), the copy holds the device: revoke it (\(InterfaceName.revokeDevice)) and approve a new vault on it"
            )
        }
        guard valid else {
            throw CofferError(
                .notTrusted,
                "the bundle's signature does not verify with the key of the device it names: it was altered or forged by another device, and was refused; nothing changed"
            )
        }
    }
}

/// A request, carried in a bundle, that `device` resend its changes after sequence `after`: the
/// exporting vault has a gap in them (a bundle of that device's was lost, or not imported yet).
package struct ResendRequest: Equatable, Sendable {
    package let device: [UInt8]
    package let after: UInt64

    package init(device: [UInt8], after: UInt64) {
        self.device = device
        self.after = after
    }
}
