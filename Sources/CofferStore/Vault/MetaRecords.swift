package import Foundation

/// The names of the entries in the `meta` table. Each value's layout is in docs/FORMAT.md.
package enum MetaKey {
    package static let format = "format"
    package static let vaultID = "vault-id"
    package static let deviceID = "device-id"
    package static let syncGroupID = "sync-group-id"
    package static let createdAt = "created-at"
    package static let kdf = "kdf"
    package static let recoveryEscrow = "recovery-key"
    /// The device's public keys, in clear (``DeviceKeys``).
    package static let devicePublic = "device-public"
    /// The device's private keys, sealed under the device root (``DeviceKeys``).
    package static let deviceKeys = "device-keys"

    /// The wrapped root of `scope`, under the passphrase or the recovery key.
    package static func wrappedRoot(_ scope: KeyScope, by unlocker: Unlocker) -> String {
        "root.\(scope.name).\(unlocker.rawValue)"
    }

    /// What a key-encryption key comes from.
    package enum Unlocker: String {
        case passphrase
        case recovery
    }
}

/// The stored passphrase KDF: `version (1) = 1 ‖ algorithm (1) = 1 (scrypt) ‖ logN (1) ‖ r (4) ‖ p (4) ‖
/// salt length (2) ‖ salt`.
package struct KDFRecord: Equatable {
    package static let saltByteCount = 32

    package let parameters: KDFParameters
    package let salt: [UInt8]

    /// New parameters with a fresh random salt.
    package init(parameters: KDFParameters) {
        self.parameters = parameters
        salt = SecureRandom.bytes(count: Self.saltByteCount)
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "meta \"kdf\"")
        let version = try reader.readUInt8()
        let algorithm = try reader.readUInt8()
        guard version == 1, algorithm == 1 else {
            throw CofferError(
                .unsupportedFormat,
                "the vault's key derivation (version \(version), algorithm \(algorithm)) is not one this Coffer knows; upgrade Coffer"
            )
        }
        parameters = KDFParameters(logN: try reader.readUInt8(), r: try reader.readUInt32(), p: try reader.readUInt32())
        salt = try reader.readLengthPrefixed()
        try reader.finish()
        try parameters.validate()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(UInt8(1))
        writer.write(UInt8(1))
        writer.write(parameters.logN)
        writer.write(parameters.r)
        writer.write(parameters.p)
        writer.write(lengthPrefixed: salt)
        return writer.bytes
    }

    /// The key-encryption key for `passphrase` (scrypt; slow on purpose).
    package func keyEncryptionKey(for passphrase: Passphrase) throws(CofferError) -> SecureBytes {
        do {
            return try Scrypt.deriveKey(
                password: passphrase.bytes,
                salt: salt,
                logN: parameters.logN,
                r: parameters.r,
                p: parameters.p
            )
        } catch {
            throw CofferError(
                .internalError,
                "deriving the key from the passphrase failed: \(error)",
                underlying: error
            )
        }
    }
}

/// Seals and opens 32-byte keys under a key-encryption key: AES-256-GCM, stored as
/// `nonce (12) ‖ ciphertext (32) ‖ tag (16)`, with associated data
/// `"coffer/v1/wrap" ‖ 0x00 ‖ vault id (16) ‖ 0x00 ‖ meta entry name`, so a wrapped key moved to
/// another entry or another vault fails to open.
package enum KeyWrap {
    package static func associatedData(vaultID: UUID, name: String) -> [UInt8] {
        Array("coffer/v1/wrap".utf8) + [0] + vaultID.bytes + [0] + Array(name.utf8)
    }

    package static func wrap(
        _ key: SecureBytes,
        under kek: SecureBytes,
        vaultID: UUID,
        name: String
    ) throws(CofferError) -> [UInt8] {
        do {
            return try AESGCM().seal(key, key: kek, authenticating: associatedData(vaultID: vaultID, name: name))
        } catch {
            throw CofferError(.internalError, "sealing a key failed: \(error)", underlying: error)
        }
    }

    /// Opens a wrapped key of `byteCount` bytes; `nil` when it does not authenticate (wrong
    /// key-encryption key, or altered).
    package static func unwrap(
        _ sealed: [UInt8],
        under kek: SecureBytes,
        vaultID: UUID,
        name: String,
        byteCount: Int = 32
    ) throws(CofferError) -> SecureBytes? {
        guard sealed.count == AESGCM.overhead + byteCount else {
            throw CofferError(
                .decode,
                "meta \"\(name)\" is \(sealed.count) bytes, not a wrapped key; the vault is damaged"
            )
        }
        do {
            var plain = try AESGCM().open(
                sealed,
                key: kek,
                authenticating: associatedData(vaultID: vaultID, name: name)
            )
            defer { plain.wipe() }
            return SecureBytes(copying: plain)
        } catch  where error.kind == .authenticationFailure {
            return nil
        } catch {
            throw CofferError(.internalError, "opening a key failed: \(error)", underlying: error)
        }
    }
}

extension UUID {
    /// The 16 bytes of the UUID.
    package var bytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }

    /// A UUID from 16 stored bytes.
    package init(storedBytes bytes: [UInt8], what: String) throws(CofferError) {
        guard bytes.count == 16 else {
            throw CofferError(.decode, "meta \"\(what)\" is \(bytes.count) bytes, not an id; the vault is damaged")
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes) }
        self.init(uuid: value)
    }
}
