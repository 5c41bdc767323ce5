package import Foundation

/// The clear header of a sync bundle (docs/FORMAT.md, "Bundles"). Every segment of the bundle's
/// stream authenticates the whole header, so changing any field makes the first segment fail.
///
/// ```
/// magic "COFFERBN" (8) ‖ format version (UInt16) ‖ sync group id (16) ‖ source device id (16)
///   ‖ first sequence (UInt64) ‖ last sequence (UInt64) ‖ salt (32) ‖ nonce prefix (7)
///   ‖ segment size (UInt32) ‖ join block length (UInt32) ‖ join block
///   [version 2: ‖ key epoch (UInt64) ‖ membership log length (UInt32) ‖ membership log]
/// ```
///
/// Version 2 names the key epoch whose group key seals the stream, and carries the exporter's
/// membership log in the clear (every entry is signed), so a device without the epoch's key learns
/// from it why (it was revoked, or must first open the key sealed to it there).
package struct BundleHeader: Equatable, Sendable {
    package static let magic = Array("COFFERBN".utf8)
    /// The version this Coffer writes; it reads 1 as well.
    package static let version: UInt16 = 2
    package static let saltSize = 32
    package static let noncePrefixSize = 7
    /// Segment sizes a reader accepts (docs/FORMAT.md).
    package static let segmentSizes = (64 << 10)...(1 << 20)
    package static let defaultSegmentSize = 256 << 10
    /// The fixed part, before the join block.
    package static let fixedSize = 8 + 2 + 16 + 16 + 8 + 8 + saltSize + noncePrefixSize + 4 + 4
    /// Where the salt lies in the fixed part (after the magic, version, group and device ids and the
    /// sequence range).
    private static let saltOffset = 8 + 2 + 16 + 16 + 8 + 8

    /// What the fixed part of a bundle whose first bytes (at least ``fixedSize``) are `prefix` says, or
    /// `nil` when they are not a bundle's: read without the rest of the header, to tell whose object it
    /// is. The salt, drawn afresh for every bundle written, tells apart two bundles of the same name
    /// (two copies of one device pushing the same changes' range). Nothing here is authenticated; an
    /// import checks the whole bundle.
    package static func fixedFields(
        ofPrefix prefix: [UInt8]
    ) -> (deviceID: UUID, firstSequence: UInt64, lastSequence: UInt64, salt: [UInt8])? {
        guard prefix.count >= fixedSize, prefix.starts(with: magic) else { return nil }
        var reader = BinaryReader(Array(prefix[(8 + 2 + 16)..<saltOffset]), what: "a bundle's header")
        guard let device = try? UUID(storedBytes: try reader.readBytes(16), what: "a bundle's device id"),
            let first = try? reader.readUInt64(), let last = try? reader.readUInt64()
        else { return nil }
        return (device, first, last, Array(prefix[saltOffset..<(saltOffset + saltSize)]))
    }

    package var syncGroupID: UUID
    package var deviceID: UUID
    package var firstSequence: UInt64
    package var lastSequence: UInt64
    package var salt: [UInt8]
    package var noncePrefix: [UInt8]
    package var segmentSize: Int
    /// What a new machine needs to join the group (the sync root wrapped under the passphrase's key);
    /// empty when the bundle carries none.
    package var joinBlock: [UInt8]
    /// The format version (1 for a bundle from a Coffer before membership logs).
    package var version: UInt16 = BundleHeader.version
    /// The key epoch that seals the stream.
    package var epoch: KeyEpoch = .original
    /// The exporter's membership log, encoded (``GroupLog/encoded``); empty in a version-1 bundle.
    package var log: [UInt8] = []

    package init(
        syncGroupID: UUID,
        deviceID: UUID,
        firstSequence: UInt64,
        lastSequence: UInt64,
        salt: [UInt8],
        noncePrefix: [UInt8],
        segmentSize: Int,
        joinBlock: [UInt8]
    ) {
        self.syncGroupID = syncGroupID
        self.deviceID = deviceID
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.salt = salt
        self.noncePrefix = noncePrefix
        self.segmentSize = segmentSize
        self.joinBlock = joinBlock
    }

    /// A header with fresh random salt and nonce prefix, or with `seeds` (those of an export of the
    /// very same vault state that was interrupted, so the stream comes out byte for byte the same:
    /// never for other contents, which would reuse nonces).
    package static func fresh(
        syncGroupID: UUID,
        deviceID: UUID,
        firstSequence: UInt64,
        lastSequence: UInt64,
        segmentSize: Int = defaultSegmentSize,
        joinBlock: [UInt8] = [],
        epoch: KeyEpoch = .original,
        log: [UInt8] = [],
        seeds: (salt: [UInt8], noncePrefix: [UInt8])? = nil
    ) -> BundleHeader {
        var header = BundleHeader(
            syncGroupID: syncGroupID,
            deviceID: deviceID,
            firstSequence: firstSequence,
            lastSequence: lastSequence,
            salt: seeds?.salt ?? SecureRandom.bytes(count: saltSize),
            noncePrefix: seeds?.noncePrefix ?? SecureRandom.bytes(count: noncePrefixSize),
            segmentSize: segmentSize,
            joinBlock: joinBlock
        )
        header.epoch = epoch
        header.log = log
        return header
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(raw: Self.magic)
        writer.write(version)
        writer.write(raw: syncGroupID.bytes)
        writer.write(raw: deviceID.bytes)
        writer.write(firstSequence)
        writer.write(lastSequence)
        writer.write(raw: salt)
        writer.write(raw: noncePrefix)
        writer.write(UInt32(segmentSize))
        writer.write(UInt32(joinBlock.count))
        writer.write(raw: joinBlock)
        if version >= 2 {
            writer.write(epoch.id)
            writer.write(UInt32(log.count))
            writer.write(raw: log)
        }
        return writer.bytes
    }

    /// The longest membership log a header may carry.
    package static let maximumLogSize = 16 << 20

    /// Reads a header from the start of `source`.
    ///
    /// - Throws: ``CofferError`` `.param` for a file that is not a bundle, `.unsupportedFormat` for a
    ///   newer version, `.decode` for a truncated or malformed header.
    package static func read(from source: inout some ByteSource) throws(CofferError) -> (BundleHeader, [UInt8]) {
        var fixed = try source.read(upTo: fixedSize)
        guard fixed.count >= magic.count, fixed.starts(with: magic) else {
            throw CofferError(.param, "this file is not a Coffer bundle (its first bytes are not \"COFFERBN\")")
        }
        guard fixed.count == fixedSize else {
            throw CofferError(.decode, "the bundle is truncated: it ends inside its header")
        }
        var reader = BinaryReader(Array(fixed.dropFirst(8)), what: "the bundle header")
        let version = try reader.readUInt16()
        guard version == 1 || version == Self.version else {
            throw CofferError(
                .unsupportedFormat,
                "the bundle has format version \(version); this Coffer reads versions 1 and \(Self.version): upgrade Coffer"
            )
        }
        let group = try UUID(storedBytes: try reader.readBytes(16), what: "the bundle's sync group id")
        let device = try UUID(storedBytes: try reader.readBytes(16), what: "the bundle's device id")
        let first = try reader.readUInt64()
        let last = try reader.readUInt64()
        let salt = try reader.readBytes(saltSize)
        let prefix = try reader.readBytes(noncePrefixSize)
        let segmentSize = Int(try reader.readUInt32())
        let joinLength = Int(try reader.readUInt32())
        guard segmentSizes.contains(segmentSize), joinLength <= 1 << 16, first >= 1, first <= last &+ 1
        else {
            throw CofferError(.decode, "the bundle header is malformed (segment size, join block or sequence range)")
        }
        let join = try readExactly(joinLength, from: &source)
        fixed += join
        var header = BundleHeader(
            syncGroupID: group,
            deviceID: device,
            firstSequence: first,
            lastSequence: last,
            salt: salt,
            noncePrefix: prefix,
            segmentSize: segmentSize,
            joinBlock: join
        )
        header.version = version
        if version >= 2 {
            let epochAndLength = try readExactly(12, from: &source)
            fixed += epochAndLength
            header.epoch = KeyEpoch(id: epochAndLength[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            let logLength = Int(epochAndLength[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard logLength <= maximumLogSize else {
                throw CofferError(.decode, "the bundle header claims a membership log of \(logLength) bytes")
            }
            header.log = try readExactly(logLength, from: &source)
            fixed += header.log
        }
        return (header, fixed)
    }

    package static func readExactly(_ count: Int, from source: inout some ByteSource) throws(CofferError) -> [UInt8] {
        let bytes = try source.read(upTo: count)
        guard bytes.count == count else {
            throw CofferError(.decode, "the bundle is truncated: it ends inside its header")
        }
        return bytes
    }

    /// The key that seals this bundle's stream: HKDF-SHA256(group key of the header's epoch, salt,
    /// "coffer/v1/bundle" ‖ group id).
    package func streamKey(syncRoot: SecureBytes) throws(CofferError) -> SecureBytes {
        do {
            return try HKDF.deriveKey(
                from: syncRoot,
                salt: salt,
                info: Array("coffer/v1/bundle".utf8) + syncGroupID.bytes
            )
        } catch {
            throw CofferError(.internalError, "deriving the bundle key failed: \(error)", underlying: error)
        }
    }
}
