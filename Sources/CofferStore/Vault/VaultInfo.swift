public import Foundation

/// A summary of a vault: identity, format, lock state, record counts and space used.
///
/// It is `Codable`; `coffer info --json` prints this structure.
public struct VaultInfo: Sendable, Codable, Equatable {
    /// The vault's directory.
    public let path: String
    /// The vault's id.
    public let vaultID: UUID
    /// This machine's id for the vault.
    public let deviceID: UUID
    /// The sync group's id.
    public let syncGroupID: UUID
    /// The on-disk format version.
    public let formatVersion: Int
    /// When the vault was created.
    public let createdAt: Date
    /// The passphrase KDF and its cost, e.g. `scrypt N=2^15 r=8 p=1`.
    public let kdf: String
    /// Whether the vault is locked.
    public let isLocked: Bool
    /// Keychain items stored.
    public let itemCount: Int
    /// Named blobs stored.
    public let blobCount: Int
    /// Distinct chunks stored (after deduplication).
    public let chunkCount: Int
    /// Snapshots stored.
    public let snapshotCount: Int
    /// Size of `data.mdb` on disk, in bytes.
    public let fileBytes: Int
    /// Bytes of `data.mdb` up to the last page ever written: the file's high-water mark, which
    /// deleting never lowers (see ``liveBytes`` and ``freeBytes``).
    public let usedBytes: Int
    /// Bytes in pages that hold data now.
    public let liveBytes: Int
    /// Bytes in pages deletes have freed: reused by later writes, and given back to the file system
    /// only by ``Vault/compactDataFile(at:)-8n6q4``.
    public let freeBytes: Int
    /// Current memory-map size in bytes (it grows on demand).
    public let mapBytes: Int
}

extension Vault {
    /// A summary of the vault. Available while locked: counts and sizes are not secret.
    ///
    /// - Throws: ``CofferError`` `.closed` after ``close()``.
    public func info() throws(CofferError) -> VaultInfo {
        try checkOpen()
        let kdf = try KDFRecord(decoding: try readMeta(MetaKey.kdf))
        let counts = try storage("reading the vault's counts") {
            try environment.read { txn in
                (
                    try txn.count(schema.items), try txn.count(schema.blobs), try schema.records.count(in: txn),
                    try Self.snapshotCount(in: txn, schema: schema)
                )
            }
        }
        let space = try storage("measuring the data file") { try environment.space() }
        return VaultInfo(
            path: directory.path,
            vaultID: id,
            deviceID: deviceID,
            syncGroupID: syncGroupID,
            formatVersion: formatVersion,
            createdAt: createdAt,
            kdf: kdf.parameters.description,
            isLocked: isLocked,
            itemCount: counts.0,
            blobCount: counts.1,
            chunkCount: counts.2,
            snapshotCount: counts.3,
            fileBytes: Int(space.fileBytes),
            usedBytes: Int(space.usedBytes),
            liveBytes: Int(space.liveBytes),
            freeBytes: Int(space.freeBytes),
            mapBytes: environment.mapSize
        )
    }
    /// The snapshots, not counting the parts of backups in progress (record version 6, which the
    /// unsealed header says: docs/FORMAT.md, "Backup parts").
    private static func snapshotCount(in txn: Transaction, schema: Schema) throws -> Int {
        var count = 0
        try txn.forEach(in: schema.snapshots) { _, value in
            if value.first != 6 { count += 1 }
            return true
        }
        return count
    }
}
