import Foundation

// The two transactions that bracket a rekey (``DeviceGenerations``): the one that begins a new
// generation and the one that makes it current. The records in between move in batches of their own.
extension Vault {
    /// Begins a rekey, or finds the one in progress (begun by a run that was interrupted, or by another
    /// process): a fresh device root in a new generation, sealed under the current root (meta `rekey`).
    /// Device-bound records written from now on, here or by any process that unlocks from now on, are
    /// sealed in it. The vault's format becomes 3.
    ///
    /// - Returns: The generation the rekey moves records to.
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when locked, or when another process ended a
    ///   rekey since this one unlocked.
    package func beginRekey() throws(CofferError) -> KeyEpoch {
        let roots = try unlockedRoots()
        let (schema, vaultID) = (schema, id)
        let generations = try storage("beginning the rekey") {
            try environment.write { txn -> DeviceGenerations in
                try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
                let stored = try DeviceGenerations.read(in: txn, schema: schema, root: roots.device, vaultID: vaultID)
                if stored.pending != nil { return stored }
                var epoch = KeyEpoch.random()
                while epoch == stored.current || stored.earlier[epoch] != nil { epoch = .random() }
                let pending = DeviceGenerations.Pending(epoch: epoch, root: .random(count: 32))
                let entry = try DeviceGenerations.pendingEntry(pending, currentRoot: roots.device, vaultID: vaultID)
                try txn.put(schema.meta, key: Array(DeviceGenerations.Meta.rekey.utf8), value: entry)
                try Self.markFormat(in: txn, schema: schema, atLeast: 3)
                return try DeviceGenerations.read(in: txn, schema: schema, root: roots.device, vaultID: vaultID)
            }
        }
        guard let pending = generations.pending else {
            throw CofferError(.internalError, "the rekey just begun is not in the vault")
        }
        try installRoots(RootKeys(device: roots.device, generations: generations, sync: roots.sync))
        // Pooled contexts were keyed for the generation records were sealed in until now.
        dropDerivedContexts()
        return pending.epoch
    }

    /// Ends the rekey to `generation` in one transaction: the passphrase (or `newPassphrase`, with a
    /// fresh salt, and its join block) and a fresh recovery key wrap the new root; the earlier roots, the device keys, the
    /// group keys and the recovery key are sealed under it; meta `rekey` goes.
    ///
    /// - Parameter passphrase: The key-encryption key of the passphrase that stays, with its KDF
    ///   record, or of the new one (``KDFRecord/keyEncryptionKey(for:)``).
    /// - Returns: The new recovery key.
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when another process ended the rekey, or
    ///   another, since this one began or resumed it.
    package func endRekey(
        to generation: KeyEpoch,
        passphrase: (kdf: KDFRecord, kek: SecureBytes, isNew: Bool)
    ) throws(CofferError) -> RecoveryKey {
        let roots = try unlockedRoots()
        let (schema, vaultID) = (schema, id)
        let recovery = RecoveryKey.generate()
        let recoveryKEK = try Self.recoveryKeyEncryptionKey(recovery, vaultID: vaultID)
        // A new passphrase's join block commits with it (``changePassphrase(to:)``), unless the rekey
        // starts a new key epoch in the group: then the next unlock writes one for that epoch.
        let joinBlock =
            passphrase.isNew ? try joinBlockChange(kdf: passphrase.kdf, kek: passphrase.kek, force: true) : nil
        let (newRoot, generations, group) = try storage("ending the rekey") {
            try environment.write { txn -> (SecureBytes, DeviceGenerations, GroupContext?) in
                try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
                let stored = try DeviceGenerations.read(in: txn, schema: schema, root: roots.device, vaultID: vaultID)
                guard let pending = stored.pending, pending.epoch == generation else {
                    throw CofferError(
                        .interactionNotAllowed,
                        "another process ended this rekey, or began another, meanwhile; unlock the vault again and \(run: .rekey) once more to check. Nothing was changed"
                    )
                }
                func has(_ name: String) throws -> Bool { try txn.contains(schema.meta, key: Array(name.utf8)) }
                func wrap(_ key: SecureBytes, _ kek: SecureBytes, _ name: String) throws -> (String, [UInt8]) {
                    (name, try KeyWrap.wrap(key, under: kek, vaultID: vaultID, name: name))
                }
                var entries = try stored.endingEntries(currentRoot: roots.device, vaultID: vaultID)
                entries.append(try wrap(pending.root, passphrase.kek, MetaKey.wrappedRoot(.device, by: .passphrase)))
                if passphrase.isNew {
                    entries.append((MetaKey.kdf, passphrase.kdf.encoded))
                    let syncName = MetaKey.wrappedRoot(.sync, by: .passphrase)
                    if try has(syncName) { entries.append(try wrap(roots.sync, passphrase.kek, syncName)) }
                }
                entries.append(try wrap(pending.root, recoveryKEK, MetaKey.wrappedRoot(.device, by: .recovery)))
                let syncRecovery = MetaKey.wrappedRoot(.sync, by: .recovery)
                if try has(syncRecovery) { entries.append(try wrap(roots.sync, recoveryKEK, syncRecovery)) }
                entries.append(
                    (MetaKey.recoveryEscrow, try Self.escrow(recovery, deviceRoot: pending.root, vaultID: vaultID))
                )
                var group: GroupContext?
                if let sealed = try txn.get(schema.meta, key: Array(MetaKey.deviceKeys.utf8)) {
                    let deviceKeys = try DeviceKeys.open(sealed, deviceRoot: roots.device, vaultID: vaultID)
                    // New device keys too: a copy of the files taken before holds the old ones, and the
                    // group stops trusting them (a member's new keys go in its membership log).
                    let fresh = DeviceKeys.generate()
                    group = try replacingGroupKeys(of: deviceKeys, with: fresh, in: txn, roots: roots)
                    entries += try (group == nil ? deviceKeys : fresh).metaEntries(
                        deviceRoot: pending.root,
                        vaultID: vaultID
                    )
                }
                if let group {
                    entries += try group.metaEntries(deviceRoot: pending.root, vaultID: vaultID)
                } else if let sealed = try txn.get(schema.meta, key: Array(GroupKeys.metaKey.utf8)) {
                    let groupKeys = try GroupKeys.store.open(sealed, under: roots.device, vaultID: vaultID)
                    entries.append(
                        (GroupKeys.metaKey, try GroupKeys.store.seal(groupKeys, under: pending.root, vaultID: vaultID))
                    )
                }
                for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
                _ = try txn.delete(schema.meta, key: Array(DeviceGenerations.Meta.rekey.utf8))
                if group == nil { try joinBlock?.apply(in: txn, schema: schema) }
                let ended = try DeviceGenerations.read(in: txn, schema: schema, root: pending.root, vaultID: vaultID)
                return (pending.root, ended, group)
            }
        }
        try installRoots(RootKeys(device: newRoot, generations: generations, sync: roots.sync))
        if let group { try installGroupKeys(try group.epochRoots(), group: syncGroupID) }
        dropDerivedContexts()
        return recovery
    }

    /// The group with this device's keys replaced by `fresh` and a new key epoch sealed to them, in
    /// `txn`, when the vault is an active member of a group with a membership log; `nil` otherwise
    /// (the vault then keeps its device keys: a vault waiting for approval is known by them).
    private func replacingGroupKeys(
        of current: DeviceKeys,
        with fresh: DeviceKeys,
        in txn: Transaction,
        roots: RootKeys
    ) throws -> GroupContext? {
        guard try txn.get(schema.meta, key: Array(GroupContext.Meta.log.utf8)) != nil,
            try txn.get(schema.meta, key: Array(GroupContext.Meta.joinRequest.utf8)) == nil
        else { return nil }
        var context = try groupContext(in: txn, roots: roots, deviceKeys: current)
        guard try context.state().member(deviceID)?.isActive == true else { return nil }
        try context.replaceKeys(with: fresh)
        // Every identity whose keys are in this vault's files goes with them: the devices it was
        // before it re-enrolled (another copy holds them: a thief's that pushed first keeps the
        // device), the devices admitted elsewhere in any of their names (a copy that re-enrolled, a
        // thief's client), and, in turn, the devices those admitted (red team rounds 17 and 18).
        for device in try Self.leakedIdentities(of: deviceID, in: context.state(), txn: txn, schema: schema) {
            let clock = max(try HybridClock.reading(in: txn, schema: schema), HybridClock.wallStamp())
            try context.append(.revoked(device: device, clock: clock))
        }
        // As after a revocation: whoever holds the leaked files may know the passphrase, and members'
        // bundles would carry the new key under it. A member opens passphrase joins again.
        if try context.state().policy == .passphrase { try context.append(.policy(.approval)) }
        try context.startEpoch()
        // The join block wraps the previous epoch's key; the next unlock with the passphrase (or
        // the end of this rekey, for a new one) writes one for the new epoch.
        _ = try txn.delete(schema.meta, key: Array(JoinBlock.metaKey.utf8))
        return context
    }

    /// The active devices a rekey of `device` revokes, in a stable order: the devices this vault was
    /// before it re-enrolled, the devices admitted elsewhere by any of those or by `device`, and the
    /// devices admitted elsewhere by any device so revoked, in turn.
    static func leakedIdentities(
        of device: UUID,
        in state: GroupState,
        txn: Transaction,
        schema: Schema
    ) throws -> [UUID] {
        let former = try GroupContext.formerIdentities(in: txn, schema: schema)
        let admissions = try GroupContext.admittedElsewhere(in: txn, schema: schema)
        var authors = Set(former + [device])
        var revoked = Set(former.filter { $0 != device && state.member($0)?.isActive == true })
        authors.formUnion(revoked)
        while true {
            let more = admissions.filter { admission in
                guard authors.contains(admission.author), admission.admitted != device,
                    !revoked.contains(admission.admitted), let member = state.member(admission.admitted)
                else { return false }
                return member.isActive && member.addedBy == admission.author
            }
            guard !more.isEmpty else { break }
            for admission in more {
                revoked.insert(admission.admitted)
                authors.insert(admission.admitted)
            }
        }
        return revoked.sorted { $0.uuidString < $1.uuidString }
    }

    /// The passphrase's key-encryption key and KDF record, once `passphrase` is shown to open this
    /// vault's current device root.
    ///
    /// - Throws: ``CofferError`` `.authFailed` when it does not.
    package func verifiedPassphrase(_ passphrase: Passphrase) throws(CofferError) -> (kdf: KDFRecord, kek: SecureBytes)
    {
        let roots = try unlockedRoots()
        let kdf = try KDFRecord(decoding: try readMeta(MetaKey.kdf))
        let kek = try kdf.keyEncryptionKey(for: passphrase)
        let name = MetaKey.wrappedRoot(.device, by: .passphrase)
        guard let device = try KeyWrap.unwrap(try readMeta(name), under: kek, vaultID: id, name: name),
            device.withUnsafeBytes({ mine in roots.device.withUnsafeBytes { ConstantTime.equals(mine, $0) } })
        else {
            throw CofferError(.authFailed, "the passphrase is wrong; nothing was changed")
        }
        return (kdf, kek)
    }

    /// The rekey in progress in this vault, if any: the generation it moves records to.
    package func pendingRekey() throws(CofferError) -> KeyEpoch? {
        let roots = try unlockedRoots()
        let meta = try readMetaEntries(DeviceGenerations.Meta.all)
        return try DeviceGenerations(meta: meta, root: roots.device, vaultID: id).pending?.epoch
    }
}
