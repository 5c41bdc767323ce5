public import Foundation

/// Moving syncable records between the vaults of a sync group with bundle files (docs/ARCHITECTURE.md, "Sync";
/// docs/FORMAT.md "Bundles").
///
/// ```swift
/// // Machine A
/// try vaultA.export(to: URL(fileURLWithPath: "/media/usb/a.bundle"), peer: "laptop")
/// // Machine B, new: joins A's sync group and imports the bundle
/// let vaultB = try Vault.join(bundle: URL(fileURLWithPath: "/media/usb/a.bundle"),
///                             at: URL(fileURLWithPath: "/home/ann/.coffer"), passphrase: "correct horse")
/// // Later, both ways
/// try vaultB.import(from: URL(fileURLWithPath: "/media/usb/a2.bundle"))
/// ```
extension Vault {
    /// Writes a bundle of this vault's syncable records to `url`.
    ///
    /// Only syncable records are ever written; device-bound ones cannot be. Without `peer` (or for a
    /// peer not exported to before) the bundle holds everything syncable: items, blobs, snapshots,
    /// deletions and the chunks they use. With a known `peer` it holds only what changed since the
    /// last export to that peer, and the chunks stored since; the cost follows the changes, not the
    /// vault's size. The file is written under a temporary name, flushed and renamed, so a crash never
    /// leaves a partial bundle at `url`; memory stays bounded whatever the size.
    ///
    /// - Parameters:
    ///   - url: The bundle file to write (replaced if it exists).
    ///   - peer: The name of the vault or machine the bundle is for; makes the export incremental.
    ///   - progress: Called with the bytes written so far.
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if the vault is locked (the bundle is sealed
    ///   with a key of the sync root), `.param` for an unusable peer name, `.io` or `.diskFull` when the
    ///   file cannot be written (nothing is left behind).
    @discardableResult
    public func export(
        to url: URL,
        peer: String? = nil,
        progress: SyncProgress? = nil
    ) throws(CofferError)
        -> ExportSummary
    {
        try checkOpen()
        if let peer { try PeerCursors.validate(peer) }
        let schema = schema
        let (summary, sentThrough) = try writeBundle(to: url, progress: progress) { txn in
            guard let peer, let sent = try PeerCursors(schema: schema).load(peer, in: txn)?.sentThrough else {
                return nil
            }
            // A device that missed one of this vault's bundles asked for its changes again.
            let resend = try SyncRequests(schema: schema).resendFrom(in: txn)
            return min(sent, resend ?? sent)
        }
        if let peer {
            try storage("recording the export to peer '\(peer)'") {
                try environment.write { txn in
                    try PeerCursors(schema: schema).record(peer, sentThrough: sentThrough, in: txn)
                }
            }
        }
        var result = summary
        result.peer = peer
        return result
    }

    /// Writes a bundle to `url` of everything syncable, or, when `cursor` finds one inside the export's
    /// read transaction, of the changes after it; returns what was written and how far a receiver of
    /// it may be credited (held back to the oldest write in progress).
    package func writeBundle(
        to url: URL,
        progress: SyncProgress?,
        cursor: @escaping (Transaction) throws -> UInt64?
    ) throws(CofferError) -> (ExportSummary, sentThrough: UInt64) {
        let roots = try unlockedRoots()
        let keys = try keyRing()
        try refuseOwnFile(url, reading: false)
        var output = try OutputFile(path: url.path)
        let descriptor = output.descriptor
        let (schema, environment, identity) = (schema, environment, identity)
        let result = try storage("exporting a bundle") {
            try environment.read { txn in
                let last = try ChangeLog.lastSequence(in: txn, schema: schema)
                let cursor = try cursor(txn)
                let resend = try SyncRequests(schema: schema).resendFrom(in: txn)
                let header = BundleHeader.fresh(
                    syncGroupID: identity.syncGroupID,
                    deviceID: identity.deviceID,
                    firstSequence: (cursor ?? 0) + 1,
                    lastSequence: last,
                    joinBlock: try txn.get(schema.meta, key: Array(JoinBlock.metaKey.utf8)) ?? []
                )
                let writer = try BundleStreamWriter(
                    header: header,
                    key: try header.streamKey(syncRoot: roots.sync),
                    sink: CountingSink(FileDescriptorSink(descriptor: descriptor), progress: progress)
                )
                var exporter = try BundleExporter(
                    txn: txn,
                    environment: environment,
                    schema: schema,
                    keys: keys,
                    writer: writer
                )
                if let cursor { try exporter.writeChanges(after: cursor) } else { try exporter.writeEverything() }
                try exporter.writeRequests()
                let sink = try exporter.finish()
                var summary = exporter.summary
                summary.isIncremental = cursor != nil
                summary.resent = resend.map { cursor == $0 } ?? false
                summary.firstSequence = header.firstSequence
                summary.lastSequence = last
                summary.bytes = sink.count
                // A write in progress may have stored chunks its manifest (committed later) will need:
                // the receiver is credited only up to where that write began, so they go next time.
                let oldestWrite = try PendingWrites(schema: schema).oldestBeginSequence(in: txn)
                return (summary, min(last, oldestWrite ?? last))
            }
        }
        try output.commit()
        return (result.0, result.1)
    }

    /// Imports a bundle made by a vault of this sync group.
    ///
    /// The whole stream is verified before any record becomes visible; then, in one transaction, each
    /// record replaces this vault's version only if it is newer (last writer wins on a hybrid logical
    /// clock, the device id breaking ties; deletions too), so vaults that exchange bundles in any order
    /// converge. Importing the same bundle twice changes nothing. A damaged, truncated, reordered or
    /// spliced bundle, or one whose records need data this vault lacks, is refused and leaves the
    /// vault as it was.
    ///
    /// - Parameters:
    ///   - url: The bundle file.
    ///   - progress: Called with the bytes read so far.
    /// - Throws: ``CofferError`` `.param` for a file that is not a bundle or a bundle of another sync
    ///   group (naming both), `.decode` for a damaged or incomplete bundle, `.unsupportedFormat` for a
    ///   newer format, `.interactionNotAllowed` if the vault is locked.
    @discardableResult
    public func `import`(from url: URL, progress: SyncProgress? = nil) throws(CofferError) -> ImportSummary {
        try checkOpen()
        let roots = try unlockedRoots()
        let keys = try keyRing()
        let file = try InputFile(path: url.path)
        var source = CountingSource(FileDescriptorSource(descriptor: file.descriptor), progress: progress)
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        guard header.syncGroupID == syncGroupID else {
            throw CofferError(
                .param,
                "the bundle belongs to sync group \(header.syncGroupID.uuidString.lowercased()), but this vault is in "
                    + "sync group \(syncGroupID.uuidString.lowercased()); import it into a vault of its group, "
                    + "or join that group with coffer init --join"
            )
        }
        var frames = BundleFrameReader(
            source: try BundleStreamReader(
                source: source,
                header: header,
                headerBytes: headerBytes,
                key: try header.streamKey(syncRoot: roots.sync)
            )
        )
        var summary = try BundleImporter(
            vault: self,
            keys: keys,
            sequences: (header.firstSequence, header.lastSequence)
        ).run(
            &frames,
            summary: ImportSummary(sourceDevice: header.deviceID)
        )
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber
        summary.bytes = size?.int64Value ?? 0
        return summary
    }

    /// Creates a vault in `directory` that joins the sync group of `bundle`, then imports the bundle.
    ///
    /// The new vault shares the group's sync root (unwrapped from the bundle's join block with
    /// `passphrase`, the passphrase of the vault that exported it) and gets its own device root,
    /// device id and recovery key; `passphrase` protects it too (change it later with
    /// ``changePassphrase(to:)``).
    ///
    /// - Returns: The new vault, unlocked, and what the import did.
    /// - Throws: ``CofferError`` `.authFailed` for a wrong passphrase, `.param` for a file that is not
    ///   a bundle or a bundle without a join block, `.vaultExists` if `directory` is not empty, and
    ///   the errors of ``import(from:progress:)-6f60g``. On any error nothing is left in `directory`.
    public static func join(
        bundle: URL,
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration(),
        progress: SyncProgress? = nil
    ) throws(CofferError) -> (vault: Vault, summary: ImportSummary) {
        let header: BundleHeader
        do {
            let file = try InputFile(path: bundle.path)
            var source = FileDescriptorSource(descriptor: file.descriptor)
            header = try BundleHeader.read(from: &source).0
        }
        guard !header.joinBlock.isEmpty else {
            throw CofferError(.param, "the bundle carries no join block, so a new vault cannot join from it")
        }
        let join = try JoinBlock(decoding: header.joinBlock)
        let syncRoot = try join.syncRoot(passphrase: passphrase, syncGroupID: header.syncGroupID)
        return try createJoined(
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            group: JoinedGroup(id: header.syncGroupID, syncRoot: syncRoot)
        ) { vault throws(CofferError) in try vault.import(from: bundle, progress: progress) }
    }

    /// Creates a vault in `directory` in `group`, then fills it with `fill`, atomically: the vault
    /// directory appears only once both are done, so nothing is left in `directory` if either fails
    /// or the process is killed.
    package static func createJoined<Filled>(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration,
        group: JoinedGroup,
        fill: (Vault) throws(CofferError) -> Filled
    ) throws(CofferError) -> (vault: Vault, summary: Filled) {
        let (vault, filled) = try createAtomically(
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            joining: group,
            fill: fill
        )
        return (vault, filled)
    }

    /// The peers this vault has exported to, by name, with how far each has been sent.
    public func syncPeers() throws(CofferError) -> [SyncPeer] {
        try checkOpen()
        let schema = schema
        return try storage("listing the sync peers") {
            try environment.read { txn in try PeerCursors(schema: schema).all(in: txn) }
        }
    }
}
