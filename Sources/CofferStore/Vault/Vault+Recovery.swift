package import Foundation

extension Vault {
    /// Changes the passphrase: the two roots are wrapped again under a key from `newPassphrase` (with a
    /// new salt and the configuration's KDF cost), and the join block with them, in one transaction.
    /// No data is re-encrypted, and the recovery key keeps working.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if the vault is locked (unlock it first, with
    ///   the old passphrase or the recovery key), `.param` for an empty passphrase.
    public func changePassphrase(to newPassphrase: Passphrase) throws(CofferError) {
        guard !newPassphrase.isEmpty else {
            throw CofferError(.param, "the new passphrase is empty; choose a passphrase to protect the vault")
        }
        try configuration.kdf.validate()
        let roots = try unlockedRoots()
        let kdf = KDFRecord(parameters: configuration.kdf)
        let kek = try kdf.keyEncryptionKey(for: newPassphrase)
        var entries: [(String, [UInt8])] = [(MetaKey.kdf, kdf.encoded)]
        for scope in KeyScope.allCases {
            let name = MetaKey.wrappedRoot(scope, by: .passphrase)
            // A vault that joined by approval, or waits to, keeps no sync root under its passphrase:
            // wrapping the one in memory (a placeholder, while waiting) would shadow the group's.
            if scope == .sync, try readMetaIfPresent(name) == nil { continue }
            entries.append((name, try KeyWrap.wrap(roots.wrappedRoot(scope), under: kek, vaultID: id, name: name)))
        }
        // The join block (which bundles carry) is wrapped under the same passphrase: it commits with
        // the wrapped roots, so a failure leaves the old passphrase opening both the vault and its
        // bundles, and success the new one both.
        let joinBlock = try joinBlockChange(kdf: kdf, kek: kek, force: true)
        let schema = schema
        try storage("changing the passphrase") {
            try environment.write { txn in
                // A rekey that ended meanwhile wrapped another root: this one would shadow it.
                try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
                for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
                try joinBlock?.apply(in: txn, schema: schema)
            }
        }
    }

    /// The vault's recovery key, which unlocks it in place of the passphrase. Keep its
    /// ``RecoveryKey/text`` offline.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if the vault is locked.
    public func recoveryKey() throws(CofferError) -> RecoveryKey {
        let roots = try unlockedRoots()
        let escrowKey = try Self.escrowKey(roots)
        let sealed = try readMeta(MetaKey.recoveryEscrow)
        guard let key = try KeyWrap.unwrap(sealed, under: escrowKey, vaultID: id, name: MetaKey.recoveryEscrow) else {
            throw CofferError(.decode, "the vault is damaged: its recovery key record does not authenticate")
        }
        return RecoveryKey(bytes: key)
    }

    /// Unlocks the vault with its recovery key instead of the passphrase.
    ///
    /// - Throws: ``CofferError`` `.authFailed` if the key is not this vault's (nothing changes).
    public func unlock(recoveryKey: RecoveryKey) throws(CofferError) {
        try checkOpen()
        let kek = try Self.recoveryKeyEncryptionKey(recoveryKey, vaultID: id)
        guard let roots = try unwrapRoots(under: kek, by: .recovery) else {
            throw CofferError(.authFailed, "the recovery key is not this vault's; the vault stays locked")
        }
        try installRoots(roots)
    }

    /// The key that wraps the roots for recovery: HKDF(recovery key, salt: vault id,
    /// "coffer/v1/recovery-kek"). The recovery key is 256 random bits, so no slow KDF is needed.
    package static func recoveryKeyEncryptionKey(
        _ recoveryKey: RecoveryKey,
        vaultID: UUID
    ) throws(CofferError) -> SecureBytes {
        do {
            return try HKDF.deriveKey(
                from: recoveryKey.bytes,
                salt: vaultID.bytes,
                info: Array("coffer/v1/recovery-kek".utf8)
            )
        } catch {
            throw CofferError(
                .internalError,
                "deriving the recovery key-encryption key failed: \(error)",
                underlying: error
            )
        }
    }

    /// The key that keeps the recovery key itself (so it can be shown again while unlocked):
    /// HKDF(device root, "coffer/v1/recovery-escrow"), with the current device generation's root.
    package static func escrowKey(_ roots: RootKeys) throws(CofferError) -> SecureBytes {
        try escrowKey(deviceRoot: roots.device)
    }

    private static func escrowKey(deviceRoot: SecureBytes) throws(CofferError) -> SecureBytes {
        do {
            return try HKDF.deriveKey(from: deviceRoot, label: "coffer/v1/recovery-escrow")
        } catch {
            throw CofferError(.internalError, "deriving the escrow key failed: \(error)", underlying: error)
        }
    }

    /// The sealed recovery key for the `meta` table.
    package static func escrow(
        _ recoveryKey: RecoveryKey,
        roots: RootKeys,
        vaultID: UUID
    ) throws(CofferError) -> [UInt8] {
        try escrow(recoveryKey, deviceRoot: roots.device, vaultID: vaultID)
    }

    /// The sealed recovery key for the `meta` table, under the device root `deviceRoot`.
    package static func escrow(
        _ recoveryKey: RecoveryKey,
        deviceRoot: SecureBytes,
        vaultID: UUID
    ) throws(CofferError) -> [UInt8] {
        try KeyWrap.wrap(
            recoveryKey.bytes,
            under: try escrowKey(deviceRoot: deviceRoot),
            vaultID: vaultID,
            name: MetaKey.recoveryEscrow
        )
    }
}
