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
    ///   file cannot be written (nothing is left behind), `.decode` when the data file's trees are
    ///   damaged (found by a walk of every page before anything is read).
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
        // An export reads every record and chunk: a damaged page is named here, not met inside LMDB.
        try refuseDamagedTrees(before: "exporting")
        let schema = schema
        // A peer without a cursor of its own, named for the group member this vault joined from,
        // starts where the join left off.
        let joinedFrom = try peer.flatMap { (peer) throws(CofferError) in try joinCursorName(for: peer) }
        let (summary, sentThrough) = try writeBundle(to: url, progress: progress) { txn in
            let cursors = PeerCursors(schema: schema)
            guard let peer,
                let sent = try cursors.load(peer, in: txn)?.sentThrough
                    ?? joinedFrom.flatMap({ try cursors.load($0, in: txn) })?.sentThrough
            else {
                return nil
            }
            // A device that missed one of this vault's bundles asked for its changes again.
            let resend = try SyncRequests(schema: schema).resendFrom(in: txn)
            return min(sent, resend ?? sent)
        }
        // A frozen group's bundle sends nothing: the peer's cursor stays where it was.
        if let peer, !summary.groupLogFull {
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
        excluding excluded: @escaping (Transaction) throws -> SequenceRanges = { _ in SequenceRanges() },
        cursor: @escaping (Transaction) throws -> UInt64?
    ) throws(CofferError) -> (ExportSummary, sentThrough: UInt64) {
        let (summary, sentThrough, _) = try writeBundle(
            to: url,
            progress: progress,
            excluding: excluded,
            notingSites: false,
            cursor: cursor
        )
        return (summary, sentThrough)
    }

    /// ``writeBundle(to:progress:excluding:cursor:)``, with `notingSites` also returning where each
    /// chunk record went in the stream (for a file that goes on to an object store: a compaction's
    /// checkpoint, with its records object written to `recordsObject`); without it the sites are
    /// empty and nothing is gathered.
    package func writeBundle(
        to url: URL,
        progress: SyncProgress?,
        excluding excluded: @escaping (Transaction) throws -> SequenceRanges = { _ in SequenceRanges() },
        notingSites: Bool,
        recordsObject: URL? = nil,
        unreadable: UnreadableChunks = .leaveOut,
        cursor: @escaping (Transaction) throws -> UInt64?
    ) throws(CofferError) -> (ExportSummary, sentThrough: UInt64, sites: BundleSites) {
        try refuseOwnFile(url, reading: false)
        let output = try FileOutput(path: url.path)
        let result = try writeBundle(
            into: { _ in output },
            progress: progress,
            excluding: excluded,
            notingSites: notingSites,
            recordsObject: recordsObject,
            unreadable: unreadable,
            cursor: cursor
        )
        try output.commit()
        return (result.summary, result.sentThrough, result.sites)
    }

    /// ``writeBundle(to:progress:excluding:cursor:)`` into the sink `makeSink` makes from the
    /// bundle's header (an upload, named by the header's sequences); returns the sink as the export
    /// left it, for the caller to finish.
    ///
    /// - Parameters:
    ///   - seeds: Called first in the export's read transaction: the salt and nonce prefix of an
    ///     interrupted export of exactly this state, to make the same bytes again, or `nil` for
    ///     fresh ones.
    ///   - recordsObject: With `notingSites`, where to write the bundle's records object
    ///     (``RecordsObject``), made in the same read transaction; a frozen group's bundle, which
    ///     holds no record, gets none.
    package func writeBundle<Sink: ByteSink>(
        into makeSink: @escaping (BundleHeader) throws -> Sink,
        progress: SyncProgress?,
        excluding excluded: @escaping (Transaction) throws -> SequenceRanges = { _ in SequenceRanges() },
        seeds: @escaping (Transaction) throws -> (salt: [UInt8], noncePrefix: [UInt8])? = { _ in nil },
        notingSites: Bool = false,
        recordsObject: URL? = nil,
        unreadable: UnreadableChunks = .leaveOut,
        cursor: @escaping (Transaction) throws -> UInt64?
    ) throws(CofferError) -> (summary: ExportSummary, sentThrough: UInt64, sink: Sink, sites: BundleSites) {
        // The membership log goes in the header (a vault without one starts it now), the stream is
        // sealed under the current epoch's key, and this device signs it.
        let group = try exportingGroup()
        let keys = try keyRing()
        let (schema, environment, identity, groupID) = (schema, environment, identity, syncGroupID)
        return try storage("exporting a bundle") {
            try environment.read { txn in
                let seeds = try seeds(txn)
                let cursor = try cursor(txn)
                // A frozen group gets no records: the bundle carries the log alone, covers no
                // change, and credits the receiver with nothing.
                let last = group.isFrozen ? cursor ?? 0 : try ChangeLog.lastSequence(in: txn, schema: schema)
                let resend = group.isFrozen ? nil : try SyncRequests(schema: schema).resendFrom(in: txn)
                let header = BundleHeader.fresh(
                    syncGroupID: groupID,
                    deviceID: identity.deviceID,
                    firstSequence: (cursor ?? 0) + 1,
                    lastSequence: last,
                    joinBlock: try Self.joinBlock(for: group, in: txn, schema: schema),
                    epoch: group.epoch,
                    log: group.log,
                    seeds: seeds
                )
                let writer = try BundleStreamWriter(
                    header: header,
                    key: try header.streamKey(syncRoot: group.root),
                    sink: CountingSink(try makeSink(header), progress: progress)
                )
                var exporter = try BundleExporter(
                    txn: txn,
                    environment: environment,
                    schema: schema,
                    keys: keys,
                    writer: writer
                )
                if notingSites { exporter.sites = [] }
                exporter.unreadableChunks = unreadable
                let excluded = try excluded(txn)
                func writeFrames<Output: ByteSink>(_ exporter: inout BundleExporter<Output>) throws {
                    if group.isFrozen {
                        // Nothing sealed.
                    } else if let cursor {
                        try exporter.writeChanges(after: cursor, excluding: excluded)
                    } else if !excluded.isEmpty {
                        // Everything the change log holds (every syncable record ever written), less
                        // what the store has already.
                        try exporter.writeChanges(after: 0, excluding: excluded)
                    } else {
                        try exporter.writeEverything()
                    }
                    if !group.isFrozen { try exporter.writeRequests() }
                }
                try writeFrames(&exporter)
                let sink = try exporter.finish(signer: group.signer)
                if let recordsObject, let bundleSites = exporter.sites, !group.isFrozen {
                    // The same records and requests, in the same order from the same transaction,
                    // with each chunk record's site in the bundle in its place. Best effort: a
                    // records object that cannot be written (a full disk) only means thin imports
                    // read the bundle.
                    let described = Result { () throws in
                        let recordsHeader = BundleHeader.fresh(
                            syncGroupID: groupID,
                            deviceID: identity.deviceID,
                            firstSequence: header.firstSequence,
                            lastSequence: header.lastSequence,
                            joinBlock: header.joinBlock,
                            epoch: group.epoch,
                            log: group.log,
                            seeds: nil
                        )
                        var describer = try BundleExporter(
                            txn: txn,
                            environment: environment,
                            schema: schema,
                            keys: keys,
                            writer: try BundleStreamWriter(
                                header: recordsHeader,
                                key: try recordsHeader.streamKey(syncRoot: group.root),
                                sink: try FileOutput(path: recordsObject.path)
                            )
                        )
                        describer.describing = BundleExporter.DescribedBundle(
                            sites: bundleSites,
                            sealedPerWrite: exporter.chunksSealedPerWrite
                        )
                        describer.unreadableChunks = unreadable
                        try describer.writeBinding(
                            try RecordsBinding(salt: header.salt, headerBytes: header.encoded, size: UInt64(sink.count))
                        )
                        try writeFrames(&describer)
                        try describer.finish(signer: group.signer).commit()
                    }
                    if case .failure = described { try? FileManager.default.removeItem(at: recordsObject) }
                }
                var summary = exporter.summary
                summary.groupLogFull = group.isFrozen
                summary.isIncremental = cursor != nil
                summary.resent = resend.map { cursor == $0 } ?? false
                summary.firstSequence = header.firstSequence
                summary.lastSequence = last
                summary.bytes = sink.count
                // A write in progress may have stored chunks its manifest (committed later) will need:
                // the receiver is credited only up to where that write began, so they go next time.
                let oldestWrite =
                    group.isFrozen ? nil : try PendingWrites(schema: schema).oldestBeginSequence(in: txn)
                let sites = BundleSites(
                    headerLength: UInt32(header.encoded.count),
                    segmentSize: UInt32(header.segmentSize),
                    size: UInt64(sink.count),
                    chunks: exporter.sites ?? []
                )
                return (summary, min(last, oldestWrite ?? last), sink.base, sites)
            }
        }
    }

    /// What an export needs of the group: its log, the current epoch and key, the join policy and
    /// this device's signing key.
    package struct ExportingGroup {
        package let log: [UInt8]
        package let epoch: KeyEpoch
        package let root: SecureBytes
        package let policy: GroupJoinPolicy
        package let signer: Ed25519PrivateKey
        /// Whether the group is frozen (``Vault/groupIsFrozen(_:in:)``): the bundle carries the log
        /// and no record.
        package let isFrozen: Bool
    }

    package func exportingGroup() throws(CofferError) -> ExportingGroup {
        let deviceKeys = try self.deviceKeys()
        let signer = deviceKeys.signing
        func exporting(_ context: GroupContext, frozen: Bool) throws(CofferError) -> ExportingGroup {
            let (epoch, root) = try context.sealingRoot()
            return ExportingGroup(
                log: context.log.encoded,
                epoch: epoch,
                root: root,
                policy: try context.state().policy,
                signer: signer,
                isFrozen: frozen
            )
        }
        // Usually the stored log is what goes out: read it without taking the writer's lock. Only a
        // vault without a log yet, or with keys to share, writes first. Whether the group is frozen
        // is read in the same transaction as the log.
        let roots = try unlockedRoots()
        let (stored, frozen) = try storage("reading the membership log") {
            try environment.read { txn in
                let context = try groupContext(in: txn, roots: roots, deviceKeys: deviceKeys)
                return (context, try Self.groupIsFrozen(context, in: txn, schema: schema))
            }
        }
        var probe = stored
        try probe.shareKeysTheLogLacks()
        if !stored.changed, !probe.changed {
            // Another process may have changed the group since this one last looked.
            try installGroupKeys(try stored.epochRoots(), group: syncGroupID)
            return try exporting(stored, frozen: frozen)
        }
        return try changeGroup("preparing the membership log") { (context, txn, schema) throws in
            try exporting(context, frozen: try Self.groupIsFrozen(context, in: txn, schema: schema))
        }
    }

    /// The join block a bundle carries: this vault's, while the group accepts passphrase joins and
    /// the block wraps the current epoch's key; none otherwise.
    private static func joinBlock(for group: ExportingGroup, in txn: Transaction, schema: Schema) throws -> [UInt8] {
        guard group.policy == .passphrase,
            let stored = try txn.get(schema.meta, key: Array(JoinBlock.metaKey.utf8)),
            let block = try? JoinBlock(decoding: stored), block.epoch == group.epoch
        else {
            return []
        }
        return stored
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
        try self.import(from: url, progress: progress, origin: nil)
    }

    /// ``import(from:progress:)-6f60g`` of a bundle pulled from the object store `origin` (its
    /// identity), whose changes are noted as held there already.
    package func `import`(from url: URL, progress: SyncProgress?, origin: String?) throws(CofferError) -> ImportSummary
    {
        try checkOpen()
        _ = try unlockedRoots()
        let file = try InputFile(path: url.path)
        var source = CountingSource(FileDescriptorSource(descriptor: file.descriptor), progress: progress)
        var summary = try importBundle(from: &source, origin: origin) { _ throws(CofferError) in }
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber
        summary.bytes = size?.int64Value ?? 0
        return summary
    }

    /// Imports the bundle `source` reads (a file, an object as it downloads), after `expect` has
    /// accepted its header; as ``import(from:progress:)-6f60g``, nothing is applied before the whole
    /// stream verifies.
    ///
    /// With `describing`, `source` is the records object (``RecordsObject``) of the bundle `object`,
    /// whose header is `describing.header` (`headerLength` bytes long): its first frame must bind it
    /// to that bundle, and its sites are noted in it.
    package func importBundle<Source: ByteSource>(
        from source: inout Source,
        origin: String?,
        object: (remote: String, key: String, size: UInt64)? = nil,
        describing: (header: BundleHeader, headerBytes: [UInt8])? = nil,
        expect: (BundleHeader) throws(CofferError) -> Void
    ) throws(CofferError) -> ImportSummary {
        try checkOpen()
        _ = try unlockedRoots()
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        try expect(header)
        var joined: JoinedBy?
        if try keyRing().isAwaitingJoin { joined = try completeJoin(from: header) }
        guard header.syncGroupID == syncGroupID else {
            throw CofferError(
                .param,
                "the bundle belongs to sync group \(header.syncGroupID.uuidString.lowercased()), but this vault is in "
                    + "sync group \(syncGroupID.uuidString.lowercased()); import it into a vault of its group, "
                    + "or join that group with \(InterfaceName.joinFromBundle)"
            )
        }
        let plan = try planImport(header)
        var stream = try BundleStreamReader(
            source: source,
            header: header,
            headerBytes: headerBytes,
            key: try header.streamKey(syncRoot: plan.root)
        )
        if plan.rootInDoubt, try !stream.opensFirstSegment() { throw plan.refusalForKeyInDoubt(epoch: header.epoch) }
        var frames = try BundleFrameReader(
            source: stream,
            signer: plan.signer,
            displacedSigners: plan.displacedSigners,
            headerBytes: headerBytes
        )
        try installGroupKeys(plan.importEpochs(current: try keyRing().currentEpoch(.sync)), group: syncGroupID)
        let keys = try keyRing()
        let binding = try describing.map { (described) throws(CofferError) in
            try RecordsBinding(
                salt: described.header.salt,
                headerBytes: described.headerBytes,
                size: object?.size ?? 0
            )
        }
        // The object the sites lie in: the bundle, read or described.
        let shape = describing ?? (header, headerBytes)
        var summary = try BundleImporter(
            vault: self,
            keys: keys,
            sequences: (header.firstSequence, header.lastSequence),
            group: plan,
            origin: origin,
            object: object.map {
                StoreObject(
                    remote: $0.remote,
                    key: $0.key,
                    size: $0.size,
                    headerLength: UInt32(shape.headerBytes.count),
                    segmentSize: UInt32(shape.header.segmentSize)
                )
            },
            describing: binding
        ).run(
            &frames,
            summary: ImportSummary(sourceDevice: header.deviceID)
        )
        try installGroupKeys(try plan.epochsAfter(), group: syncGroupID)
        summary.membershipChanged = plan.changesLog
        summary.groupLogFull = plan.leavesLogFull
        summary.joined = joined
        return summary
    }

    /// Creates a vault in `directory` that joins the sync group of `bundle`, then imports the bundle.
    ///
    /// The new vault shares the group's sync root (unwrapped from the bundle's join block with
    /// `passphrase`, the passphrase of the vault that exported it) and gets its own device root,
    /// device id and recovery key; `passphrase` protects it too (change it later with
    /// ``changePassphrase(to:)-1oil5``).
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
        return try createJoined(
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            group: try JoinedGroup(joining: header, passphrase: passphrase)
        ) { vault throws(CofferError) in
            let summary = try vault.import(from: bundle, progress: progress)
            try vault.recordJoinCursor(from: summary.sourceDevice)
            return summary
        }
    }

    /// The name of the peer cursor a join from `device`'s bundle leaves (``recordJoinCursor(from:)``).
    package static func joinCursorName(_ device: UUID) -> String { "joined-from:" + device.uuidString.lowercased() }

    /// Records that the device whose bundle this vault joined from holds everything the join brought
    /// (it sent it): the first `export --peer` to that device sends only what changed since.
    package func recordJoinCursor(from device: UUID) throws(CofferError) {
        let schema = schema
        try storage("recording where the join left off") {
            try environment.write { txn in
                let last = try ChangeLog.lastSequence(in: txn, schema: schema)
                try PeerCursors(schema: schema).record(Self.joinCursorName(device), sentThrough: last, in: txn)
            }
        }
    }

    /// The join cursor `peer` stands for: when `peer` names (by device name, or 8 or more digits of
    /// its id) the one group member this vault joined from, that member's join cursor.
    private func joinCursorName(for peer: String) throws(CofferError) -> String? {
        let peers = try syncPeers().map(\.name)
        // Only a first export to a peer looks further; the membership log is read only then.
        guard !peers.contains(peer) else { return nil }
        let cursors = peers.filter { $0.hasPrefix("joined-from:") }
        guard !cursors.isEmpty else { return nil }
        let lowered = peer.lowercased()
        // This device is never its own peer, and of several devices of one name (devices are named
        // by host name unless told otherwise, so two vaults on one machine share it) the one this
        // vault joined from is meant when it is the only one with a join cursor.
        let matching = try members().filter { member in
            !member.isThisDevice
                && (member.name == peer
                    || (lowered.count >= 8 && member.deviceID.uuidString.lowercased().hasPrefix(lowered)))
        }
        let joined = matching.map { Self.joinCursorName($0.deviceID) }.filter(cursors.contains)
        return joined.count == 1 ? joined[0] : nil
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
