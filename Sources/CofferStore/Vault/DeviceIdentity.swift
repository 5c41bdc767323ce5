public import Foundation

/// This vault's device identity in its sync group: an X25519 key that keys are sealed to and an
/// Ed25519 key that signs what the device adds to the group. The private halves never leave the vault:
/// they are sealed under a key derived from the device root (docs/FORMAT.md, "Device keys").
public struct DeviceIdentity: Sendable, Hashable, Codable {
    /// The device's id (``Vault/deviceID``).
    public let deviceID: UUID
    /// The X25519 public key (32 bytes) other devices seal keys to.
    public let encryptionKey: Data
    /// The Ed25519 public key (32 bytes) that verifies the device's signatures.
    public let signingKey: Data

    /// A short fingerprint of the id and both keys (SHA-256, first 10 bytes, as five groups of four hex
    /// digits), for two people to compare when one approves the other's device.
    public let fingerprint: String

    private static let fingerprintLabel = Array("coffer/v1/device-fingerprint".utf8) + [0]

    package init(deviceID: UUID, encryptionKey: [UInt8], signingKey: [UInt8]) throws(CofferError) {
        self.deviceID = deviceID
        self.encryptionKey = Data(encryptionKey)
        self.signingKey = Data(signingKey)
        let digest: [UInt8]
        do {
            digest = try SHA256.hash(Self.fingerprintLabel + deviceID.bytes + encryptionKey + signingKey)
        } catch {
            throw CofferError(.internalError, "hashing the device fingerprint failed: \(error)", underlying: error)
        }
        fingerprint = FingerprintText.of(digest)
    }
}

/// The private halves of a device identity, in memory while the vault is unlocked.
package struct DeviceKeys: Sendable {
    package let agreement: X25519PrivateKey
    package let signing: Ed25519PrivateKey

    /// Two fresh key pairs.
    package static func generate() -> DeviceKeys {
        DeviceKeys(agreement: X25519PrivateKey(), signing: Ed25519PrivateKey())
    }

    /// The public identity of these keys for `deviceID`.
    package func identity(deviceID: UUID) throws(CofferError) -> DeviceIdentity {
        do {
            return try DeviceIdentity(
                deviceID: deviceID,
                encryptionKey: try agreement.publicKey(),
                signingKey: try signing.publicKey()
            )
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(.internalError, "reading the device's public keys failed: \(error)", underlying: error)
        }
    }

    /// The meta entries that store the keys: the public halves in clear (`device-public`: version 1 ‖
    /// X25519 public ‖ Ed25519 public), the private halves sealed under a key derived from the device
    /// root (`device-keys`: AES-256-GCM of X25519 secret ‖ Ed25519 seed, bound to the vault and name).
    package func metaEntries(deviceRoot: SecureBytes, vaultID: UUID) throws(CofferError) -> [(String, [UInt8])] {
        do {
            let publicEntry = [Self.version] + (try agreement.publicKey()) + (try signing.publicKey())
            let kek = try HKDF.deriveKey(from: deviceRoot, label: Self.sealingLabel)
            var secrets = agreement.secret.withUnsafeBytes { Array($0) } + signing.seed.withUnsafeBytes { Array($0) }
            defer { secrets.wipe() }
            let sealed = try KeyWrap.wrap(
                SecureBytes(copying: secrets),
                under: kek,
                vaultID: vaultID,
                name: MetaKey.deviceKeys
            )
            return [(MetaKey.devicePublic, publicEntry), (MetaKey.deviceKeys, sealed)]
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(.internalError, "making the device keys failed: \(error)", underlying: error)
        }
    }

    /// The keys stored in `sealed` (meta `device-keys`), opened with the device root.
    ///
    /// - Throws: ``CofferError`` `.decode` when the entry is damaged or does not open.
    package static func open(
        _ sealed: [UInt8],
        deviceRoot: SecureBytes,
        vaultID: UUID
    ) throws(CofferError) -> DeviceKeys {
        let kek: SecureBytes
        do {
            kek = try HKDF.deriveKey(from: deviceRoot, label: sealingLabel)
        } catch {
            throw CofferError(.internalError, "deriving the device-key key failed: \(error)", underlying: error)
        }
        guard
            let secrets = try KeyWrap.unwrap(
                sealed,
                under: kek,
                vaultID: vaultID,
                name: MetaKey.deviceKeys,
                byteCount: 64
            )
        else {
            throw CofferError(.decode, "the vault's device keys do not open; the vault is damaged")
        }
        do {
            return try secrets.withUnsafeBytes { (raw) throws(CryptoError) -> DeviceKeys in
                DeviceKeys(
                    agreement: try X25519PrivateKey(secret: SecureBytes(copying: Array(raw[0..<32]))),
                    signing: try Ed25519PrivateKey(seed: SecureBytes(copying: Array(raw[32..<64])))
                )
            }
        } catch {
            throw CofferError(.decode, "the vault's device keys are damaged: \(error)", underlying: error)
        }
    }

    /// The public identity stored as `entry` (meta `device-public`).
    package static func identity(_ entry: [UInt8], deviceID: UUID) throws(CofferError) -> DeviceIdentity {
        guard entry.count == 65, entry[0] == version else {
            throw CofferError(.decode, "the vault's public device keys are damaged (\(entry.count) bytes)")
        }
        return try DeviceIdentity(
            deviceID: deviceID,
            encryptionKey: Array(entry[1..<33]),
            signingKey: Array(entry[33..<65])
        )
    }

    private static let version: UInt8 = 1
    private static let sealingLabel = "coffer/v1/device-keys"
}

extension Vault {
    /// This device's identity: its id and the public halves of its device keys. Readable while
    /// locked; a vault made before device keys existed gets them the first time this is called while
    /// it is unlocked (one transaction, so two processes asking at once make one identity).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` for a vault without device keys yet that is
    ///   locked, `.decode` when the stored keys are damaged, `.closed` after ``close()``.
    public func deviceIdentity() throws(CofferError) -> DeviceIdentity {
        try checkOpen()
        if let entry = try storedDevicePublic() { return try DeviceKeys.identity(entry, deviceID: deviceID) }
        let roots = try unlockedRoots()
        let entries = try DeviceKeys.generate().metaEntries(deviceRoot: roots.device, vaultID: id)
        let schema = schema
        let stored = try storage("making the device keys") {
            try environment.write { txn -> [UInt8] in
                // Another process may have made them meanwhile: theirs stand.
                if let existing = try txn.get(schema.meta, key: Array(MetaKey.devicePublic.utf8)) { return existing }
                try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
                for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
                return entries[0].1
            }
        }
        return try DeviceKeys.identity(stored, deviceID: deviceID)
    }

    /// The private halves of this device's keys (made first if the vault has none yet).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while the vault is locked.
    package func deviceKeys() throws(CofferError) -> DeviceKeys {
        _ = try deviceIdentity()
        let roots = try unlockedRoots()
        return try DeviceKeys.open(try readMeta(MetaKey.deviceKeys), deviceRoot: roots.device, vaultID: id)
    }

    private func storedDevicePublic() throws(CofferError) -> [UInt8]? {
        let schema = schema
        return try storage("reading the device keys") {
            try environment.read { txn in try txn.get(schema.meta, key: Array(MetaKey.devicePublic.utf8)) }
        }
    }
}
