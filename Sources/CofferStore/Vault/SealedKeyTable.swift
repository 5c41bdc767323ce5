package import Foundation

/// Keys by epoch in one sealed value: `[epoch id (UInt64) ‖ key (32)] × n`, in epoch order. A vault
/// keeps two such tables in `meta`, each sealed with AES-256-GCM under HKDF(a root, the table's label)
/// and bound, as a wrapped key is, to the vault and the entry's name: the group keys it holds
/// (`group-keys`) and the roots of its earlier device generations (`device-epochs`). A group's epoch
/// history uses the same plain layout.
package struct SealedKeyTable: Sendable {
    /// The `meta` entry the table is stored in, which the associated data names.
    package let name: String
    /// The HKDF label of the key that seals it.
    package let label: String
    /// What the table holds, for messages ("group keys").
    package let what: String

    package init(name: String, label: String, what: String) {
        self.name = name
        self.label = label
        self.what = what
    }

    /// `keys` in the plain layout. The caller wipes the result.
    package static func encode(_ keys: [KeyEpoch: SecureBytes]) -> [UInt8] {
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(keys.count * 40)
        for (epoch, key) in keys.sorted(by: { $0.key < $1.key }) {
            plaintext += withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }
            plaintext += key.withUnsafeBytes { Array($0) }
        }
        return plaintext
    }

    /// Reads the plain layout; `nil` when malformed.
    package static func decode(_ plaintext: [UInt8]) -> [KeyEpoch: SecureBytes]? {
        guard plaintext.count % 40 == 0 else { return nil }
        var keys: [KeyEpoch: SecureBytes] = [:]
        for start in stride(from: 0, to: plaintext.count, by: 40) {
            let id = plaintext[start..<(start + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            keys[KeyEpoch(id: id)] = SecureBytes(copying: Array(plaintext[(start + 8)..<(start + 40)]))
        }
        return keys
    }

    /// `keys`, sealed under `root` for this vault.
    package func seal(
        _ keys: [KeyEpoch: SecureBytes],
        under root: SecureBytes,
        vaultID: UUID
    ) throws(CofferError) -> [UInt8] {
        var plaintext = Self.encode(keys)
        defer { plaintext.wipe() }
        do {
            let kek = try HKDF.deriveKey(from: root, label: label)
            return try AESGCM().seal(
                plaintext,
                key: kek,
                authenticating: KeyWrap.associatedData(vaultID: vaultID, name: name)
            )
        } catch {
            throw CofferError(.internalError, "sealing the vault's \(what) failed: \(error)", underlying: error)
        }
    }

    /// Opens a table sealed under `root`.
    ///
    /// - Throws: ``CofferError`` `.decode` when it does not open (damaged, or sealed under another
    ///   root) or is malformed.
    package func open(
        _ sealed: [UInt8],
        under root: SecureBytes,
        vaultID: UUID
    ) throws(CofferError) -> [KeyEpoch: SecureBytes] {
        guard let kek = try? HKDF.deriveKey(from: root, label: label),
            var plaintext = try? AESGCM().open(
                sealed,
                key: kek,
                authenticating: KeyWrap.associatedData(vaultID: vaultID, name: name)
            )
        else {
            throw CofferError(.decode, "the vault's \(what) (meta \"\(name)\") do not open; the vault is damaged")
        }
        defer { plaintext.wipe() }
        guard let keys = Self.decode(plaintext) else {
            throw CofferError(.decode, "the vault's \(what) (meta \"\(name)\") are malformed; the vault is damaged")
        }
        return keys
    }
}
