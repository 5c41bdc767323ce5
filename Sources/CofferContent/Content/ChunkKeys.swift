package import Foundation

/// The keys of one namespace of chunks (a scope and a protection level), keyed once and used for many
/// chunks. Not thread-safe (it holds OpenSSL contexts): one per pipeline worker.
///
/// - chunk id = HMAC-SHA256(chunk-id key, plaintext): equal plaintexts in one namespace share an id
///   (dedup), and ids reveal nothing about content to anyone without the key. Each (scope, level) has
///   its own id key, so a `whenUnlocked` blob's chunks are never shared with an `afterFirstUnlock` one
///   (whose key stays in memory while the vault is locked);
/// - chunk key = HMAC-SHA256(chunk-seal key of the chunk's epoch, chunk id): every chunk is sealed
///   under its own key, so GCM's nonce limits never bite, however many chunks a vault holds. New
///   chunks are sealed in the scope's current epoch (``epoch``); a chunk of another epoch is opened
///   with that epoch's key, taken from the ring the first time one is met.
package final class ChunkKeys {
    package let scope: SyncScope
    package let level: ProtectionLevel
    /// The epoch new chunks are sealed in.
    package let epoch: KeyEpoch
    private let idMAC: HMACSHA256
    private let keyMAC: HMACSHA256
    private let ring: KeyRing?
    private var otherEpochs: [KeyEpoch: HMACSHA256] = [:]

    /// The chunk keys of `scope` and `level`: from the vault's key ring, or for a `completeUnlessOpen`
    /// content, from its write's keys (`write`, which such content must have).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory.
    package convenience init(
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?,
        keys: KeyRing
    ) throws(CofferError) {
        if level.isSealedToClassKey {
            guard let write else {
                throw CofferError(.internalError, "completeUnlessOpen content needs its write's keys")
            }
            // The chunks' own epoch stays the original: their keys come from the write secret, whose
            // box (in the manifest) names the class key's epoch.
            try self.init(scope: scope, level: level, idKey: write.chunkID, sealKey: write.chunkSeal)
            return
        }
        let epoch = keys.currentEpoch(scope.keyScope)
        try self.init(
            scope: scope,
            level: level,
            idKey: try keys.key(.chunkID, scope.keyScope, level),
            sealKey: try keys.key(.chunkSeal, scope.keyScope, level, epoch: epoch),
            epoch: epoch,
            ring: keys
        )
    }

    package init(
        scope: SyncScope,
        level: ProtectionLevel,
        idKey: SecureBytes,
        sealKey: SecureBytes,
        epoch: KeyEpoch = .original,
        ring: KeyRing? = nil
    ) throws(CofferError) {
        self.scope = scope
        self.level = level
        self.epoch = epoch
        self.ring = ring
        do {
            idMAC = try HMACSHA256(key: idKey)
            keyMAC = try HMACSHA256(key: sealKey)
        } catch {
            throw CofferError(.internalError, "keying the chunk keys failed: \(error)", underlying: error)
        }
    }

    private func mac(for chunkEpoch: KeyEpoch) throws(CofferError) -> HMACSHA256 {
        if chunkEpoch == epoch { return keyMAC }
        if let mac = otherEpochs[chunkEpoch] { return mac }
        guard let ring else {
            throw CofferError(.keyUnavailable, "a chunk sealed in key epoch \(chunkEpoch) cannot be opened here")
        }
        let key = try ring.key(.chunkSeal, scope.keyScope, level, epoch: chunkEpoch)
        do {
            let mac = try HMACSHA256(key: key)
            otherEpochs[chunkEpoch] = mac
            return mac
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

    /// The key that seals the chunk with this id in `epoch` (by default, ``epoch``).
    ///
    /// - Throws: ``CofferError`` `.keyUnavailable` for an epoch the ring does not hold.
    package func sealingKey(for id: ChunkID, epoch chunkEpoch: KeyEpoch? = nil) throws(CofferError) -> SecureBytes {
        let mac = try mac(for: chunkEpoch ?? epoch)
        do {
            var bytes = try mac.authenticationCode(of: id.bytes)
            defer { bytes.wipe() }
            return SecureBytes(copying: bytes)
        } catch {
            throw CofferError(.internalError, "deriving a chunk key failed: \(error)", underlying: error)
        }
    }
}
