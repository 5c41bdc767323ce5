import Foundation

/// The stored form of a chunk in the `chunks` table (docs/FORMAT.md, "Chunk records"):
///
/// ```
/// header (8): version = 1 ‖ scope ‖ level ‖ encoding (0 raw, 1 zstd) ‖ plaintext length (UInt32)
///             [‖ key epoch (UInt64), when the scope byte's bit 7 is set (``SealedScope``)]
/// sealed:     nonce (12) ‖ AES-256-GCM(chunk key, stored bytes) ‖ tag (16)
///             associated data = "coffer/v1/chunk" ‖ 0x00 ‖ chunk id (32) ‖ header
/// ```
///
/// A chunk is compressed with zstd when that makes it smaller, else stored as is. Reading decompresses
/// into exactly the authenticated plaintext length, so a hostile frame cannot expand past it.
package enum ChunkRecord {
    package static let version: UInt8 = 1
    /// The fixed part of the header; an epoch id may follow it.
    package static let headerSize = 8
    /// The largest chunk a record may declare; FastCDC's maximum is far below.
    package static let maximumPlaintext = 16 << 20

    package enum Encoding: UInt8 {
        case raw = 0
        case zstd = 1
    }

    /// The work contexts sealing and opening need; one per worker.
    package final class Coder {
        package let cipher: AESGCM
        package let compressor: ZstdCompressor
        package let decompressor: ZstdDecompressor

        /// The zstd levels a writer may choose.
        package static let compressionLevels = 1...19

        package init(compressionLevel: Int = ZstdCompressor.defaultLevel) throws(CofferError) {
            do {
                cipher = try AESGCM()
                compressor = try ZstdCompressor(level: compressionLevel)
                decompressor = try ZstdDecompressor()
            } catch let error as CryptoError {
                throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
            } catch let error as CompressionError {
                throw CofferError(.param, "\(error)", underlying: error)
            } catch {
                throw CofferError(.internalError, "\(error)")
            }
        }
    }

    package static func header(keys: ChunkKeys, encoding: Encoding, length: Int) -> [UInt8] {
        let sealed = SealedScope(keys.scope, epoch: keys.epoch)
        var writer = BinaryWriter()
        writer.write(version)
        writer.write(sealed.code)
        writer.write(keys.level.code)
        writer.write(encoding.rawValue)
        writer.write(UInt32(length))
        writer.write(raw: sealed.trailer)
        return writer.bytes
    }

    /// The scope and epoch in a stored chunk's clear header, and the header's full size; `nil` if
    /// the header is too short or names no scope.
    package static func sealedScope(of stored: UnsafeRawBufferPointer) -> (scope: SealedScope, headerSize: Int)? {
        guard stored.count >= headerSize,
            let sealed = SealedScope.read(code: stored[1], in: stored, fixedSize: headerSize)
        else {
            return nil
        }
        return (sealed, headerSize + SealedScope.trailerSize(code: stored[1]))
    }

    package static func associatedData(id: ChunkID, header: [UInt8]) -> [UInt8] {
        Array("coffer/v1/chunk".utf8) + [0] + id.bytes + header
    }

    /// Seals `plaintext` (compressing it when that helps) for storage under `id`.
    package static func seal(
        _ plaintext: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        coder: Coder
    ) throws(CofferError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintext else {
            throw CofferError(.param, "a chunk of \(plaintext.count) bytes is over the \(maximumPlaintext)-byte limit")
        }
        // Data that will not compress (media, archives, random bytes) is not offered to zstd at all.
        var compressed: [UInt8]?
        if !CompressibilityEstimate.isLikelyIncompressible(plaintext, trial: coder.compressor) {
            do {
                compressed = try coder.compressor.compress(plaintext)
            } catch {
                throw CofferError(.internalError, "compressing a chunk failed: \(error)", underlying: error)
            }
        }
        if let frame = compressed, frame.count >= plaintext.count { compressed = nil }
        let header = header(keys: keys, encoding: compressed == nil ? .raw : .zstd, length: plaintext.count)
        let key = try keys.sealingKey(for: id)
        do {
            let aad = associatedData(id: id, header: header)
            if let compressed { return try coder.cipher.seal(compressed, key: key, authenticating: aad, after: header) }
            return try coder.cipher.seal(plaintext, key: key, authenticating: aad, after: header)
        } catch {
            throw CofferError(.internalError, "sealing a chunk failed: \(error)", underlying: error)
        }
    }

    /// Checks the clear header of a chunk record arriving from elsewhere (a bundle) before it is
    /// stored: the right version, `scope`, a known level and encoding, a length within bounds. Its
    /// contents are authenticated when it is read.
    ///
    /// - Throws: ``CofferError`` `.decode` naming what is wrong.
    package static func checkHeader(_ stored: [UInt8], scope: SyncScope) throws(CofferError) {
        let sealed = stored.withUnsafeBytes { sealedScope(of: $0) }
        guard let sealed, sealed.scope.scope == scope, stored.count >= sealed.headerSize + AESGCM.overhead,
            stored[0] == version, ProtectionLevel(code: stored[2]) != nil, Encoding(rawValue: stored[3]) != nil,
            stored[4..<8].reduce(0, { $0 << 8 | Int($1) }) <= maximumPlaintext
        else {
            throw CofferError(
                .decode,
                "a chunk in the bundle has an invalid header (not a \(scope.rawValue) chunk of this format)"
            )
        }
    }

    /// A stored chunk sealed again in the epoch of `keys` (``ChunkKeys/epoch``): opened with its own
    /// epoch's key for its id and sealed with the new one, its stored bytes (compressed or not) and
    /// the rest of its header unchanged. The opened bytes are wiped.
    ///
    /// - Throws: ``CofferError`` `.decode` if the record is of another namespace than `keys`, or does
    ///   not authenticate; `.keyUnavailable` if its epoch is not held.
    package static func reseal(
        _ stored: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        cipher: AESGCM
    ) throws(CofferError) -> [UInt8] {
        guard stored.count >= headerSize + AESGCM.overhead, stored[0] == version,
            let (sealed, fullHeaderSize) = sealedScope(of: stored), stored.count >= fullHeaderSize + AESGCM.overhead,
            sealed.scope == keys.scope, stored[2] == keys.level.code
        else {
            throw CofferError(.decode, "a chunk record's header is invalid; the record was altered or damaged")
        }
        let oldHeader = Array(stored[0..<fullHeaderSize])
        let target = SealedScope(keys.scope, epoch: keys.epoch)
        var header = Array(stored[0..<headerSize])
        header[1] = target.code
        header += target.trailer
        do {
            var inner = try cipher.open(
                UnsafeRawBufferPointer(rebasing: stored[fullHeaderSize...]),
                key: try keys.sealingKey(for: id, epoch: sealed.epoch),
                authenticating: associatedData(id: id, header: oldHeader)
            )
            defer { inner.wipe() }
            return header
                + (try cipher.seal(
                    inner,
                    key: try keys.sealingKey(for: id),
                    authenticating: associatedData(id: id, header: header)
                ))
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(
                .decode,
                "a chunk failed authentication: it was altered, damaged, or moved from another id",
                underlying: error
            )
        }
    }

    /// Whether a stored chunk is intact: its header is sound and it authenticates under the key for
    /// `id` (AES-GCM's tag covers the id, the header and every stored byte), without decompressing
    /// it. A chunk found stored when the same content is written again is checked so: content that
    /// would otherwise share a damaged record is stored anew instead.
    ///
    /// - Returns: `true` when it authenticates, `false` when it is damaged or altered, `nil` when
    ///   that cannot be told here (a key epoch not held, a record version this Coffer does not know).
    package static func isIntact(
        _ stored: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        cipher: AESGCM
    ) -> Bool? {
        do {
            var opened = try decrypt(stored, id: id, keys: keys, cipher: cipher).opened
            opened.wipe()
            return true
        } catch  where error.code == .decode {
            return false
        } catch {
            return nil
        }
    }

    /// Checks a stored chunk's header and decrypts it: the stored bytes (compressed or not), their
    /// encoding and the plaintext length the header declares.
    private static func decrypt(
        _ stored: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        cipher: AESGCM
    ) throws(CofferError) -> (opened: [UInt8], encoding: Encoding, length: Int) {
        guard stored.count >= headerSize + AESGCM.overhead else {
            throw CofferError(.decode, "a chunk record is too short (\(stored.count) bytes); the vault is damaged")
        }
        guard stored[0] == version else {
            // A version no Coffer has written (0, or far past this one's) is a damaged byte.
            guard stored[0] == 0 || stored[0] > version &+ 8 else {
                throw CofferError(.unsupportedFormat, "a chunk record has version \(stored[0]); upgrade Coffer")
            }
            throw CofferError(
                .decode,
                "a chunk record has version \(stored[0]), which no Coffer writes: the vault is damaged; restore it from a copy (\(InterfaceName.verifyReadingData) shows what else is)"
            )
        }
        guard let (sealed, fullHeaderSize) = sealedScope(of: stored), stored.count >= fullHeaderSize + AESGCM.overhead
        else {
            throw CofferError(.decode, "a chunk record's header is invalid; the record was altered or damaged")
        }
        let header = Array(stored[0..<fullHeaderSize])
        let length = Int(header[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard sealed.scope == keys.scope, header[2] == keys.level.code, let encoding = Encoding(rawValue: header[3]),
            length <= maximumPlaintext
        else {
            throw CofferError(.decode, "a chunk record's header is invalid; the record was altered or damaged")
        }
        let key = try keys.sealingKey(for: id, epoch: sealed.epoch)
        let opened: [UInt8]
        do {
            opened = try cipher.open(
                UnsafeRawBufferPointer(rebasing: stored[fullHeaderSize...]),
                key: key,
                authenticating: associatedData(id: id, header: header)
            )
        } catch {
            throw CofferError(
                .decode,
                "a chunk failed authentication: it was altered, damaged, or moved from another id",
                underlying: error
            )
        }
        return (opened, encoding, length)
    }

    /// Checks that a stored chunk opens and that its plaintext has the id it is stored under (``open(_:id:keys:coder:)``),
    /// wiping the plaintext.
    package static func check(
        _ stored: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        coder: Coder
    ) throws(CofferError) {
        var plaintext = try open(stored, id: id, keys: keys, coder: coder)
        plaintext.wipe()
    }

    /// Opens a stored chunk and checks that its plaintext has the id it is stored under.
    ///
    /// - Throws: ``CofferError`` `.decode` if the record is altered, moved from another id, sealed in
    ///   another scope, or decompresses to anything but its declared length.
    package static func open(
        _ stored: UnsafeRawBufferPointer,
        id: ChunkID,
        keys: ChunkKeys,
        coder: Coder
    ) throws(CofferError) -> [UInt8] {
        let (opened, encoding, length) = try decrypt(stored, id: id, keys: keys, cipher: coder.cipher)
        let plaintext: [UInt8]
        switch encoding {
        case .raw:
            plaintext = opened
        case .zstd:
            do {
                plaintext = try coder.decompressor.decompress(opened, limit: length)
            } catch {
                throw CofferError(
                    .decode,
                    "a chunk does not decompress to its declared size: \(error)",
                    underlying: error
                )
            }
        }
        guard plaintext.count == length else {
            throw CofferError(.decode, "a chunk holds \(plaintext.count) bytes but declares \(length)")
        }
        let recomputed = try keys.id(of: plaintext)
        guard recomputed.withUnsafeBytes({ mine in id.withUnsafeBytes { ConstantTime.equals(mine, $0) } }) else {
            throw CofferError(.decode, "a chunk's content does not match its id")
        }
        return plaintext
    }
}
