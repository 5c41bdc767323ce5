package import Foundation

/// What a new machine needs to join a sync group, carried in every bundle's header and kept in meta
/// `sync-join` (docs/FORMAT.md, "Join block"):
///
/// ```
/// KDF record length (UInt16) ‖ KDF record ‖ group key wrapped under the passphrase KEK (60)
///   [‖ key epoch (UInt64), for a group key of an epoch after the original]
/// wrap associated data = "coffer/v1/wrap" ‖ 0x00 ‖ sync group id ‖ 0x00 ‖ "sync-join"
///                        [‖ " " ‖ the epoch in 16 hex digits]
/// ```
///
/// The wrapped key is the group key of the current epoch (the sync root, in the original epoch); a
/// device that opens it finds the earlier ones in the membership log. The block is written whenever
/// the passphrase KEK is at hand (at creation, at a passphrase change, at an unlock with the
/// passphrase once the epoch has changed), so exporting never needs the passphrase. It gives nothing
/// to someone without the passphrase that the vault files do not already give: the same scrypt stands
/// between a guess and the key.
package struct JoinBlock: Equatable {
    package static let metaKey = "sync-join"

    package let kdf: KDFRecord
    package let wrappedSyncRoot: [UInt8]
    /// The epoch of the wrapped group key.
    package let epoch: KeyEpoch

    /// Wraps `syncRoot`, the group key of `epoch`, under the key `kdf` derives from the passphrase.
    package init(
        syncRoot: SecureBytes,
        kdf: KDFRecord,
        kek: SecureBytes,
        syncGroupID: UUID,
        epoch: KeyEpoch = .original
    ) throws(CofferError) {
        self.kdf = kdf
        self.epoch = epoch
        wrappedSyncRoot = try KeyWrap.wrap(syncRoot, under: kek, vaultID: syncGroupID, name: Self.wrapName(epoch))
    }

    private static func wrapName(_ epoch: KeyEpoch) -> String {
        epoch.isOriginal ? metaKey : "\(metaKey) \(epoch)"
    }

    /// A change to meta `sync-join`, applied inside the caller's transaction.
    package enum Change {
        /// Store this block.
        case write(JoinBlock)
        /// Remove the block: the group no longer accepts joins by passphrase.
        case remove

        /// What the change does, for messages: `writing the join block`.
        package var action: String {
            switch self {
            case .write: "writing the join block"
            case .remove: "removing the join block"
            }
        }

        /// Makes the change in `txn`.
        package func apply(in txn: Transaction, schema: Schema) throws {
            let name = Array(JoinBlock.metaKey.utf8)
            switch self {
            case .write(let block): try txn.put(schema.meta, key: name, value: block.encoded)
            case .remove: _ = try txn.delete(schema.meta, key: name)
            }
        }
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "the bundle's join block")
        let kdfLength = Int(try reader.readUInt16())
        kdf = try KDFRecord(decoding: try reader.readBytes(kdfLength))
        wrappedSyncRoot = try reader.readBytes(AESGCM.overhead + 32)
        let rest = bytes.count - 2 - kdfLength - AESGCM.overhead - 32
        if rest == SealedScope.epochSize {
            let id = try reader.readUInt64()
            guard id != 0 else { throw CofferError(.decode, "the bundle's join block names epoch 0 explicitly") }
            epoch = KeyEpoch(id: id)
        } else {
            epoch = .original
        }
        try reader.finish()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        let kdfBytes = kdf.encoded
        writer.write(UInt16(kdfBytes.count))
        writer.write(raw: kdfBytes)
        writer.write(raw: wrappedSyncRoot)
        if !epoch.isOriginal { writer.write(epoch.id) }
        return writer.bytes
    }

    /// The group key of ``epoch``, if `passphrase` is the one the block was made with.
    ///
    /// - Throws: ``CofferError`` `.authFailed` for another passphrase.
    package func syncRoot(passphrase: Passphrase, syncGroupID: UUID) throws(CofferError) -> SecureBytes {
        let kek = try kdf.keyEncryptionKey(for: passphrase)
        guard
            let root = try KeyWrap.unwrap(
                wrappedSyncRoot,
                under: kek,
                vaultID: syncGroupID,
                name: Self.wrapName(epoch)
            )
        else {
            throw CofferError(
                .authFailed,
                "the passphrase does not open this bundle's sync group; use the passphrase of the vault that exported it"
            )
        }
        return root
    }
}
