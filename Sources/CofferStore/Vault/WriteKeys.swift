/// The keys of one `completeUnlessOpen` write (docs/FORMAT.md, "Sealed to the class key").
///
/// A write draws a random 32-byte write secret and seals it to the scope's class public key
/// (``SealedToKey``: X25519 with a fresh ephemeral key, HKDF, AES-256-GCM). Every record of the write
/// carries that box; its chunks, chunk ids, chunk boundaries and manifest are keyed from the secret:
///
/// ```
/// box         = SealedToKey(write secret → class public key of scope and epoch,
///                           purpose: "coffer/v1/write" ‖ scope code ‖ epoch id (UInt64))
/// chunk id    = HMAC-SHA256(HKDF(write secret, "coffer/v1/chunk-id"), plaintext)
/// chunk key   = HMAC-SHA256(HKDF(write secret, "coffer/v1/chunk-seal"), chunk id)
/// manifest    = AES-256-GCM(HKDF(write secret, "coffer/v1/manifest"), body)
/// gear seed   = HKDF(write secret, "coffer/v1/gear-seed")
/// ```
///
/// So a writer needs only the public key, and once the write ends it keeps nothing that reads it back;
/// opening the box needs the class private key, which exists only while the vault is unlocked
/// (``KeyRing/writeClassPrivateKey(_:epoch:)``). Chunk ids are keyed per write: a write dedups within
/// itself and never against the vault, so a writer learns nothing about what the vault holds.
package struct WriteKeys: Sendable {
    /// The root the class key pair descends from.
    package let scope: KeyScope
    /// The class key's epoch.
    package let epoch: KeyEpoch
    /// The write secret sealed to the class public key, stored in every record of the write.
    package let box: [UInt8]
    /// Keys chunk ids.
    package let chunkID: SecureBytes
    /// Derives each chunk's sealing key from its id.
    package let chunkSeal: SecureBytes
    /// Seals the write's manifest (a blob manifest, a snapshot record).
    package let manifest: SecureBytes
    /// Seeds the chunker's gear table.
    package let gearSeed: SecureBytes

    /// The size of ``box``.
    package static let boxSize = SealedToKey.overhead + 32

    /// Fresh keys for a write sealed to `classPublicKey`, the class public key of `scope` in `epoch`.
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed public key.
    package static func sealing(
        to classPublicKey: [UInt8],
        scope: KeyScope,
        epoch: KeyEpoch
    ) throws(CofferError) -> WriteKeys {
        let secret = SecureBytes.random(count: 32)
        let box: [UInt8]
        do {
            box = try SealedToKey.seal(secret, to: classPublicKey, purpose: purpose(scope, epoch))
        } catch {
            throw CofferError(.decode, "the vault's write key is malformed: \(error)", underlying: error)
        }
        return try WriteKeys(secret: secret, box: box, scope: scope, epoch: epoch)
    }

    /// The keys of the write whose box is `box`, opened with the class private key of `scope` in
    /// `epoch` from `ring`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while the vault is locked, `.keyUnavailable`
    ///   for an epoch not held, `.decode` for a box that does not open (altered, or moved from a
    ///   record of another scope or epoch).
    package static func opening(
        _ box: [UInt8],
        scope: KeyScope,
        epoch: KeyEpoch,
        ring: KeyRing
    ) throws(CofferError) -> WriteKeys {
        let classKey = try ring.writeClassPrivateKey(scope, epoch: epoch)
        let secret: SecureBytes
        do {
            secret = try SealedToKey.open(box, with: classKey, purpose: purpose(scope, epoch))
        } catch {
            throw CofferError(
                .decode,
                "a completeUnlessOpen record's write key does not open: it was altered or damaged",
                underlying: error
            )
        }
        return try WriteKeys(secret: secret, box: box, scope: scope, epoch: epoch)
    }

    /// The same write's secret sealed again to another class key (a rekey moving the device scope to
    /// a new generation): the records' other bytes, and the chunks, stay as they are.
    ///
    /// - Throws: as ``opening(_:scope:epoch:ring:)`` and ``sealing(to:scope:epoch:)``.
    package static func resealBox(
        _ box: [UInt8],
        scope: KeyScope,
        from epoch: KeyEpoch,
        to newEpoch: KeyEpoch,
        ring: KeyRing
    ) throws(CofferError) -> [UInt8] {
        let classKey = try ring.writeClassPrivateKey(scope, epoch: epoch)
        do {
            let secret = try SealedToKey.open(box, with: classKey, purpose: purpose(scope, epoch))
            let newPublic = try ring.writeClassPrivateKey(scope, epoch: newEpoch).publicKey()
            return try SealedToKey.seal(secret, to: newPublic, purpose: purpose(scope, newEpoch))
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(
                .decode,
                "a completeUnlessOpen record's write key does not open: it was altered or damaged",
                underlying: error
            )
        }
    }

    private init(secret: SecureBytes, box: [UInt8], scope: KeyScope, epoch: KeyEpoch) throws(CofferError) {
        self.scope = scope
        self.epoch = epoch
        self.box = box
        do {
            chunkID = try HKDF.deriveKey(from: secret, label: KeyPurpose.chunkID.label)
            chunkSeal = try HKDF.deriveKey(from: secret, label: KeyPurpose.chunkSeal.label)
            manifest = try HKDF.deriveKey(from: secret, label: KeyPurpose.manifest.label)
            gearSeed = try HKDF.deriveKey(from: secret, label: KeyPurpose.gear.label)
        } catch {
            throw CofferError(.internalError, "deriving a write's keys failed: \(error)", underlying: error)
        }
    }

    private static func purpose(_ scope: KeyScope, _ epoch: KeyEpoch) -> [UInt8] {
        Array("coffer/v1/write".utf8) + [scope == .device ? 1 : 2]
            + withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }
    }
}
