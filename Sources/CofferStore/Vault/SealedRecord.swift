/// The sealed form Coffer's manifests share (blob manifests, snapshot records):
///
/// ```
/// header (3): version ‖ scope ‖ level
/// sealed:     nonce (12) ‖ AES-256-GCM(manifest key of scope and level, body) ‖ tag (16)
///             associated data = label ‖ 0x00 ‖ record id ‖ header
/// ```
///
/// The clear header picks the key without decrypting; the associated data binds the body to its id
/// (a record moved under another id fails) and to its header (a flipped scope or level fails).
package enum SealedRecord {
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
        cipher: AESGCM
    ) throws(CofferError) -> [UInt8] {
        let header = [version, scope.code, level.code]
        let key = try keys.key(.manifest, scope.keyScope, level)
        do {
            return header
                + (try cipher.seal(body, key: key, authenticating: associatedData(label: label, id: id, header: header)))
        } catch {
            throw CofferError(.internalError, "sealing \(label) failed: \(error)", underlying: error)
        }
    }

    /// The version, scope and level in a stored record's clear header, without opening it.
    ///
    /// - Parameter versions: The record versions this Coffer reads.
    package static func peekHeader(
        _ stored: UnsafeRawBufferPointer,
        versions: ClosedRange<UInt8>,
        what: String
    ) throws(CofferError) -> (version: UInt8, scope: SyncScope, level: ProtectionLevel) {
        guard stored.count >= headerSize + AESGCM.overhead else {
            throw CofferError(.decode, "\(what) is too short (\(stored.count) bytes); the vault is damaged")
        }
        guard versions.contains(stored[0]) else {
            throw CofferError(.unsupportedFormat, "\(what) has version \(stored[0]); upgrade Coffer")
        }
        guard let scope = SyncScope(code: stored[1]), let level = ProtectionLevel(code: stored[2]) else {
            throw CofferError(.decode, "\(what)'s header is invalid; it was altered or damaged")
        }
        return (stored[0], scope, level)
    }

    /// Opens a record stored under `id`: its version (one of `versions`), scope, level and body.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if its level's key is not in memory,
    ///   `.decode` if it was altered, damaged or moved from another id.
    package static func open(
        _ stored: UnsafeRawBufferPointer,
        versions: ClosedRange<UInt8>,
        label: String,
        id: [UInt8],
        keys: KeyRing,
        cipher: AESGCM,
        what: String
    ) throws(CofferError) -> (version: UInt8, scope: SyncScope, level: ProtectionLevel, body: [UInt8]) {
        let (version, scope, level) = try peekHeader(stored, versions: versions, what: what)
        let key = try keys.key(.manifest, scope.keyScope, level)
        do {
            let body = try cipher.open(
                UnsafeRawBufferPointer(rebasing: stored[headerSize...]),
                key: key,
                authenticating: associatedData(label: label, id: id, header: stored[0..<headerSize])
            )
            return (version, scope, level, body)
        } catch {
            throw CofferError(
                .decode,
                "\(what) failed authentication: it was altered, damaged, or moved from another record",
                underlying: error
            )
        }
    }
}
