package import Foundation

/// The class public keys that `completeUnlessOpen` writes are sealed to, signed by the device
/// (meta `write-keys`, docs/FORMAT.md, "Write keys"):
///
/// ```
/// version (1) = 1 ‖ flags (1): bit 0 = write-only clients allowed ‖ count (1)
/// ‖ count × ( scope (1): 1 device, 2 sync ‖ epoch (UInt64) ‖ X25519 public key (32) )
/// ‖ Ed25519 signature (64) by the device's signing key of
///   "coffer/v1/write-keys" ‖ 0x00 ‖ vault id (16) ‖ device id (16) ‖ every byte before it
/// ```
///
/// A writer holds no secret, so it cannot check a MAC; it checks the signature with the device's
/// public signing key (meta `device-public`), whose fingerprint (``DeviceIdentity/fingerprint``) a
/// client pins: a public key swapped in the file fails the signature, and a whole record re-signed
/// by another key fails the pin.
package struct WriteKeyRecord: Equatable, Sendable {
    /// One scope's class public key.
    package struct ClassKey: Equatable, Sendable {
        package let scope: KeyScope
        package let epoch: KeyEpoch
        package let publicKey: [UInt8]
    }

    package static let version: UInt8 = 1
    package static let metaKey = "write-keys"

    /// Whether clients that never unlock the vault may write to it.
    package var allowsWriteOnlyClients: Bool
    /// The keys, device first.
    package var keys: [ClassKey]

    /// The class key of `scope`, if the record has one (a vault waiting to join has no sync key).
    package func key(for scope: KeyScope) -> ClassKey? { keys.first { $0.scope == scope } }

    /// The record's bytes before the signature.
    private var body: [UInt8] {
        var writer = BinaryWriter()
        writer.write(Self.version)
        writer.write(UInt8(allowsWriteOnlyClients ? 1 : 0))
        writer.write(UInt8(keys.count))
        for key in keys {
            writer.write(UInt8(key.scope == .device ? 1 : 2))
            writer.write(key.epoch.id)
            writer.write(raw: key.publicKey)
        }
        return writer.bytes
    }

    private static func signedMessage(_ body: [UInt8], vaultID: UUID, deviceID: UUID) -> [UInt8] {
        Array("coffer/v1/write-keys".utf8) + [0] + vaultID.bytes + deviceID.bytes + body
    }

    /// The stored form, signed with `signingKey`.
    package func signed(
        with signingKey: Ed25519PrivateKey,
        vaultID: UUID,
        deviceID: UUID
    ) throws(CofferError) -> [UInt8] {
        let body = body
        do {
            return body + (try signingKey.signature(of: Self.signedMessage(body, vaultID: vaultID, deviceID: deviceID)))
        } catch {
            throw CofferError(.internalError, "signing the write keys failed: \(error)", underlying: error)
        }
    }

    /// The record stored as `stored`, its signature checked against `signer` (the device's public
    /// signing key).
    ///
    /// - Throws: ``CofferError`` `.authFailed` when the signature does not verify (a key was swapped or
    ///   the record altered), `.decode` when it is malformed, `.unsupportedFormat` for a newer version.
    package init(verifying stored: [UInt8], signer: [UInt8], vaultID: UUID, deviceID: UUID) throws(CofferError) {
        guard stored.count > 64 else {
            throw CofferError(.decode, "the vault's write keys are damaged (\(stored.count) bytes)")
        }
        let body = Array(stored[..<(stored.count - 64)])
        let signature = Array(stored[(stored.count - 64)...])
        let valid: Bool
        do {
            valid = try Ed25519PrivateKey.isValidSignature(
                signature,
                of: Self.signedMessage(body, vaultID: vaultID, deviceID: deviceID),
                by: signer
            )
        } catch {
            throw CofferError(.decode, "the vault's device key is malformed: \(error)", underlying: error)
        }
        guard valid else {
            throw CofferError(
                .authFailed,
                "the vault's write keys are not signed by its device key: a key was swapped or the record altered; nothing was written. Unlock the vault with its passphrase to publish them again"
            )
        }
        var reader = BinaryReader(body, what: "meta \"\(Self.metaKey)\"")
        let version = try reader.readUInt8()
        guard version == Self.version else {
            throw CofferError(.unsupportedFormat, "the vault's write keys have version \(version); upgrade Coffer")
        }
        allowsWriteOnlyClients = try reader.readUInt8() & 1 == 1
        var keys: [ClassKey] = []
        for _ in 0..<(try reader.readUInt8()) {
            let code = try reader.readUInt8()
            guard code == 1 || code == 2 else {
                throw CofferError(.decode, "the vault's write keys name an unknown scope \(code)")
            }
            keys.append(
                ClassKey(
                    scope: code == 1 ? .device : .sync,
                    epoch: KeyEpoch(id: try reader.readUInt64()),
                    publicKey: try reader.readBytes(32)
                )
            )
        }
        try reader.finish()
        self.keys = keys
    }

    /// The record of `ring`'s current class keys (unlocked), with `allowsWriteOnlyClients`.
    package init(ring: KeyRing, allowsWriteOnlyClients: Bool) throws(CofferError) {
        self.allowsWriteOnlyClients = allowsWriteOnlyClients
        var keys: [ClassKey] = []
        for scope in KeyScope.allCases where !(scope == .sync && ring.isAwaitingJoin) {
            let epoch = ring.currentEpoch(scope)
            let publicKey: [UInt8]
            do {
                publicKey = try ring.writeClassPrivateKey(scope, epoch: epoch).publicKey()
            } catch let error as CofferError {
                throw error
            } catch {
                throw CofferError(.internalError, "deriving a write class key failed: \(error)", underlying: error)
            }
            keys.append(ClassKey(scope: scope, epoch: epoch, publicKey: publicKey))
        }
        self.keys = keys
    }
}
