package import Foundation

/// The keys of one namespace of chunks (a scope and a protection level), keyed once and used for many
/// chunks. Not thread-safe (it holds OpenSSL contexts): one per pipeline worker.
///
/// - chunk id = HMAC-SHA256(chunk-id key, plaintext): equal plaintexts in one namespace share an id
///   (dedup), and ids reveal nothing about content to anyone without the key. Each (scope, level) has
///   its own id key, so a `whenUnlocked` blob's chunks are never shared with an `afterFirstUnlock` one
///   (whose key stays in memory while the vault is locked);
/// - chunk key = HMAC-SHA256(chunk key, chunk id): every chunk is sealed under its own key, so GCM's
///   nonce limits never bite, however many chunks a vault holds.
package final class ChunkKeys {
    package let scope: SyncScope
    package let level: ProtectionLevel
    private let idMAC: HMACSHA256
    private let keyMAC: HMACSHA256

    /// The chunk keys of `scope` and `level` from the vault's key ring.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory.
    package convenience init(scope: SyncScope, level: ProtectionLevel, keys: KeyRing) throws(CofferError) {
        try self.init(
            scope: scope,
            level: level,
            idKey: try keys.key(.chunkID, scope.keyScope, level),
            sealKey: try keys.key(.chunkSeal, scope.keyScope, level)
        )
    }

    package init(scope: SyncScope, level: ProtectionLevel, idKey: SecureBytes, sealKey: SecureBytes) throws(CofferError)
    {
        self.scope = scope
        self.level = level
        do {
            idMAC = try HMACSHA256(key: idKey)
            keyMAC = try HMACSHA256(key: sealKey)
        } catch {
            throw CofferError(.internalError, "keying the chunk keys failed: \(error)", underlying: error)
        }
    }

    /// The id of a chunk with this plaintext.
    package func id(of plaintext: some ContiguousBytes) throws(CofferError) -> ChunkID {
        do {
            return ChunkID(try idMAC.authenticationCode(forParts: [plaintext]))
        } catch {
            throw CofferError(.internalError, "computing a chunk id failed: \(error)", underlying: error)
        }
    }

    /// The key that seals the chunk with this id.
    package func sealingKey(for id: ChunkID) throws(CofferError) -> SecureBytes {
        do {
            var bytes = try keyMAC.authenticationCode(of: id.bytes)
            defer { bytes.wipe() }
            return SecureBytes(copying: bytes)
        } catch {
            throw CofferError(.internalError, "deriving a chunk key failed: \(error)", underlying: error)
        }
    }
}
