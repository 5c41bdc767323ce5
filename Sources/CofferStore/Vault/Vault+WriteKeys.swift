// The write keys: publishing the class public keys (unlocked) and taking them for a write (any time).
extension Vault {
    /// Whether clients that never unlock this vault may write `completeUnlessOpen` blobs and
    /// snapshots to it (`coffer put --write-only`, `coffer backup --write-only`). Off for a new vault;
    /// turned on with ``allowWriteOnlyClients(_:)-8qwu``.
    ///
    /// - Throws: ``CofferError`` `.authFailed` when the stored write keys are not signed by this
    ///   device's key, `.decode` when they are damaged.
    public var allowsWriteOnlyClients: Bool {
        get throws(CofferError) {
            try checkOpen()
            return try storedWriteKeys()?.allowsWriteOnlyClients ?? false
        }
    }

    /// Lets clients that hold no passphrase add `completeUnlessOpen` blobs and snapshots to this
    /// vault, or stops them. Such a client can add, but not read, list, delete or replace anything:
    /// what it writes is sealed to a public key whose private half exists only while the vault is
    /// unlocked, and each of its blobs is filed under a name only the owner can read. The vault must
    /// be unlocked: the keys are signed by the device.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while locked, `.closed` after ``close()``.
    public func allowWriteOnlyClients(_ allowed: Bool) throws(CofferError) {
        try publishWriteKeys(allowingWriteOnlyClients: allowed)
    }

    /// The fingerprint of the device key that signs this vault's write keys
    /// (``DeviceIdentity/fingerprint``), for a write-only client to pin
    /// (``Configuration/expectedWriteKeyFingerprint``).
    ///
    /// - Throws: ``CofferError`` as ``deviceIdentity()-8dcfr``.
    public var writeKeyFingerprint: String {
        get throws(CofferError) { try deviceIdentity().fingerprint }
    }

    /// The keys for one `completeUnlessOpen` write in `scope`: a fresh write secret sealed to the
    /// scope's class public key. An unlocked vault derives the public key itself (and publishes it if
    /// the stored record is stale); otherwise the stored record is used once its signature verifies,
    /// against ``Configuration/expectedWriteKeyFingerprint`` when one is set. A vault never unlocked
    /// since it was opened is a write-only client: it must allow them.
    ///
    /// - Throws: ``CofferError`` `.authFailed` for a record that fails its signature or the pinned
    ///   fingerprint, `.interactionNotAllowed` when the vault has no write keys yet or does not allow
    ///   write-only clients, `.keyUnavailable` for a vault waiting to join a group (syncable).
    package func writeKeys(for scope: SyncScope) throws(CofferError) -> WriteKeys {
        try checkOpen()
        let ring = try keyRing()
        if ring.isUnlocked {
            try? publishWriteKeys(allowingWriteOnlyClients: nil)
            let key = try WriteKeyRecord(ring: ring, allowsWriteOnlyClients: false).key(for: scope.keyScope)
            guard let key else { throw awaitingJoinError }
            return try WriteKeys.sealing(to: key.publicKey, scope: key.scope, epoch: key.epoch)
        }
        guard let record = try storedWriteKeys() else {
            throw CofferError(
                .interactionNotAllowed,
                "the vault has no write keys yet; unlock it once with its passphrase to publish them"
            )
        }
        if !ring.hasBeenUnlocked, !record.allowsWriteOnlyClients {
            throw CofferError(
                .interactionNotAllowed,
                "the vault does not accept write-only clients; its owner can allow them with \(InterfaceName.allowWriteOnly)"
            )
        }
        guard let key = record.key(for: scope.keyScope) else { throw awaitingJoinError }
        return try WriteKeys.sealing(to: key.publicKey, scope: key.scope, epoch: key.epoch)
    }

    private var awaitingJoinError: CofferError {
        CofferError(
            .keyUnavailable,
            "this vault is waiting for approval to join a sync group, so it has no syncable write key yet; write device-bound (\(InterfaceName.deviceOnly)) or wait for the approval"
        )
    }

    /// Publishes the current class public keys (meta `write-keys`), signed by the device, unless the
    /// stored record already says the same; `allowing` changes whether write-only clients may write
    /// (`nil` keeps what is stored). Called at every unlock, so a record stays current across a
    /// rekey and a group's new key epoch.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while locked.
    package func publishWriteKeys(allowingWriteOnlyClients allowing: Bool?) throws(CofferError) {
        let ring = try keyRing()
        guard ring.isUnlocked else {
            throw CofferError(.interactionNotAllowed, "the vault is locked; unlock it with its passphrase first")
        }
        let stored = try? storedWriteKeys()
        let record = try WriteKeyRecord(
            ring: ring,
            allowsWriteOnlyClients: allowing ?? stored?.allowsWriteOnlyClients ?? false
        )
        guard record != stored else { return }
        let signed = try record.signed(with: try deviceKeys().signing, vaultID: id, deviceID: deviceID)
        try Self.writeMeta(
            [(WriteKeyRecord.metaKey, signed)],
            to: environment,
            schema: schema,
            while: "publishing the write keys"
        )
    }

    /// The stored record, its signature verified with this device's signing key and, when set, the
    /// device's fingerprint checked against ``Configuration/expectedWriteKeyFingerprint``; `nil` if
    /// there is none.
    private func storedWriteKeys() throws(CofferError) -> WriteKeyRecord? {
        let entries = try readMetaEntries([WriteKeyRecord.metaKey, MetaKey.devicePublic])
        guard let stored = entries[WriteKeyRecord.metaKey] else { return nil }
        guard let devicePublic = entries[MetaKey.devicePublic] else {
            throw CofferError(.decode, "the vault has write keys but no device key to check them with; it is damaged")
        }
        let identity = try DeviceKeys.identity(devicePublic, deviceID: deviceID)
        if let expected = configuration.expectedWriteKeyFingerprint, expected != identity.fingerprint {
            throw CofferError(
                .authFailed,
                "the vault's write keys are signed by device key \(identity.fingerprint), not by \(expected), the one this client trusts: the vault was replaced or its keys swapped; nothing was written"
            )
        }
        return try WriteKeyRecord(
            verifying: stored,
            signer: Array(identity.signingKey),
            vaultID: id,
            deviceID: deviceID
        )
    }
}
