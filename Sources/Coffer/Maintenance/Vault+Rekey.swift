import Foundation

/// How far a rekey (``Vault/rekey(passphrase:newPassphrase:progress:)-96w2n``) has come, reported
/// after each batch.
public struct RekeyProgress: Sendable, Hashable {
    /// Records examined so far, of every kind and scope.
    public let examined: Int
    /// The records the vault holds (items, blob manifests, snapshot records and chunks), counted when
    /// the pass began: `examined` reaches it at the end.
    public let total: Int
    /// Device-bound records sealed again so far (in this run: an interrupted run's work is not redone).
    public let resealed: Int
    /// The stored bytes of those records.
    public let resealedBytes: Int64
}

extension Vault {
    /// Moves this vault's device-bound records to a fresh device root, for when the vault's files
    /// may have leaked: a fresh random root starts a new *device generation*, every device-bound
    /// record (items, blob manifests, snapshot records, chunks) is opened and sealed again under it,
    /// and the passphrase (or `newPassphrase`) and a new recovery key then wrap the new root. Syncable
    /// records are left as they are: shut a leaked member out of the group with
    /// ``revoke(device:)-6ww9w`` or ``rotateGroupKey()-2v8mz`` on another device.
    ///
    /// In a sync group the device also gets new device keys, recorded in the group's log with a new
    /// key epoch sealed to them, and every identity whose keys were in the vault's files is revoked:
    /// the device ids the vault had before it re-enrolled as a new device (another copy holds them),
    /// the devices admitted in the name of any of them that this vault did not admit itself (a copy
    /// that re-enrolled, a thief's client), and the devices those admitted in turn, as this vault
    /// heard of them; ``Vault/members()-3bf8v`` lists them revoked.
    ///
    /// Record ids do not change (naming keys stay those of the original root), so the blind index,
    /// chunk dedup and snapshots referring to blobs keep working. The earlier roots stay in the vault,
    /// sealed under the new one, so a record a process sealed in an earlier generation meanwhile stays
    /// readable. A copy of the vault's files taken before the rekey, with the old passphrase or
    /// recovery key, opens nothing written or re-sealed since.
    ///
    /// The records move in batches of one transaction each, with `progress` called after each. A run
    /// killed at any moment leaves a vault that opens and reads everything; running `rekey` again
    /// resumes where it stopped (the new root was stored, sealed under the current one, when the first
    /// run began) and ends it. Ending is one transaction: until it commits, the old passphrase, root and
    /// recovery key are in force.
    ///
    /// - Parameters:
    ///   - passphrase: The vault's passphrase, checked before anything changes.
    ///   - newPassphrase: A passphrase to protect the new root instead (with a fresh salt and the
    ///     configuration's KDF cost); `nil` keeps `passphrase`. Change it when the old one may have
    ///     leaked with the files, or was weak enough to guess.
    ///   - progress: Called after each batch, on the calling thread.
    /// - Returns: The new recovery key, which replaces the old one: keep its ``RecoveryKey/text``
    ///   offline. ``recoveryKey()-7z7u5`` shows it again while the vault is unlocked.
    /// - Throws: ``CofferError`` `.authFailed` for a wrong `passphrase` (nothing changes),
    ///   `.param` for an empty `newPassphrase`, `.interactionNotAllowed` when locked,
    ///   `.noSpace`/`.io` when the disk fills or fails midway (run it again once there is room).
    @discardableResult
    public func rekey(
        passphrase: Passphrase,
        newPassphrase: Passphrase? = nil,
        progress: ((RekeyProgress) -> Void)? = nil
    ) throws(CofferError) -> RecoveryKey {
        let current = try verifiedPassphrase(passphrase)
        var protection = (kdf: current.kdf, kek: current.kek, isNew: false)
        if let newPassphrase {
            guard !newPassphrase.isEmpty else {
                throw CofferError(.param, "the new passphrase is empty; choose a passphrase to protect the vault")
            }
            try configuration.kdf.validate()
            let kdf = KDFRecord(parameters: configuration.kdf)
            protection = (kdf, try kdf.keyEncryptionKey(for: newPassphrase), true)
        }
        let generation = try beginRekey()
        try RekeyPass(vault: self, generation: generation).run(progress: progress)
        return try endRekey(to: generation, passphrase: protection)
    }

    /// Moves the device-bound records to a fresh device root; see
    /// ``rekey(passphrase:newPassphrase:progress:)-96w2n``.
    @discardableResult
    public func rekey(
        passphrase: Passphrase,
        newPassphrase: Passphrase? = nil,
        progress: (@Sendable (RekeyProgress) -> Void)? = nil
    ) async throws(CofferError) -> RecoveryKey {
        try await offload { () throws(CofferError) in
            try self.rekey(passphrase: passphrase, newPassphrase: newPassphrase, progress: progress)
        }
    }

    /// Whether a rekey was begun and not ended (a run was interrupted): run
    /// ``rekey(passphrase:newPassphrase:progress:)-96w2n`` again to end it.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when locked.
    public var isRekeyInProgress: Bool {
        get throws(CofferError) { try pendingRekey() != nil }
    }
}
