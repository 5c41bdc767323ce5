extension Snapshots {
    /// Adopts a write-only client's snapshot (``SnapshotInfo/isWriteOnly``): its record is sealed again
    /// with the owner's mark, so from then on it counts like the owner's own backups (retention, a
    /// name's latest, `restore NAME`). Its name, host and time stay what the client claimed; the owner
    /// adopting it vouches for them.
    ///
    /// - Parameter reference: The snapshot's id, or a unique prefix of 6 or more hex digits (a
    ///   write-only snapshot is never picked by name).
    /// - Returns: The adopted snapshot.
    /// - Throws: ``CofferError`` `.itemNotFound` if no snapshot has that id, `.param` if it is not a
    ///   write-only client's, `.interactionNotAllowed` if the vault is not unlocked.
    @discardableResult
    public func adopt(_ reference: String) throws(CofferError) -> SnapshotInfo {
        try vault.checkOpen()
        let keys = try vault.keyRing()
        let store = snapshotStore(keys)
        let cipher = try makeCipher()
        var record = try store.resolve(reference, host: nil, cipher: cipher)
        guard record.isWriteOnly else {
            throw CofferError(
                .param,
                "snapshot \(record.info.shortID) ('\(record.name)') is not a write-only client's; there is nothing to adopt"
            )
        }
        guard try record.markAsOwners(keys: keys) else {
            throw CofferError(
                .interactionNotAllowed,
                "adopting a snapshot needs the vault unlocked with its passphrase"
            )
        }
        let sealed = try record.seal(keys: keys, cipher: cipher)
        let schema = vault.schema
        let adopted = record
        try storage("adopting a snapshot") {
            try vault.environment.write { txn in
                guard try txn.contains(schema.snapshots, key: adopted.id) else {
                    throw CofferError(.itemNotFound, "the snapshot was forgotten meanwhile")
                }
                try txn.put(schema.snapshots, key: adopted.id, value: sealed)
                try ChangeLog.record(
                    .snapshotPut,
                    recordID: adopted.id,
                    scope: adopted.scope,
                    description: adopted.changeDescription,
                    keys: keys,
                    in: txn,
                    schema: schema
                )
            }
        }
        return adopted.info
    }
}
