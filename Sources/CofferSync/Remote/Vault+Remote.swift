public import Foundation

/// Sync through an S3-compatible object store: each vault pushes its changes as bundle objects and
/// pulls the other devices' (docs/FORMAT.md, "Remote layout"; docs/ARCHITECTURE.md, "Sync").
///
/// ```swift
/// let remote = S3Remote(try S3Location("s3://ann-sync/coffer"), credentials: try .fromEnvironment())
/// try laptop.push(to: remote)                       // uploads what changed since its last push
/// try desktop.pull(from: remote)                    // applies every other device's new bundles
/// let (phone, _) = try Vault.join(remote: remote, at: phoneDirectory, passphrase: "correct horse")
/// ```
///
/// Only encrypted bundles and small authenticated head objects are stored remotely; device-bound
/// records never leave, exactly as with bundle files.
extension Vault {
    /// Uploads the changes made since this vault's last push to `remote` as one bundle object, then
    /// this device's head object.
    ///
    /// The first push uploads everything syncable (and so lets new machines join from the remote);
    /// later ones only what changed since the head says was sent. The head is written last: a push
    /// that stops early (killed, network lost) leaves no visible trace, its object is removed by the
    /// next push, and nothing is skipped. The bundle is written to a temporary file, then uploaded in
    /// parts, so memory stays bounded whatever its size.
    ///
    /// - Parameters:
    ///   - remote: The object store and prefix.
    ///   - progress: Called with the bytes uploaded so far.
    /// - Returns: What was uploaded; `object` is `nil` when nothing had changed.
    /// - Throws: ``CofferError`` `.authFailed` when the store refuses the credentials, `.param` for a
    ///   missing bucket, `.io` when the store cannot be reached after retries, `.decode` for a head
    ///   object that does not verify (another group's, or altered), `.notTrusted` when this device
    ///   knows it was revoked, `.interactionNotAllowed` if the vault is locked.
    @discardableResult
    public func push(to remote: S3Remote, progress: SyncProgress? = nil) throws(CofferError) -> PushSummary {
        try push(to: remote, progress: progress, beforeHead: {})
    }

    /// ``push(to:progress:)-4qpe7`` with hooks where tests stop a push the way a crash would, or
    /// race another copy's push against it: after the last look at the head before the bundle
    /// appears, between the bundle's upload and the last look at the head before writing it, after
    /// that look, and after each part sent. Without `keepingPushed`, a vault that offloads to the
    /// store does not keep what it pushed in its cache (a backup's upload drops it itself).
    package func push(
        to remote: S3Remote,
        progress: SyncProgress?,
        beforeFinish: () throws(CofferError) -> Void = {},
        beforeHead: () throws(CofferError) -> Void,
        beforeHeadWrite: () throws(CofferError) -> Void = {},
        afterPart: @escaping (Int) throws(CofferError) -> Void = { _ throws(CofferError) in },
        keepingPushed: Bool = true
    ) throws(CofferError) -> PushSummary {
        var summary = try pushChanges(
            to: remote,
            progress: progress,
            beforeFinish: beforeFinish,
            beforeHead: beforeHead,
            beforeHeadWrite: beforeHeadWrite,
            afterPart: afterPart
        )
        // Changes of the group's that the store lost are written again (red team round 17, F1).
        try repairLostChanges(remote: remote, summary: &summary)
        // A vault that offloads to this store keeps within its cache budget what it just pushed.
        if keepingPushed, let settings = try offloadSettings(), settings.remote == remote.identity {
            _ = try dropOffloadableChunks(remote: remote.identity, keep: settings.keep)
        }
        return summary
    }

    /// Uploads this vault's changes and its head: the push, without the repair of what the store lost.
    private func pushChanges(
        to remote: S3Remote,
        progress: SyncProgress?,
        beforeFinish: () throws(CofferError) -> Void,
        beforeHead: () throws(CofferError) -> Void,
        beforeHeadWrite: () throws(CofferError) -> Void,
        afterPart: @escaping (Int) throws(CofferError) -> Void
    ) throws(CofferError) -> PushSummary {
        try checkOpen()
        _ = try unlockedRoots()
        // A device that knows it was revoked pushes nothing: its objects would be refused by every
        // member and would only lie in the store.
        let group = try members()
        if let me = group.first(where: { $0.deviceID == deviceID }), !me.isActive {
            throw CofferError(
                .notTrusted,
                "this device was revoked from its sync group (see \(InterfaceName.members)): it pushes nothing, and nothing was written to the store. Its records stay readable here; to sync again, make a new vault and ask a member to approve it, or, if no member you trust is left, found a new group with \(InterfaceName.startNewGroup)"
            )
        }
        // Nor does a device whose join its own log no longer counts: every member ignores its objects
        // (red team round 17, F3). A vault waiting for approval lists no member and may push.
        if !group.isEmpty, !group.contains(where: { $0.deviceID == deviceID }) {
            throw CofferError(
                .notTrusted,
                "\(Self.voidJoinCause), so no member would accept what it pushes: nothing was written to the store. Its records stay readable here; to rejoin, make a new vault on this machine from a bundle made now (\(InterfaceName.joinFromBundle)), or ask a member to approve a join request, and copy what you wrote here since into it"
            )
        }
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let schema = schema
        // The store's head of this device counts only when it is the one this vault last wrote; a
        // copy of this vault that finds another copy's head becomes a new device first, and pulls
        // the old device's changes like another device's.
        var own = try reconcileOwnHead(client: client, layout: layout, remote: remote)
        var notices = own.notices
        if own.undecided || own.copy != nil {
            // The pull merges the group's log, re-enrols, and brings the old device's changes.
            notices = try pull(from: remote).notices
            own = try reconcileOwnHead(client: client, layout: layout, remote: remote)
            notices += own.notices
            guard own.copy == nil else {
                throw CofferError(.internalError, "this copy of the vault could not enrol as a new device")
            }
            guard !own.undecided else {
                throw CofferError(
                    .keyUnavailable,
                    "this device's head in \(remote.location) is sealed in a key epoch of the sync group that this vault does not hold, even after pulling: another copy of this vault, which knows more of the group, wrote it. Nothing was pushed; import a bundle from a member (\(InterfaceName.importBundle)), then push again"
                )
            }
        }
        let device = deviceID
        let headKey = layout.headKey(device)
        // Until this vault has recorded the names of the bundles it writes here (its first push or
        // pull with a Coffer that keeps them), its folder is looked at before this push moves its
        // head on: another copy's bundle past or beside that head is told from its own only then.
        // Afterwards the names tell them apart at any pull, and a push lists nothing.
        let recorded = try storage("reading which bundles this vault wrote") {
            try environment.read { txn in
                try !OwnBundles(schema: schema, remote: remote.identity, device: device).isEmpty(in: txn)
            }
        }
        if let head = own.head, !recorded,
            let objects = layout.devices(in: try client.list(prefix: layout.folder(device) + "/"))[device]
        {
            var pulled = PullSummary(remote: remote.location.description)
            try applyOtherCopys(objects, beside: head, client: client, layout: layout, summary: &pulled)
            notices += pulled.notices
        }
        let origins = RemoteOrigins(schema: schema, remote: remote.identity)
        if own.resendAll {
            try storage("forgetting what the store held") {
                try environment.write { txn in try origins.forgetAll(in: txn) }
            }
        }
        // A bundle past the head, left by a push that never finished, is not deleted (pushes never
        // delete, so their credentials need not allow it): it moves no cursor before a head covers
        // it, and it holds only this device's changes, in versions no newer than those that
        // follow, so pulls that apply its records early change nothing. The push that retries the
        // same changes writes the same name over it; compaction removes the rest.

        // What pulls from this store brought is there already and is left out. What came from
        // devices that are no longer active members (revoked since, or whose join a closing voided
        // since) is logged again first: the others refuse those devices' bundles (red team round
        // 37: a voided join's records stayed with the members that had pulled them);
        // and so is what came from bundles signed with keys a device has replaced since (a copy
        // holding them may have pushed between its rekey and its next push), which the others skip:
        // the group converges (red team round 16).
        let members = try members()
        let active = Set(members.filter(\.isActive).map(\.deviceID))
        let signingKeys = Self.activeSigningKeys(among: members)
        let relogged = try storage("sending again what revoked or rekeyed devices pushed") { () throws -> Int in
            let (sources, rekeyed) = try environment.read { txn in
                (Set(try origins.load(in: txn).keys), try origins.rekeyedSources(current: signingKeys, in: txn))
            }
            let relogging = sources.subtracting(active).union(rekeyed)
            guard !relogging.isEmpty else { return 0 }
            return try environment.write { txn in try origins.relog(relogging, in: txn) }
        }
        // An upload an earlier push left unfinished goes on if the vault is exactly as that push
        // left it (the same export, made again with the same seeds, gives the same parts); else it
        // is abandoned and this push starts afresh.
        let identity = remote.identity
        let earlier = try storage("reading the upload in progress") {
            try environment.read { txn in try PendingUpload.load(in: txn, schema: schema, remote: identity) }
        }
        let resumable = earlier.flatMap { $0.unchanged ? $0.upload : nil }
        if let earlier, !earlier.unchanged { try abandon(earlier.upload, client: client) }
        let resuming = Locked(false)
        // This push's bundle is told from another copy's of the same name by its salt, drawn afresh.
        let salt = Locked<[UInt8]>([])

        // The bundle goes up as it is produced, part by part (no temporary file); it appears only
        // when the upload completes, and counts only once the head names it.
        let started = S3UploadSink.Started()
        // The bundle's records object is written beside it (a file until the bundle is up), for
        // thin imports (``RecordsObject``).
        let recordsFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-records-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: recordsFile) }
        var written: (summary: ExportSummary, sentThrough: UInt64, sink: S3UploadSink, sites: BundleSites)
        do throws(CofferError) {
            written = try writeBundle(
                into: { [environment] header in
                    let key = layout.bundleKey(device, .init(first: header.firstSequence, last: header.lastSequence))
                    salt.withLock { $0 = header.salt }
                    var journal = S3UploadSink.Journal()
                    journal.started = { uploadID throws(CofferError) in
                        var upload = PendingUpload(
                            key: key,
                            uploadID: uploadID,
                            salt: header.salt,
                            noncePrefix: header.noncePrefix
                        )
                        try storage("recording the upload in progress") {
                            try environment.write { txn in try upload.store(in: txn, schema: schema, remote: identity) }
                        }
                    }
                    journal.sentPart = { number, etag, digest throws(CofferError) in
                        try storage("recording the upload in progress") {
                            try environment.write { txn in
                                guard
                                    var upload = try PendingUpload.load(in: txn, schema: schema, remote: identity)?
                                        .upload
                                else { return }
                                upload.parts.append(PendingUpload.Part(etag: etag, digest: digest))
                                try upload.store(in: txn, schema: schema, remote: identity)
                            }
                        }
                        try afterPart(number)
                    }
                    let resumed = resuming.withLock { $0 } ? resumable : nil
                    return S3UploadSink(
                        client: client,
                        key: key,
                        progress: progress,
                        started: started,
                        resuming: resumed.map { ($0.uploadID, $0.parts) },
                        journal: journal
                    )
                },
                progress: nil,
                excluding: { txn in try origins.excluded(in: txn) },
                seeds: { txn in
                    // The same state, and the same bundle (its name from the same cursor and last change).
                    guard let upload = resumable, txn.snapshotID == upload.state else { return nil }
                    let last = try ChangeLog.lastSequence(in: txn, schema: schema)
                    let name = RemoteLayout.BundleName(first: (own.cursor ?? 0) + 1, last: last)
                    guard layout.bundleKey(device, name) == upload.key else { return nil }
                    resuming.withLock { $0 = true }
                    return (upload.salt, upload.noncePrefix)
                },
                notingSites: true,
                recordsObject: recordsFile,
                cursor: { _ in own.cursor }
            )
        } catch {
            // An upload the vault recorded is kept for the next push to resume (a network failure,
            // a full disk); one it did not record, or one that came out differently, goes.
            let recorded: PendingUpload? =
                (try? storage("reading the upload in progress") {
                    try environment.read { txn in try PendingUpload.load(in: txn, schema: schema, remote: identity) }
                })??.upload
            if let recorded, recorded.uploadID == started.uploadID {
                if error.code == .internalError { try? abandon(recorded, client: client) }
            } else {
                started.abort(with: client)
            }
            throw error
        }
        if let resumable, !resuming.withLock({ $0 }) { try abandon(resumable, client: client) }
        var export = written.summary
        export.resentFromRevoked = relogged
        var summary = PushSummary(remote: remote.location.description, export: export)
        summary.notices = notices
        if let lost = Self.lostChunksNotice(export.lostChunks, remote: remote) { summary.notices.append(lost) }
        // The membership log this bundle carries, and the one the last push carried.
        let logKey = Array("remote-log \(remote.identity)".utf8)
        let (logDigest, pushedDigest) = try storage("reading the membership log") {
            try environment.read { txn -> ([UInt8], [UInt8]?) in
                let log = try txn.get(schema.meta, key: Array(GroupContext.Meta.log.utf8)) ?? []
                return (try SHA256.hash(log), try txn.get(schema.meta, key: logKey))
            }
        }
        // Nothing to say: no change, no chunk another device asked for, nothing this vault asks for,
        // no membership change. (Such a bundle is smaller than a part: nothing was uploaded yet.)
        if own.head != nil, !own.mustWriteHead, export.records.total == 0, export.chunks == 0, export.wantedChunks == 0,
            export.resendRequests == 0, pushedDigest == logDigest
        {
            written.sink.abort()
            return summary
        }

        let name = RemoteLayout.BundleName(first: export.firstSequence, last: export.lastSequence)
        let key = layout.bundleKey(device, name)
        // Another copy of this vault that read the same head may have pushed meanwhile, under the
        // same bundle name, and been told its changes are in the store: finishing this upload would
        // put this bundle in their place. This push is dropped and starts again as a copy's.
        if try client.get(headKey) != own.bytes {
            written.sink.abort()
            return try pushChanges(
                to: remote,
                progress: progress,
                beforeFinish: beforeFinish,
                beforeHead: beforeHead,
                beforeHeadWrite: beforeHeadWrite,
                afterPart: afterPart
            )
        }
        do throws(CofferError) {
            try beforeFinish()
            try written.sink.finish()
        } catch {
            written.sink.abort()
            throw error
        }
        uploadRecordsObject(recordsFile, beside: key, bundleSize: written.sites.size, client: client)
        try beforeHead()
        // Pushes again, as what it finds itself then (a copy, once another copy is found).
        func pushAgain() throws(CofferError) -> PushSummary {
            try pushChanges(
                to: remote,
                progress: progress,
                beforeFinish: {},
                beforeHead: {},
                beforeHeadWrite: {},
                afterPart: afterPart
            )
        }
        // The other copy may also have pushed between that look and this one.
        let current = try client.get(headKey)
        if current != own.bytes {
            try overtaken(by: current, wrote: name, salt: salt.withLock { $0 }, client: client, layout: layout)
            return try pushAgain()
        }
        var record =
            try storage("reading the record of this vault's pushes") {
                try environment.read { txn in
                    try RemotePushRecord.load(device: device, remote: identity, in: txn, schema: schema)
                }
            } ?? RemotePushRecord(device: device)
        // The new head follows the one this push read when that was this vault's, else the last one
        // it wrote: another copy of the vault tells from the lineage where their histories part.
        let follows =
            [record.writing, record.pushed].compactMap { $0 }.first { own.head.map($0.matches) ?? false }
            ?? record.pushed
        let newHead = RemoteHead(
            device: device,
            sentThrough: written.sentThrough,
            latest: name,
            lineage: follows?.withLineage ?? []
        )
        let keys = try keyRing()
        let epoch = keys.currentEpoch(.sync)
        let headBytes = try newHead.encoded(
            epoch: epoch,
            root: try keys.root(.sync, epoch: epoch),
            signer: try deviceKeys().signing
        )
        // The record says which head this vault is writing before it goes up, so a push stopped
        // after the PUT still knows the head for its own.
        record.writing = RemotePushRecord.Head(newHead, salt: salt.withLock { $0 })
        try storage("recording the push") {
            try environment.write { txn in
                try record.store(remote: identity, in: txn, schema: schema)
                try OwnBundles(schema: schema, remote: identity, device: device).record([name], in: txn)
            }
        }
        try beforeHeadWrite()
        try client.put(headKey, body: headBytes)
        record.pushed = record.writing
        record.writing = nil
        // The head names the bundle now: its chunks lie in the store, where they can be read back.
        let sites = written.sites
        try storage("recording the push") {
            try schema.ensureStoreContent(in: environment)
            try environment.write { txn in
                _ = try txn.put(schema.meta, key: logKey, value: logDigest)
                _ = try txn.delete(schema.meta, key: PendingUpload.metaKey(identity))
                try record.store(remote: identity, in: txn, schema: schema)
                try BundleChunkSite.note(
                    sites.chunks,
                    in: sites.object(remote: identity, key: key),
                    schema: schema,
                    txn: txn
                )
            }
        }
        // Another copy's upload of the same name may have finished after this push's last look at
        // the head, and both heads went up unseen by the other's look: the head names this push's
        // bundle only while the object has its salt. Looked at once more now that the head is up,
        // so that a push that returns has its changes in the store (red team round 20, R20-2); if
        // not, the next attempt finds this vault a copy, re-enrols it and sends its changes again.
        if name.first <= name.last,
            let stored = try storedBundleSalt(name, client: client, layout: layout), !stored.isEmpty,
            stored != salt.withLock({ $0 })
        {
            return try pushAgain()
        }
        summary.resumedParts = written.sink.reusedParts
        summary.object = key
        return summary
    }

    /// What a push, export or checkpoint that left out `count` offloaded chunks the store no longer
    /// gives says of them, or `nil` when there were none.
    package static func lostChunksNotice(_ count: Int, remote: S3Remote?) -> String? {
        guard count > 0 else { return nil }
        let store = remote.map { " \($0.location)" } ?? ""
        return
            "\(count) chunk\(count == 1 ? "" : "s") this vault offloaded could not be read from the store\(store) (no object it knows of holding \(count == 1 ? "it" : "them") is listed, or every one is damaged) and \(count == 1 ? "was" : "were") left out; the rest went. \(run: .pull) looks for \(count == 1 ? "it" : "them") in the store's other objects; \(InterfaceName.verifyReadingData) names the content that uses \(count == 1 ? "it" : "them"), which other devices receive only from a device that holds it whole."
    }

    /// Abandons an upload an earlier push left (best effort at the store, which expires it anyway)
    /// and forgets it.
    private func abandon(_ upload: PendingUpload, client: S3Client) throws(CofferError) {
        client.abortUpload(upload.key, uploadID: upload.uploadID)
        let (schema, identity) = (schema, client.remote.identity)
        try storage("forgetting the upload") {
            try environment.write { txn in
                guard let stored = try PendingUpload.load(in: txn, schema: schema, remote: identity)?.upload,
                    stored.uploadID == upload.uploadID
                else { return }
                _ = try txn.delete(schema.meta, key: PendingUpload.metaKey(identity))
            }
        }
    }

    /// Downloads and imports, device by device and in order, every bundle the other devices have
    /// pushed to `remote` since this vault's last pull from it.
    ///
    /// Each bundle is verified whole before any of its records is applied, and applied with last
    /// writer wins, so pulls in any order converge and a repeated pull changes nothing. A bundle
    /// past its device's head (a push still running or killed, or another copy's push whose head was
    /// overwritten) moves no cursor; its records are applied once, after the device's others.
    ///
    /// - Parameters:
    ///   - remote: The object store and prefix.
    ///   - progress: Called with the bytes downloaded so far.
    /// - Throws: ``CofferError`` `.decode` naming the object for a damaged bundle or head (bundles
    ///   applied before it stay applied; the damaged one changes nothing), and the errors of
    ///   ``push(to:progress:)-4qpe7``.
    @discardableResult
    public func pull(from remote: S3Remote, progress: SyncProgress? = nil) throws(CofferError) -> PullSummary {
        try pull(from: remote, progress: progress, afterListing: {})
    }

    /// ``pull(from:progress:)-1vcpy`` with a hook after each listing, where tests run a compaction
    /// that deletes what the pull has just listed.
    package func pull(
        from remote: S3Remote,
        progress: SyncProgress?,
        afterListing: () throws(CofferError) -> Void
    ) throws(CofferError) -> PullSummary {
        try checkOpen()
        _ = try unlockedRoots()
        // A vault that offloads to this store reads from it as it imports (``BundleImporter``).
        if let settings = try offloadSettings(), settings.remote == remote.identity,
            schema.offloadedChunks?.remote != remote.identity
        {
            try attachObjectStore(remote)
        }
        // A compaction running meanwhile may delete a bundle this pull listed: the next attempt
        // finds the checkpoint that holds it.
        var attempt = 0
        while true {
            attempt += 1
            do {
                var summary = try pullOnce(from: remote, progress: progress, afterListing: afterListing)
                // Where offloaded chunks lie now (a compaction may have moved them), and the cache
                // budget kept.
                summary.notices += try refreshStoreSites(remote: remote)
                return summary
            } catch  where error.code == .itemNotFound && attempt < 4 {
                // An object gone may also be where offloaded chunks the import reads lay: they are
                // found again in the checkpoints before the next attempt.
                _ = try refreshStoreSites(remote: remote, keepingBudget: false)
                continue
            }
        }
    }

    private func pullOnce(
        from remote: S3Remote,
        progress: SyncProgress?,
        afterListing: () throws(CofferError) -> Void
    ) throws(CofferError) -> PullSummary {
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let cursors = PulledCursors(schema: schema, remote: remote.identity)
        let environment = environment
        var summary = PullSummary(remote: remote.location.description)
        let listing = try client.list(prefix: layout.listingPrefix)
        try afterListing()
        let devices = layout.devices(in: listing)
        if try keyRing().isAwaitingJoin {
            try joinApproved(
                devices: devices,
                listing: listing,
                client: client,
                layout: layout,
                origin: remote.identity
            )
        }
        // What the store says of the group comes first: revocations and keys that any object there
        // carries count before this pull judges or opens anything (red team round 18).
        let awaiting = try keyRing().isAwaitingJoin
        if !awaiting {
            try learnMembershipFromHeaders(listing, client: client, layout: layout)
            try refuseIfOutOfGroup()
        }
        // A copy of this vault that finds another copy's head becomes a new device once this pull has
        // merged the group's log, and then pulls the old device's changes (its own earlier ones among
        // them) like another device's.
        let own =
            devices[deviceID]?.hasHead == true && !awaiting
            ? try reconcileOwnHead(client: client, layout: layout, remote: remote, pushing: false, listing: listing)
            : nil
        var copy = own?.copy
        // A revoked device may go on pushing; its records are refused, so its bundles are not pulled
        // (only its newest one's log is read, below).
        let revoked = Set(try members().filter { !$0.isActive }.map(\.deviceID))
        let heads = HeadReads(client: client, layout: layout)
        let ownClaims = try applyCheckpoints(
            listing,
            client: client,
            layout: layout,
            remote: remote,
            revoked: revoked,
            heads: heads,
            summary: &summary
        )
        let applied = try storage("reading how far this vault has pulled") {
            try environment.read { txn in try cursors.load(in: txn) }
        }
        // A device admitted by another whose own admission this vault has yet to learn (a join that
        // lost a log fork, an added device's adder) is tried again after the others.
        func pullDevice(_ device: UUID, _ objects: RemoteLayout.DeviceObjects) throws(CofferError) {
            let headKey = layout.headKey(device)
            guard let bytes = try heads.bytes(of: device) else { return }
            let (trusted, imported) = try pulledHead(
                bytes,
                key: headKey,
                device: device,
                objects: objects,
                client: client,
                layout: layout,
                origin: remote.identity
            )
            guard case .success(let head) = trusted else {
                // A head its device did not write (forged with an old epoch's key) counts for nothing.
                if case .failure(let error) = trusted {
                    summary.notices.append("Ignored device \(device.uuidString.lowercased())'s head: \(error.message).")
                }
                return
            }
            summary.devices += 1
            // A head behind what this vault applied: the device's history in the store was set back
            // (a rolled-back store, or two copies of one vault that wrote one bundle name), and what
            // comes after it is applied again. So does a head that parted from the last one pulled
            // (the device restored from an older copy while the store was rolled back to the same
            // moment, then pushing on), from where they parted: its new changes reuse the numbers of
            // those pulled past it. What this vault pulled of the device past that point is no
            // longer in the store: it is logged again, so this vault's next push sends it (else the
            // restored device never got its own records back, a newcomer never had them, and its
            // new write was skipped, then compacted away: red team round 35, F2).
            var applied = applied
            let pulledThrough = applied[device] ?? 0
            // A head older than a cut the device signed, on the same history, was put back (the
            // store rolled back, or the head alone): the device's own cut vouches for the changes
            // past it, and the checkpoint holds them (red team round 44, F3).
            let ownClaim = ownClaims[device] ?? 0
            if ownClaim > head.latest.last {
                summary.notices.append(
                    "Device \(device.uuidString.lowercased())'s head at \(remote.location) says it pushed its changes through \(head.latest.last), but a checkpoint cut it signed names them through \(ownClaim): the store holds an older head of it (the store was rolled back, or the head put back), or someone holding the device's keys signed a cut claiming more than it pushed. This pull took the changes between from a checkpoint that holds them, or says it waits for them; the device's next push writes a new head."
                )
            }
            // Read first: a pull writes (and syncs) only when the head did go back.
            let (parted, relogged) = try storage("recording the pull of \(device)") { () throws -> (UInt64?, Int) in
                let back = try environment.read { txn -> UInt64? in
                    let back = min(head.latest.last, try cursors.partingPoint(of: head, in: txn) ?? .max)
                    if back == head.latest.last && ownClaim >= pulledThrough { return nil }
                    return back < pulledThrough ? back : nil
                }
                guard let back else { return (nil, 0) }
                return try environment.write { txn in
                    try cursors.lower(device, to: back, in: txn)
                    return (back, try RemoteOrigins(schema: schema, remote: remote.identity).relog([device], in: txn))
                }
            }
            if let parted {
                applied[device] = parted
                summary.notices.append(
                    "Device \(device.uuidString.lowercased())'s head at \(remote.location) went back: this vault pulled its changes through \(pulledThrough) from there, and the head now says \(head.latest.last)\(parted < head.latest.last ? ", on a history that parted from those after \(parted)" : ""). The store was rolled back, or the device was restored from an older copy of its vault; "
                        + (relogged > 0
                            ? "this vault's next push sends again the records it pulled from the device (\(relogged)), and it pulls the device's changes after \(parted) again."
                            : "this vault pulls the device's changes after \(parted) again.")
                )
            }
            var due = objects.bundles.filter { $0.last <= head.latest.last && $0.last > applied[device] ?? 0 }
            // A push with no new change but chunks others asked for, or requests of its own, is named
            // past its last change and replaced by the next such push: applied once per object.
            let latest = head.latest
            let latestTag = objects.etags[latest] ?? ""
            let answered = try storage("reading how far this vault has pulled") {
                try environment.read { txn in try cursors.latestApplied(of: device, in: txn) }
            }
            // The head's latest bundle is applied once per object, by its tag, though it brings no
            // change past the cursor: an answer-only bundle, or a push that sent the device's changes
            // again from the start (after its rekey), which another copy's object of the same `last`
            // would otherwise hide (red team round 15, N2).
            let answerOnly = latest.first > latest.last
            let unseen = latestTag.isEmpty ? answerOnly : latestTag != answered
            if objects.bundles.contains(latest), !due.contains(latest), unseen,
                !answerOnly || latest.last >= applied[device] ?? 0
            {
                due.append(latest)
            }
            // From the cursor on, by first change: a bundle of an earlier history left beside one
            // that starts at the cursor (a device that sent everything again after its head was put
            // back) must neither hide that one nor move the cursor past what it holds. An answer-only
            // bundle (named past its last change) comes after the bundles up to it.
            func start(_ name: RemoteLayout.BundleName) -> UInt64 { min(name.first, name.last + 1) }
            let ordered = due.sorted { (start($0), $0.last) < (start($1), $1.last) }
            // Changes between this vault's cursor and the first bundle due are in no object it can
            // use: a checkpoint that held them stopped counting, or was ignored. Applying what comes
            // after would move the cursor past them for good; the device waits for a checkpoint that
            // holds them (the next push of a member that has them writes one).
            // Not when this pull imported the checkpoint that holds them and refused some of its
            // records for their clock: what came after is applied (the cursor stays, below), as
            // when a bundle's records are refused (third outside test of the clock fix, F2).
            let refusedInCheckpoint = summary.devicesAhead[device] != nil
            if !refusedInCheckpoint, let first = ordered.first(where: { $0.first <= $0.last }),
                first.first > (applied[device] ?? 0) + 1
            {
                // (Named already when a checkpoint holding them could not be used.)
                guard !summary.waitingDevices.contains(device) else { return }
                summary.noteWaiting(device)
                summary.notices.append(
                    "Waiting for changes \((applied[device] ?? 0) + 1)-\(first.first - 1) of device \(device.uuidString.lowercased()): the store holds them in no bundle or checkpoint that counts (their bundles are gone, and a checkpoint that held them stopped counting or was ignored); this vault applies the device's later changes once a checkpoint holds them, which the next push of a member that has them writes."
                )
                return
            }
            // With every bundle of the device gone and no checkpoint that counts bringing its changes
            // up to its head, no later bundle shows the gap: the pull must not say it is complete
            // while this vault lacks them (red team rounds 43 and 44, F3).
            if !ordered.contains(where: { $0.first <= $0.last }), head.latest.last > applied[device] ?? 0 {
                // (Named already when a checkpoint that held them could not be used.)
                guard !summary.waitingDevices.contains(device) else { return }
                summary.noteWaiting(device)
                summary.notices.append(
                    "Waiting for changes \((applied[device] ?? 0) + 1)-\(head.latest.last) of device \(device.uuidString.lowercased()): its head says it pushed them, and the store holds them in no bundle or checkpoint that counts (their bundles are gone or were never uploaded, and no checkpoint that counts holds them); the next push of a member that has them writes them again, and a later pull applies them."
                )
                return
            }
            if let imported, imported.name != ordered.first {
                // Imported ahead of older bundles: what it applied counts, though it comes again below.
                summary.applied.add(imported.summary.applied)
                summary.bytes += imported.summary.bytes
            }
            // A bundle that cannot be applied (damaged, planted by someone who may write to the
            // store, or sealed in a key epoch this vault does not hold) holds up the device's later
            // changes only when no other listed bundle goes on from where this pull got to: a planted
            // object overlapping the device's real bundles must not stop them (red team round 24, F1).
            var reached = applied[device] ?? 0
            var stuck: (key: String, name: RemoteLayout.BundleName, error: CofferError)?
            // Once a bundle had records refused for clock stamps ahead of this machine's clock, the
            // cursor stays before it, so the next pulls import it again until they apply, and no
            // compaction here deletes it (final outside test of issue 37, F2: the cursor moved on,
            // and the records were lost to every other device).
            var refusedAhead = refusedInCheckpoint
            for name in ordered {
                if stuck != nil, name.first <= name.last, name.first > reached + 1 { break }
                let key = layout.bundleKey(device, name)
                let before = summary.bytes
                // The newest bundle may have been imported already, to check the head: not again when
                // it was the first due (after older ones, again, which closes the gap it opened).
                var done = imported.flatMap { $0.name == name && name == ordered.first ? $0.summary : nil }
                if done == nil {
                    do throws(CofferError) {
                        done = try pullBundle(key, from: client, origin: remote.identity, expecting: (device, name)) {
                            bytes in progress?(before + bytes)
                        }
                    } catch  where SupersededKeys.caused(error) {
                        // Pushed before the device's rekey: its push after the rekey sends the same
                        // changes again under the new keys (red team round 14, F7).
                        summary.notices.append(
                            "Skipped \(key): it is signed with keys device \(device.uuidString.lowercased()) has replaced (pushed before its rekey, or planted by a copy still holding those keys); the device's first push after its rekey sends its changes again under the new keys."
                        )
                        continue
                    } catch  where error.code == .param || error.code == .decode || error.code == .keyUnavailable {
                        if stuck == nil { stuck = (key, name, error) }
                        continue
                    } catch  where error.code == .notTrusted {
                        // Refused for what its header's membership log says: this vault may be out of
                        // the group (that refuses the pull), or the log is altered (a signature that
                        // does not verify), which is damage like any other: one flipped byte there
                        // must not stop every pull (found by the copies model's store adversary).
                        try refuseIfOutOfGroup()
                        if stuck == nil { stuck = (key, name, error) }
                        continue
                    }
                }
                guard let imported = done else { continue }
                summary.bundles.append(PulledBundle(object: key, imported: imported))
                summary.applied.add(imported.applied)
                summary.bytes += imported.bytes
                refusedAhead = refusedAhead || imported.refusedFutureRecords > 0
                if !refusedAhead {
                    try storage("recording the pull of \(key)") {
                        try environment.write { txn in
                            try cursors.record(device, through: name.last, in: txn)
                            if name == latest { try cursors.recordLatestApplied(latestTag, of: device, in: txn) }
                        }
                    }
                }
                reached = max(reached, name.last)
            }
            if let stuck, stuck.name.last > reached {
                // Sealed in an epoch this vault lacks: it waits for the key (pullDeviceOrWait).
                if stuck.error.code == .keyUnavailable { throw stuck.error }
                // A damaged object (cut short, or overwritten by someone who may write to the store)
                // holds up this device's later changes, not everyone's (red team round 19, N3).
                summary.noteWaiting(device)
                summary.notices.append(
                    "Stopped at \(stuck.key): \(stuck.error.message). Device \(device.uuidString.lowercased())'s changes from \(reached + 1) wait here: applying later ones would step over those this object should hold, which the store no longer has. A compaction by a device that holds them (\(InterfaceName.compactRemote) on that device, or on any member that pulled them before) writes a checkpoint that holds them again, and the next pull goes on from it."
                )
                return
            } else if let stuck {
                summary.notices.append(
                    "Passed over \(stuck.key): \(stuck.error.message). The device's other bundles hold every change it names."
                )
            }
            // Reached the head: later heads are told from it (``PulledCursors/partingPoint(of:in:)``).
            // Not one its device's own cut shows was put back: the head it replaced stays the one.
            try storage("recording the pull of \(device)") {
                guard ownClaim <= head.latest.last else { return }
                guard try !environment.read({ txn in try cursors.hasRecorded(head, in: txn) }) else { return }
                try environment.write { txn in try cursors.recordHead(head, in: txn) }
            }
            let offChain = objects.bundles.filter { $0.isPast(head) }
            try applyOffChain(offChain, of: device, objects, client: client, layout: layout, summary: &summary)
        }
        // Objects sealed in a key epoch this vault does not hold yet (a member that rekeyed since
        // the one that admitted it last synced) hold up their device's changes, not everyone's
        // (red team round 19, N4).
        func pullDeviceOrWait(_ device: UUID, _ objects: RemoteLayout.DeviceObjects) throws(CofferError) {
            do throws(CofferError) {
                try pullDevice(device, objects)
            } catch  where error.code == .keyUnavailable {
                summary.noteWaiting(device)
                summary.notices.append(
                    "Waiting for device \(device.uuidString.lowercased())'s changes: \(error.message). The other devices' changes were pulled; a later pull applies this device's once a member seals its key epoch to this vault, which its next push does."
                )
            }
        }
        var deferred: [(UUID, RemoteLayout.DeviceObjects)] = []
        for (device, objects) in devices.sorted(by: { $0.key.uuidString < $1.key.uuidString })
        where device != deviceID && objects.hasHead {
            if revoked.contains(device) {
                summary.revokedDevices.append(device)
                if objects.bundles.contains(where: { $0.last > applied[device] ?? 0 }) {
                    summary.revokedDevicesNotApplied.append(device)
                }
                continue
            }
            let unknown = try !knowsDevice(device)
            do throws(CofferError) {
                try pullDeviceOrWait(device, objects)
            } catch  where unknown && error.code == .notTrusted {
                deferred.append((device, objects))
            }
        }
        while !deferred.isEmpty {
            var failed: [(UUID, RemoteLayout.DeviceObjects)] = []
            var refusal: CofferError?
            for (device, objects) in deferred {
                do throws(CofferError) {
                    try pullDeviceOrWait(device, objects)
                } catch  where error.code == .notTrusted {
                    failed.append((device, objects))
                    refusal = error
                }
            }
            // What stays refused once every other device was applied comes from devices this vault
            // has no admission for (a join without effect, a forger): their objects are ignored and
            // reported, and never stop the pull of everyone else's.
            if refusal != nil, failed.count == deferred.count {
                for (device, _) in failed {
                    summary.notices.append(
                        "Ignored device \(device.uuidString.lowercased())'s records for now: this vault knows no admission of it (its approval has not reached this vault yet, its join no longer counts, or the objects are forged), though it kept what the device's membership log says about the group that has effect; a later pull applies the records once the device's admission arrives."
                    )
                }
                break
            }
            deferred = failed
        }
        // Another copy of this vault whose head this vault's overwrote left its bundle beside this
        // vault's: the other devices apply it, and so does this vault, or it alone would lack what
        // the copy wrote.
        if let head = own?.head, own?.copy == nil, let objects = devices[deviceID] {
            try applyOtherCopys(objects, beside: head, client: client, layout: layout, summary: &summary)
        }
        // A revoked device's log may still carry revocations that stand (it revoked a member at the
        // same moment it was revoked): each one's newest bundle is opened for its log alone, which
        // every import keeps, and its records are refused.
        let revokedNow = Set(try members().filter { !$0.isActive }.map(\.deviceID))
        for (device, objects) in devices where device != deviceID && revokedNow.contains(device) {
            guard let newest = objects.bundles.max() else { continue }
            _ = try? pullBundle(
                layout.bundleKey(device, newest),
                from: client,
                origin: remote.identity,
                expecting: (device, newest)
            ) { _ in }
        }
        // A head sealed in an epoch this vault lacked (another copy of it, restored from an older
        // backup, knows more of the group) is checked again now that the others' logs gave the key.
        if own?.undecided == true {
            copy = try reconcileOwnHead(client: client, layout: layout, remote: remote, pushing: false).copy
        }
        guard let copy else { return summary }
        let notice = try reenrol(copy, remote: remote)
        var next = try pullOnce(from: remote, progress: progress, afterListing: afterListing)
        next.notices = summary.notices + [notice] + next.notices
        next.bundles = summary.bundles + next.bundles
        next.applied.add(summary.applied)
        next.bytes += summary.bytes
        next.checkpoints = summary.checkpoints + next.checkpoints
        next.devices = max(next.devices, summary.devices)
        return next
    }

    /// Completes the join of a vault waiting for approval from the first device whose newest bundle
    /// carries the approval (the heads cannot be checked before: this vault holds no group key yet).
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when no pushed bundle approves this device yet.
    private func joinApproved(
        devices: [UUID: RemoteLayout.DeviceObjects],
        listing: [S3Object],
        client: S3Client,
        layout: RemoteLayout,
        origin: String
    ) throws(CofferError) {
        var refusal: CofferError?
        // A checkpoint carries the membership log of the device that wrote it.
        for (id, state) in layout.checkpoints(in: listing).sorted(by: { $0.key > $1.key })
        where state.hasCut && state.hasBundle {
            switch Result(catching: { () throws(CofferError) in
                try pullCheckpoint(layout.checkpointBundleKey(id), client: client, origin: origin)
            }) {
            case .success: return
            case .failure(let error): refusal = error
            }
        }
        for (device, objects) in devices.sorted(by: { $0.key.uuidString < $1.key.uuidString }) where device != deviceID
        {
            guard let newest = objects.bundles.max() else { continue }
            switch Result(catching: { () throws(CofferError) in
                try pullBundle(
                    layout.bundleKey(device, newest),
                    from: client,
                    origin: origin,
                    expecting: (device, newest)
                ) { _ in }
            }) {
            case .success: return
            case .failure(let error): refusal = error
            }
        }
        throw refusal
            ?? CofferError(
                .notTrusted,
                "this vault is waiting for approval to join a sync group, and no device has pushed to this remote yet; ask a member to approve it (\(InterfaceName.approve)) and push"
            )
    }

    /// The head a pull follows. One under an epoch this vault does not hold yet, or of a device its
    /// membership log does not know yet, is checked again after the device's newest bundle, whose
    /// membership log may seal that epoch's key to this device, admit the device (or tell this vault
    /// it was revoked), has been imported (returned with the head, so the pull does not import it
    /// again). A head no active member signed is the failure (`.notTrusted`) the pull reports and
    /// ignores; anything else is thrown.
    private func pulledHead(
        _ bytes: [UInt8],
        key: String,
        device: UUID,
        objects: RemoteLayout.DeviceObjects,
        client: S3Client,
        layout: RemoteLayout,
        origin: String
    ) throws(CofferError) -> (
        head: Result<RemoteHead, CofferError>, imported: (name: RemoteLayout.BundleName, summary: ImportSummary)?
    ) {
        // A head that is no head at all (cut short, or written by something else) counts for
        // nothing, as a forged one: it must not stop the pull of every other device's objects.
        func ignorable(_ error: CofferError) -> Bool { error.code == .notTrusted || error.code == .decode }
        func trusted() throws(CofferError) -> Result<RemoteHead, CofferError> {
            let result = Result { () throws(CofferError) in try trustedHead(bytes, key: key, device: device) }
            if case .failure(let error) = result, !ignorable(error) { throw error }
            return result
        }
        switch Result(catching: { () throws(CofferError) in try trustedHead(bytes, key: key, device: device) }) {
        case .success(let head):
            return (.success(head), nil)
        case .failure(let error):
            let known = try knowsDevice(device)
            // The object the head names, when it is there: after a rekey, a copy holding the old keys
            // may have pushed an object named after it (red team round 15, N2).
            let claimed = RemoteHead.claimedLatest(of: bytes).flatMap { objects.bundles.contains($0) ? $0 : nil }
            guard error.code == .keyUnavailable || (error.code == .notTrusted && !known),
                let newest = claimed ?? objects.bundles.max()
            else {
                if ignorable(error) { return (.failure(error), nil) }
                throw error
            }
            let name = layout.bundleKey(device, newest)
            let imported: ImportSummary
            do throws(CofferError) {
                imported = try pullBundle(name, from: client, origin: origin, expecting: (device, newest)) { _ in }
            } catch  where ignorable(error) || error.code == .param {
                // No object of a device this vault knows nothing of (not even a bundle), or a damaged
                // one: the head counts for nothing, and the rest of the pull goes on (red team round 18).
                return (.failure(error), nil)
            }
            return (try trusted(), (newest, imported))
        }
    }

    /// Uploads the records object `file` beside the bundle `bundleKey` when it is worth storing
    /// (``RecordsObject/isWorthStoring(size:beside:)``); not for an answer-only bundle, which the
    /// next push writes over. Best effort: without it, thin imports read the bundle.
    func uploadRecordsObject(_ file: URL, beside bundleKey: String, bundleSize: UInt64, client: S3Client) {
        guard !isReplaceable(bundleKey), let key = RecordsObject.key(forBundle: bundleKey),
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size]) as? NSNumber,
            RecordsObject.isWorthStoring(size: size.int64Value, beside: Int64(bundleSize))
        else { return }
        _ = try? client.upload(file: file.path, to: key, progress: nil)
    }

    /// Imports one bundle object as it downloads, once its header matches its name (and the whole
    /// stream verifies, as every import).
    func pullBundle(
        _ key: String,
        from client: S3Client,
        origin: String,
        expecting: (device: UUID, name: RemoteLayout.BundleName),
        progress: @escaping SyncProgress
    ) throws(CofferError) -> ImportSummary {
        try importObject(key, from: client, origin: origin, what: "bundle object", progress: progress) {
            header throws(CofferError) in
            guard header.deviceID == expecting.device, header.firstSequence == expecting.name.first,
                header.lastSequence == expecting.name.last
            else {
                throw CofferError(
                    .decode,
                    "its header says device \(header.deviceID.uuidString.lowercased()), changes "
                        + "\(header.firstSequence)-\(header.lastSequence), which its name does not"
                )
            }
        }
    }

    /// Imports the bundle stored under `key` while it downloads, in ranges, after `expect` accepts its
    /// header. An error names the object; one gone or replaced meanwhile is `.itemNotFound`.
    func importObject(
        _ key: String,
        from client: S3Client,
        origin: String,
        what: String,
        progress: @escaping SyncProgress,
        expect: (BundleHeader) throws(CofferError) -> Void
    ) throws(CofferError) -> ImportSummary {
        guard let (size, etag) = try client.attributes(of: key) else {
            throw CofferError(.itemNotFound, "\(what) \(key) is gone (a compaction removed it meanwhile)")
        }
        // Under a download limit, ranges of about one second's worth, so the pace stays even.
        let rangeSize = client.remote.downloadLimit.map { min(8 << 20, max(256 << 10, $0)) } ?? 8 << 20
        // A thin import reads the bundle's records object instead, when there is one that describes
        // it; any fault in it (another copy's, damaged, altered) and the bundle itself is read.
        if let recordsKey = RecordsObject.key(forBundle: key), !isReplaceable(key),
            try importsThin(from: client.remote.identity),
            let records = try client.attributes(of: recordsKey)
        {
            let described = Result { () throws(CofferError) -> ImportSummary in
                var bundle = S3RangeSource(
                    client: client,
                    key: key,
                    size: size,
                    etag: etag,
                    rangeSize: 64 << 10,
                    progress: { _ in }
                )
                let (bundleHeader, bundleHeaderBytes) = try BundleHeader.read(from: &bundle)
                try expect(bundleHeader)
                var source = S3RangeSource(
                    client: client,
                    key: recordsKey,
                    size: records.size,
                    etag: records.etag,
                    rangeSize: rangeSize,
                    progress: progress
                )
                var summary = try importBundle(
                    from: &source,
                    origin: origin,
                    object: (client.remote.identity, key, UInt64(size)),
                    describing: (bundleHeader, bundleHeaderBytes)
                ) { (recordsHeader) throws(CofferError) in
                    // The bundle's header passed `expect`; the records object's names the same changes.
                    guard recordsHeader.deviceID == bundleHeader.deviceID,
                        recordsHeader.firstSequence == bundleHeader.firstSequence,
                        recordsHeader.lastSequence == bundleHeader.lastSequence
                    else { throw CofferError(.decode, "the records object names other changes than its bundle") }
                }
                summary.bytes = records.size + Int64(bundleHeaderBytes.count)
                return summary
            }
            if case .success(let summary) = described { return summary }
        }
        var source = S3RangeSource(
            client: client,
            key: key,
            size: size,
            etag: etag,
            rangeSize: rangeSize,
            progress: progress
        )
        do throws(CofferError) {
            var summary = try importBundle(
                from: &source,
                origin: origin,
                object: (client.remote.identity, key, UInt64(size)),
                expect: expect
            )
            summary.bytes = size
            return summary
        } catch {
            throw CofferError(error.code, "\(what) \(key) was refused: \(error.message)", underlying: error)
        }
    }

    /// Creates a vault in `directory` that joins the sync group whose devices push to `remote`, then
    /// pulls everything they have pushed: whole, or thin (``JoinedContent``), its content left in the
    /// store and read on demand.
    ///
    /// `passphrase` must be the passphrase of one of those vaults (at its latest push); it then
    /// protects the new vault too. On any error nothing is left in `directory`.
    ///
    /// A thin vault is offloaded to `remote` from the start (``offloadContent(to:keep:progress:)-4e8mf``):
    /// the pull keeps the records, their chunk lists and snapshot trees, and notes where each chunk
    /// lies in the store instead of keeping it; reads fetch content from the store and keep at most
    /// `keep` bytes of it (the vault remembers the store, as ``attachObjectStore(_:)`` describes).
    ///
    /// - Returns: The new vault, unlocked, and what the pull did.
    /// - Throws: ``CofferError`` `.param` when no device has pushed to `remote` yet, `.authFailed`
    ///   when the passphrase opens none of the pushed join blocks, `.vaultExists` if `directory` is
    ///   not empty, and the errors of ``pull(from:progress:)-1vcpy``.
    public static func join(
        remote: S3Remote,
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration(),
        content: JoinedContent = .whole,
        progress: SyncProgress? = nil
    ) throws(CofferError) -> (vault: Vault, summary: PullSummary) {
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let listing = try client.list(prefix: layout.listingPrefix)
        let devices = layout.devices(in: listing)
        var group: JoinedGroup?
        var refusal: CofferError?
        // The newest bundle of each device carries the join block under its current passphrase, and
        // so does each checkpoint.
        var candidates: [String] = []
        for (device, objects) in devices.sorted(by: { $0.key.uuidString < $1.key.uuidString }) where objects.hasHead {
            if let newest = objects.bundles.max() { candidates.append(layout.bundleKey(device, newest)) }
        }
        for (id, state) in layout.checkpoints(in: listing).sorted(by: { $0.key < $1.key })
        where state.hasCut && state.hasBundle {
            candidates.append(layout.checkpointBundleKey(id))
        }
        var logs: [GroupLog] = []
        var unreadable: [String] = []
        var joinableGroups: Set<UUID> = []
        var groupsSeen: Set<UUID> = []
        for key in candidates {
            var source = DataSource(try client.getPrefix(key, count: 1 << 20))
            // An object that is no bundle (planted by someone who may write to the store) is passed
            // over: it must not stop every join (red team round 18).
            guard let header = try? BundleHeader.read(from: &source).0 else {
                unreadable.append(key)
                continue
            }
            groupsSeen.insert(header.syncGroupID)
            if let log = try? GroupLog(group: header.syncGroupID, decoding: header.log) { logs.append(log) }
            // Each group is tried once (the passphrase's key derivation is slow on purpose).
            guard !joinableGroups.contains(header.syncGroupID) else { continue }
            do {
                let joinable = try JoinedGroup(joining: header, passphrase: passphrase)
                joinableGroups.insert(joinable.id)
                if group == nil { group = joinable }
            } catch  where error.code == .authFailed || error.code == .notTrusted || error.code == .param {
                refusal = error
            }
        }
        // Objects of two groups: one may be planted by whoever knows the passphrase and may write to
        // the store, to catch the devices that join (red team round 19), and the real group need not
        // open with the passphrase at all (an approval-only group's objects carry no join block:
        // round 20, R20-1), so any second group is enough to refuse.
        guard groupsSeen.count <= 1 else {
            let opens = joinableGroups.map { $0.uuidString.lowercased() }.sorted().joined(separator: ", ")
            let opened = joinableGroups.isEmpty ? "" : ", of which this passphrase opens \(opens)"
            throw CofferError(
                .notTrusted,
                "the store at \(remote.location) holds objects of \(groupsSeen.count) sync groups (\(groupsSeen.map { $0.uuidString.lowercased() }.sorted().joined(separator: ", "))\(opened)): someone who knows the passphrase and may write there can have planted one, so a join by passphrase cannot tell which is yours. Nothing was created; ask a member to approve a join request (\(InterfaceName.requestJoin)), or join from a bundle file a member gives you"
            )
        }
        // An older object (a checkpoint made before a member closed passphrase joins) may still carry
        // a join block: the newest logs decide (red team round 13: the join went through and was
        // then voided, with a message that did not say why).
        if let group, Self.approvalOnly(logs.filter { $0.group == group.id }) {
            throw CofferError(
                .param,
                "the sync group at \(remote.location) accepts new devices by approval only (a member closed passphrase joins); an older object there still carries a join block, but a join from it would not count. Make a vault with \(InterfaceName.requestJoin) and ask a member to approve the request; nothing was created"
            )
        }
        guard let group else {
            if refusal == nil, !unreadable.isEmpty {
                throw CofferError(
                    .decode,
                    "no bundle at \(remote.location) could be read to join from (\(unreadable.joined(separator: ", ")) \(unreadable.count == 1 ? "is" : "are") not Coffer bundles, or damaged); nothing was created"
                )
            }
            throw refusal
                ?? CofferError(
                    .param,
                    "no vault has pushed to \(remote.location) yet, so there is nothing to join; \(run: .push) "
                        + "there from a vault of the group first"
                )
        }
        let joined = try createJoined(at: directory, passphrase: passphrase, configuration: configuration, group: group)
        {
            vault throws(CofferError) in
            if case .thin(let keep) = content { try vault.beginOffloading(to: remote, keep: keep) }
            return try vault.pull(from: remote, progress: progress)
        }
        // The vault made in place of the one filled reads from the store too.
        if case .thin = content { try joined.vault.attachObjectStore(remote) }
        return joined
    }

    /// Whether the union of `logs`, the membership logs of the objects a store holds, says the group
    /// accepts new devices by approval only. A union that cannot be read says nothing (the join then
    /// goes on, and the pull after it judges each object).
    private static func approvalOnly(_ logs: [GroupLog]) -> Bool {
        guard var union = logs.first else { return false }
        for log in logs.dropFirst() {
            guard let merged = try? union.union(log) else { return false }
            union = merged
        }
        return (try? union.state(roots: { _ in nil }).policy) == .approval
    }
}
