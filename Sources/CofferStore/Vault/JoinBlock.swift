package import Foundation

/// What a new machine needs to join a sync group, carried in every bundle's header and kept in meta
/// `sync-join` (docs/FORMAT.md, "Join block"):
///
/// ```
/// KDF record length (UInt16) ‖ KDF record ‖ sync root wrapped under the passphrase KEK (60)
/// wrap associated data = "coffer/v1/wrap" ‖ 0x00 ‖ sync group id ‖ 0x00 ‖ "sync-join"
/// ```
///
/// It is written whenever the passphrase KEK is at hand (at creation and at a passphrase change), so
/// exporting never needs the passphrase. It gives nothing to someone without the passphrase that the
/// vault files do not already give: the same scrypt stands between a guess and the root.
package struct JoinBlock: Equatable {
    package static let metaKey = "sync-join"

    package let kdf: KDFRecord
    package let wrappedSyncRoot: [UInt8]

    /// Wraps `syncRoot` under the key `kdf` derives from the passphrase.
    package init(syncRoot: SecureBytes, kdf: KDFRecord, kek: SecureBytes, syncGroupID: UUID) throws(CofferError) {
        self.kdf = kdf
        wrappedSyncRoot = try KeyWrap.wrap(syncRoot, under: kek, vaultID: syncGroupID, name: Self.metaKey)
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "the bundle's join block")
        let kdfLength = Int(try reader.readUInt16())
        kdf = try KDFRecord(decoding: try reader.readBytes(kdfLength))
        wrappedSyncRoot = try reader.readBytes(AESGCM.overhead + 32)
        try reader.finish()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        let kdfBytes = kdf.encoded
        writer.write(UInt16(kdfBytes.count))
        writer.write(raw: kdfBytes)
        writer.write(raw: wrappedSyncRoot)
        return writer.bytes
    }

    /// The sync root, if `passphrase` is the one the block was made with.
    ///
    /// - Throws: ``CofferError`` `.authFailed` for another passphrase.
    package func syncRoot(passphrase: Passphrase, syncGroupID: UUID) throws(CofferError) -> SecureBytes {
        let kek = try kdf.keyEncryptionKey(for: passphrase)
        guard let root = try KeyWrap.unwrap(wrappedSyncRoot, under: kek, vaultID: syncGroupID, name: Self.metaKey)
        else {
            throw CofferError(
                .authFailed,
                "the passphrase does not open this bundle's sync group; use the passphrase of the vault that exported it"
            )
        }
        return root
    }
}
