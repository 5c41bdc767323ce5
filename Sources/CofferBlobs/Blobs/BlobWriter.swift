import Foundation

/// How a blob is written.
public struct BlobWriteOptions: Sendable, Hashable {
    /// Whether the blob travels to sync peers. Blobs are backups, so the default is ``SyncScope/syncable``.
    public var scope: SyncScope = .syncable
    /// When the blob can be read. The default, ``ProtectionLevel/afterFirstUnlock``, lets background
    /// work read it while the vault is locked (Apple's default for files, too).
    /// ``ProtectionLevel/completeUnlessOpen`` can be written with no key in memory (a locked vault,
    /// a write-only client); its content is deduplicated only within the write.
    public var protection: ProtectionLevel = .afterFirstUnlock
    /// The zstd level, 1 (fastest) to 19 (smallest); `nil` (the default) uses the vault's
    /// ``Vault/Configuration/compressionLevel``.
    public var compressionLevel: Int?

    /// Options with the defaults, changed by the arguments given.
    public init(
        scope: SyncScope = .syncable,
        protection: ProtectionLevel = .afterFirstUnlock,
        compressionLevel: Int? = nil
    ) {
        self.scope = scope
        self.protection = protection
        self.compressionLevel = compressionLevel
    }

    /// The accepted compression levels.
    public static let compressionLevels = ChunkRecord.Coder.compressionLevels
}

/// Called with the number of bytes done so far, from the thread doing the work.
public typealias BlobProgress = @Sendable (Int64) -> Void

/// Writes one blob: its content through a ``ContentSession``, then, in the session's final
/// transaction, its manifest, replacing any blob of the same name (in either scope). Until that
/// transaction nothing is visible.
package struct BlobWriter {
    package let vault: Vault
    package let keys: KeyRing
    package let name: String
    package let options: BlobWriteOptions
    package let progress: BlobProgress?

    package init(
        vault: Vault,
        keys: KeyRing,
        name: String,
        options: BlobWriteOptions,
        progress: BlobProgress?
    ) throws(CofferError) {
        try BlobManifest.validate(name: name)
        self.vault = vault
        self.keys = keys
        self.name = name
        self.options = options
        self.progress = progress
    }

    /// Stores everything `source` yields as the blob.
    package func write(from source: inout some ByteSource) throws(CofferError) -> BlobInfo {
        let staged = try stage(from: &source)
        return try staged.session.finish { txn, context in try staged.commit(txn, context) }
    }

    /// A blob whose content is stored (its chunks referenced by the session's `pending` entry) and
    /// whose manifest waits for the final transaction: ``commit`` writes it there, after the
    /// session's last batch (``ContentSession/finish(prepare:_:)``, or a ``VaultTransaction``'s).
    package struct StagedBlob {
        package let session: ContentSession<Void>
        /// Writes the manifest (replacing any blob of the name) and logs the change, in the final
        /// transaction; may run again in a fresh one.
        package let commit: (Transaction, ContentSession<Void>.CommitContext) throws -> BlobInfo
    }

    /// Streams everything `source` yields into a session, leaving the manifest for the final
    /// transaction. On failure the session is abandoned and nothing was stored.
    package func stage(from source: inout some ByteSource) throws(CofferError) -> StagedBlob {
        let result = SummaryBox()
        let writeKeys = options.protection.isSealedToClassKey ? try vault.writeKeys(for: options.scope) : nil
        // A handle that never held the vault's keys is a write-only client: it cannot name the blob
        // (the blob-name key), so the blob is filed under a random id, replacing nothing.
        let isDrop = writeKeys != nil && !keys.hasBeenUnlocked
        let session = try ContentSession<Void>(
            vault: vault,
            keys: keys,
            scope: options.scope,
            level: options.protection,
            writeKeys: writeKeys,
            compressionLevel: options.compressionLevel ?? vault.configuration.compressionLevel,
            hashesContents: true,
            progress: progress
        ) { (_, summary, _) throws(CofferError) in result.summary = summary }
        do {
            try session.add(&source, marker: ())
        } catch {
            throw session.abandoning(error)
        }
        let keys = keys
        let name = name
        let options = options
        return StagedBlob(session: session) { txn, context in
            guard let summary = result.summary, let digest = summary.digest else {
                throw CofferError(.internalError, "the write ended without its content's summary")
            }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let store = BlobStore(schema: session.store.schema)
            var manifest = BlobManifest(
                name: name,
                scope: options.scope,
                level: options.protection,
                size: summary.size,
                digest: digest,
                created: now,
                modified: now,
                chunkCount: summary.chunkCount,
                chunks: summary.chunks,
                write: writeKeys
            )
            let id: [UInt8]
            if isDrop {
                manifest.isDrop = true
                id = SecureRandom.bytes(count: 32)
                manifest.dropTag = Array(id.prefix(3)).hexEncoded
            } else {
                if let old = try store.lookup(name, keys: keys, cipher: context.coder.cipher, in: txn) {
                    manifest.created = old.manifest.created
                    try store.remove(id: old.id, manifest: old.manifest, keys: keys, coder: context.coder, in: txn)
                }
                id = try BlobManifest.id(of: name, scope: options.scope, keys: keys)
            }
            if writeKeys != nil {
                try Vault.markFormat(in: txn, schema: store.schema, atLeast: Schema.sealedToClassKeyFormatVersion)
            }
            try txn.put(
                store.schema.blobs,
                key: id,
                value: try manifest.seal(id: id, keys: keys, cipher: context.coder.cipher)
            )
            try ChangeLog.record(
                .blobPut,
                recordID: id,
                scope: manifest.scope,
                description: manifest.changeDescription,
                keys: keys,
                in: txn,
                schema: store.schema
            )
            return manifest.info
        }
    }

    /// Carries the summary from the committer thread to the final transaction (ordered by the
    /// session's wait).
    private final class SummaryBox: @unchecked Sendable {
        package var summary: ContentSummary?
    }
}
