/// The sealed form Coffer's manifests share (blob manifests, snapshot records):
///
/// ```
/// header (3): version ‖ scope ‖ level [‖ key epoch (UInt64), when the scope byte's bit 7 is set]
/// [box (93), for level 3 (completeUnlessOpen): the write secret sealed to the class key (WriteKeys)]
/// sealed:     nonce (12) ‖ AES-256-GCM(manifest key of scope, epoch and level, body) ‖ tag (16)
///             associated data = label ‖ 0x00 ‖ record id ‖ header [‖ box]
/// ```
///
/// The clear header picks the key without decrypting; the associated data binds the body to its id
/// (a record moved under another id fails) and to its header (a flipped scope, level or epoch fails).
/// New records are sealed in the scope's current key epoch (``KeyRing/currentEpoch(_:)``). A
/// `completeUnlessOpen` record's manifest key is its write's (``WriteKeys``), and the epoch in its
/// header is that of the class key its box is sealed to.
package enum SealedRecord {
    /// The fixed part of the header; an epoch id may follow it.
    package static let headerSize = 3

    package static func associatedData(label: String, id: [UInt8], header: some Collection<UInt8>) -> [UInt8] {
        Array(label.utf8) + [0] + id + header
    }

    /// Seals `body` for storage under `id`.
    package static func seal(
        _ body: [UInt8],
        version: UInt8,
        label: String,
        id: [UInt8],
        scope: SyncScope,
        level: ProtectionLevel,
        keys: KeyRing,
        write: WriteKeys? = nil,
        cipher: AESGCM
    ) throws(CofferError) -> [UInt8] {
        let header: [UInt8]
        let key: SecureBytes
        if level.isSealedToClassKey {
            guard let write, write.scope == scope.keyScope else {
                throw CofferError(.internalError, "a completeUnlessOpen \(label) record needs its write's keys")
            }
            let sealed = SealedScope(scope, epoch: write.epoch)
            header = [version, sealed.code, level.code] + sealed.trailer + write.box
            key = write.manifest
        } else {
            let sealed = SealedScope(scope, epoch: keys.currentEpoch(scope.keyScope))
            header = [version, sealed.code, level.code] + sealed.trailer
            key = try keys.key(.manifest, scope.keyScope, level, epoch: sealed.epoch)
        }
        do {
            return header
                + (try cipher.seal(body, key: key, authenticating: associatedData(label: label, id: id, header: header)))
        } catch {
            throw CofferError(.internalError, "sealing \(label) failed: \(error)", underlying: error)
        }
    }

    /// A stored record's clear header, read without opening the record.
    package struct Header {
        package let version: UInt8
        package let scope: SyncScope
        package let epoch: KeyEpoch
        package let level: ProtectionLevel

        /// The header's size in the stored record, the box of a `completeUnlessOpen` record included.
        package var size: Int {
            headerSize + (epoch.isOriginal ? 0 : SealedScope.epochSize)
                + (level.isSealedToClassKey ? WriteKeys.boxSize : 0)
        }
    }

    /// The header of a stored record, without opening it.
    ///
    /// - Parameter versions: The record versions this Coffer reads.
    package static func peekHeader(
        _ stored: UnsafeRawBufferPointer,
        versions: ClosedRange<UInt8>,
        what: String
    ) throws(CofferError) -> Header {
        guard stored.count >= headerSize + AESGCM.overhead else {
            throw CofferError(.decode, "\(what) is too short (\(stored.count) bytes); the vault is damaged")
        }
        guard versions.contains(stored[0]) else {
            // A version no Coffer has written (0, or far past this one's) is a damaged byte.
            guard stored[0] == 0 || stored[0] > versions.upperBound &+ 8 else {
                throw CofferError(.unsupportedFormat, "\(what) has version \(stored[0]); upgrade Coffer")
            }
            throw CofferError(
                .decode,
                "\(what) has version \(stored[0]), which no Coffer writes: the vault is damaged; restore it from a copy (\(InterfaceName.verifyReadingData) shows what else is)"
            )
        }
        guard let sealed = SealedScope.read(code: stored[1], in: stored, fixedSize: headerSize),
            let level = ProtectionLevel(code: stored[2]),
            stored.count >= headerSize + SealedScope.trailerSize(code: stored[1])
                + (level.isSealedToClassKey ? WriteKeys.boxSize : 0) + AESGCM.overhead
        else {
            throw CofferError(.decode, "\(what)'s header is invalid; it was altered or damaged")
        }
        return Header(version: stored[0], scope: sealed.scope, epoch: sealed.epoch, level: level)
    }

    /// An opened record.
    package struct Opened {
        package let version: UInt8
        package let scope: SyncScope
        package let level: ProtectionLevel
        package var body: [UInt8]
        /// The keys of the write, for a `completeUnlessOpen` record (its chunks are sealed with them).
        package let write: WriteKeys?
    }

    /// The write-key box of a stored `completeUnlessOpen` record whose header is `header`.
    package static func box(of stored: UnsafeRawBufferPointer, header: Header) -> [UInt8] {
        Array(stored[(header.size - WriteKeys.boxSize)..<header.size])
    }

    /// Opens a record stored under `id`: its version (one of `versions`), scope, level and body.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if its level's key is not in memory (for a
    ///   `completeUnlessOpen` record, while the vault is locked), `.keyUnavailable` if its epoch is not
    ///   held, `.decode` if it was altered, damaged or moved from another id.
    package static func open(
        _ stored: UnsafeRawBufferPointer,
        versions: ClosedRange<UInt8>,
        label: String,
        id: [UInt8],
        keys: KeyRing,
        cipher: AESGCM,
        what: String
    ) throws(CofferError) -> Opened {
        let header = try peekHeader(stored, versions: versions, what: what)
        let write: WriteKeys?
        let key: SecureBytes
        if header.level.isSealedToClassKey {
            let opened = try WriteKeys.opening(
                box(of: stored, header: header),
                scope: header.scope.keyScope,
                epoch: header.epoch,
                ring: keys
            )
            write = opened
            key = opened.manifest
        } else {
            write = nil
            key = try keys.key(.manifest, header.scope.keyScope, header.level, epoch: header.epoch)
        }
        do {
            let body = try cipher.open(
                UnsafeRawBufferPointer(rebasing: stored[header.size...]),
                key: key,
                authenticating: associatedData(label: label, id: id, header: stored[0..<header.size])
            )
            return Opened(version: header.version, scope: header.scope, level: header.level, body: body, write: write)
        } catch {
            throw CofferError(
                .decode,
                "\(what) failed authentication: it was altered, damaged, or moved from another record",
                underlying: error
            )
        }
    }

    /// A stored record sealed again in its scope's current epoch (``KeyRing/currentEpoch(_:)``),
    /// with its version, scope, level and body unchanged. The body is wiped. A `completeUnlessOpen`
    /// record keeps its write's keys (its chunks are sealed with them); only the box moves to the
    /// current epoch's class key.
    ///
    /// - Throws: ``CofferError`` as ``open(_:versions:label:id:keys:cipher:what:)`` does.
    package static func reseal(
        _ stored: UnsafeRawBufferPointer,
        versions: ClosedRange<UInt8>,
        label: String,
        id: [UInt8],
        keys: KeyRing,
        cipher: AESGCM,
        what: String
    ) throws(CofferError) -> [UInt8] {
        var opened = try open(
            stored,
            versions: versions,
            label: label,
            id: id,
            keys: keys,
            cipher: cipher,
            what: what
        )
        defer { opened.body.wipe() }
        if opened.level.isSealedToClassKey {
            let header = try peekHeader(stored, versions: versions, what: what)
            let scope = header.scope.keyScope
            let target = keys.currentEpoch(scope)
            let box = try WriteKeys.resealBox(
                box(of: stored, header: header),
                scope: scope,
                from: header.epoch,
                to: target,
                ring: keys
            )
            let sealed = SealedScope(header.scope, epoch: target)
            let newHeader = [opened.version, sealed.code, opened.level.code] + sealed.trailer + box
            guard let write = opened.write else {
                throw CofferError(.internalError, "an opened completeUnlessOpen record lost its keys")
            }
            do {
                return newHeader
                    + (try cipher.seal(
                        opened.body,
                        key: write.manifest,
                        authenticating: associatedData(label: label, id: id, header: newHeader)
                    ))
            } catch {
                throw CofferError(.internalError, "sealing \(label) failed: \(error)", underlying: error)
            }
        }
        return try seal(
            opened.body,
            version: opened.version,
            label: label,
            id: id,
            scope: opened.scope,
            level: opened.level,
            keys: keys,
            cipher: cipher
        )
    }
}
