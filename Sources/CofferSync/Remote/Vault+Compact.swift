import Foundation

// Compaction of an object store (docs/FORMAT.md, "Compaction"): a checkpoint of the group's state
// replaces the bundles it holds everything of.
extension Vault {
    /// Writes a checkpoint of the sync group's state to `remote` and deletes what it supersedes, so
    /// the store stops growing with history and a joining device downloads the checkpoint and what
    /// came after it instead of every device's history.
    ///
    /// The vault pulls and pushes first, then uploads a full bundle of its syncable state (the
    /// checkpoint, sealed in the current key epoch) and, as its commit point, the checkpoint's *cut*:
    /// for each active device, the last change this vault had applied of it. Only then are deleted
    /// the bundles the cut covers and the checkpoints, complete before it began, that it covers. Safe
    /// against everything else at the same time: a push racing it is newer than the cut and stays; a
    /// pull racing it that finds a bundle gone starts again from the checkpoints; two compactions at
    /// once each keep their own checkpoint, and the next compaction replaces both. Another
    /// checkpoint's cut never makes it delete its own. Objects of revoked devices are left alone.
    ///
    /// Needs `s3:DeleteObject`; ``push(to:progress:)-4qpe7`` and ``pull(from:progress:)-1vcpy``
    /// never delete, so their credentials need not allow it.
    ///
    /// - Throws: ``CofferError`` `.authFailed` when the store refuses a delete (nothing the
    ///   checkpoint does not hold was deleted; run it again with credentials that may delete),
    ///   `.notTrusted` when the sync group is frozen (``syncGroupIsFrozen()-7333l``: nothing is written or
    ///   deleted after the pull and the push), and the errors of a push and a pull.
    @discardableResult
    public func compact(remote: S3Remote, progress: SyncProgress? = nil) throws(CofferError) -> CompactSummary {
        try compact(remote: remote, progress: progress, beforeDeleting: {})
    }

    /// ``compact(remote:progress:)-1cnf4`` with a hook between the checkpoint's cut and the deletions,
    /// where tests interleave other devices' pushes and compactions.
    package func compact(
        remote: S3Remote,
        progress: SyncProgress?,
        beforeDeleting: () throws(CofferError) -> Void
    ) throws(CofferError) -> CompactSummary {
        let notices = try pull(from: remote).notices + push(to: remote).notices
        // A frozen group's checkpoint would hold no record, and the compaction would delete the
        // bundles that do (red team round 6, M2 and M3).
        guard try !syncGroupIsFrozen() else {
            throw CofferError(
                .notTrusted,
                "the sync group is frozen (its membership log is full, or a member's log would overflow it), so this vault seals no record for it and its checkpoint would hold none while replacing the bundles that do: no checkpoint was written and nothing was deleted (the pull and the push before it ran). \(GroupLog.frozenExplanation)"
            )
        }
        // A record held back for want of chunks is in no checkpoint this vault could write, while the
        // bundle that brought it would be deleted. Not so one that only devices no longer active
        // members sent: no cut names them, so their bundles stay (final outside test of issue 37,
        // F1: once the sender was revoked, nothing could ever end the wait). One that an active
        // member sent too still blocks (outside test of that fix, finding 2).
        let schema = schema
        let active = Set(try members().filter(\.isActive).map(\.deviceID))
        let hasLog = try readMetaIfPresent(GroupContext.Meta.log) != nil
        let counting: Set<UUID>? = hasLog ? active : nil
        let held = try storage("reading the records held back") {
            try environment.read { txn in try HeldRecords(schema: schema).tally(active: counting, in: txn) }
        }.waiting
        guard held == 0 else {
            throw CofferError(
                .param,
                "this vault holds \(held) record\(held == 1 ? "" : "s") back until data they need arrives, so its checkpoint would lack them; pull again (\(InterfaceName.pull)) after the devices that have the data push, or compact from another device. No checkpoint was written and nothing was deleted (the pull and the push before it ran)"
            )
        }
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let before = try client.list(prefix: layout.listingPrefix)
        let devices = layout.devices(in: before)
        let members = try members()
        let revoked = Set(members.filter { !$0.isActive }.map(\.deviceID))
        // The cut: what this vault holds of each active device that pushed here.
        let listedCheckpoints = Array(layout.checkpoints(in: before).keys)
        let (applied, appliedCheckpoints, ownCheckpoints, formerIDs) = try storage(
            "reading how far this vault has pulled"
        ) {
            try environment.read { txn in
                let cursors = PulledCursors(schema: schema, remote: remote.identity)
                let own = try listedCheckpoints.filter {
                    try txn.get(schema.meta, key: Self.ownCheckpointKey($0)) != nil
                }
                return (
                    try cursors.load(in: txn), try cursors.appliedCheckpoints(in: txn), Set(own),
                    Set(try GroupContext.formerIdentities(in: txn, schema: schema))
                )
            }
        }
        let ownHeadKey = layout.headKey(deviceID)
        let ownHead = try client.get(ownHeadKey).map { (bytes) throws(CofferError) in
            try trustedHead(bytes, key: ownHeadKey, device: deviceID)
        }
        var through: [UUID: UInt64] = [:]
        for (device, objects) in devices where objects.hasHead && !revoked.contains(device) {
            if device == deviceID {
                if let ownHead { through[device] = ownHead.latest.last }
            } else if let cursor = applied[device] {
                through[device] = cursor
            }
        }
        let cut = RemoteCut(id: RemoteCut.freshID(), device: deviceID, through: through)
        var summary = CompactSummary(
            remote: remote.location.description,
            checkpoint: layout.checkpointBundleKey(cut.id)
        )
        summary.storedBytesBefore = before.reduce(0) { $0 + $1.size }
        summary.notices = notices

        // Offloaded chunks whose objects are gone are looked for in every other object first: a
        // chunk still unreadable after that lies in none, and is left out (its loss is reported)
        // rather than stopping every compaction. An object found damaged (overwritten) on the way
        // stops counting, and the search runs again: another may hold what it held, and if none
        // does, it is lost. Only then is it left out: one this compaction deletes might have held
        // it (red team round 39, F1: a thin device, the only one left holding a lost device's
        // changes, could never compact past one overwritten bundle).
        summary.notices += try refreshStoreSites(remote: remote, keepingBudget: false)
        let checkpoint = { () throws(CofferError) in
            try self.writeCheckpoint(cut, client: client, layout: layout, unreadable: .leaveOutGone, progress: progress)
        }
        let sites: BundleSites
        let lostChunks: Int
        do {
            (sites, lostChunks) = try checkpoint()
        } catch  where error.code == .decode && schema.offloadedChunks != nil {
            schema.offloadedChunks?.finish()
            summary.notices += try refreshStoreSites(remote: remote, keepingBudget: false)
            (sites, lostChunks) = try checkpoint()
        }
        if let lost = Self.lostChunksNotice(lostChunks, remote: remote) { summary.notices.append(lost) }
        summary.checkpointBytes = Int64(sites.size)
        try beforeDeleting()

        // What the cut covers goes: bundles, then checkpoints (their cut first, so no pull starts
        // on one being deleted).
        let listing = try client.list(prefix: layout.listingPrefix)
        let sizes = Dictionary(listing.map { ($0.key, $0.size) }) { first, _ in first }
        var doomed: [String] = []
        for (device, objects) in layout.devices(in: listing) {
            guard let covered = cut.through[device] else { continue }
            doomed += objects.bundles.filter { $0.last <= covered }.map { layout.bundleKey(device, $0) }
        }
        // Records objects whose bundle is gone (a crash between the two uploads, or a compaction by
        // a Coffer that does not know them) go; the others go with their bundles (below).
        let listedKeys = Set(listing.map(\.key))
        for object in listing {
            guard let bundle = RecordsObject.bundleKey(forRecords: object.key) else { continue }
            if !listedKeys.contains(bundle) { doomed.append(object.key) }
        }
        // Another checkpoint goes only when this one's cut covers it and it was complete before this
        // compaction began: it was written before this checkpoint, and this vault has applied all it
        // holds. A cut is a claim its signer makes: one naming more than its bundle holds (signed with
        // a leaked device's keys) must not make this vault delete its own checkpoint, nor one written
        // meanwhile, which may hold changes this one lacks (red team round 23). Two compactions at
        // once each keep their own; the next one deletes both.
        let complete = Set(layout.checkpoints(in: before).filter { $0.value.hasCut && $0.value.hasBundle }.keys)
        for (id, state) in layout.checkpoints(in: listing) where id != cut.id && state.hasCut && state.hasBundle {
            let key = layout.checkpointCutKey(id)
            guard let bytes = try client.get(key) else { continue }
            // Whether this vault holds all this checkpoint holds: it wrote it, or applied it as it
            // stands in the store now (its entity tag).
            let holdsAll =
                ownCheckpoints.contains(id)
                || listing.contains {
                    $0.key == layout.checkpointBundleKey(id) && !$0.etag.isEmpty && appliedCheckpoints[id] == $0.etag
                }
            guard let other = try? verifiedCut(bytes, key: key, id: id) else {
                // A revoked device's checkpoint is read by no pull any more (cuts count only from
                // active members). When this vault holds all it held, so does the checkpoint just
                // written: it goes (outside test of round 44's F3 fix, G5: a restored copy's former
                // id kept its checkpoint for good).
                if complete.contains(id), holdsAll,
                    let signer = revokedSigner(of: bytes, key: key, id: id, among: members)
                {
                    doomed += [key, layout.checkpointBundleKey(id)]
                    summary.notices.append(
                        "Deleted the checkpoint \(id) of device \(signer.uuidString.lowercased()), which is revoked: no pull reads it any more, and this vault holds all it held."
                    )
                    continue
                }
                // Another checkpoint's genuine cut copied over this one's (by someone who may write to
                // the store): it counts for nothing, and no later compaction could replace it, so
                // every pull would name it for good. The cut goes; the bundle stays, since it may be
                // the only copy of changes no member holds any more (outside test of red team round
                // 44's F3 fix, G1).
                if complete.contains(id), let named = RemoteCut.checkpointNamed(in: bytes), named != id,
                    (try? verifiedCut(bytes, key: key, id: named)) != nil
                {
                    doomed.append(key)
                    summary.notices.append(
                        "Deleted the cut of checkpoint \(id): it is checkpoint \(named)'s, copied over its own, so the checkpoint counted for nothing. Its bundle stays in the store, unused."
                    )
                }
                continue
            }
            // A cut leaves revoked devices out; for them, that this vault holds all the checkpoint
            // holds counts instead, since its new checkpoint holds it too, and the old one would
            // otherwise stay for good (outside test of the G5 fix, F1). Not its cursor: pulls skip a
            // revoked device's objects, so a cursor may count changes whose numbers a restored copy
            // of that device reused since, with other records that only this checkpoint holds
            // (second outside test, F1).
            let covered = other.through.allSatisfy { device, sequence in
                cut.through[device] ?? 0 >= sequence || (revoked.contains(device) && holdsAll)
            }
            if complete.contains(id) && covered {
                doomed += [key, layout.checkpointBundleKey(id)]
                continue
            }
            summary.keptCheckpoints.append(layout.checkpointBundleKey(id))
            let writer = other.device.uuidString.lowercased()
            guard complete.contains(id) else {
                summary.notices.append(
                    "Kept the checkpoint \(id) of device \(writer): it was completed while this compaction ran; the next compaction replaces it."
                )
                continue
            }
            let beyond = other.through.filter { device, sequence in sequence > cut.through[device] ?? 0 }
                .sorted { $0.key.uuidString < $1.key.uuidString }
                .map { device, sequence in
                    "device \(device.uuidString.lowercased()) through \(sequence) ("
                        + (revoked.contains(device)
                            ? "revoked in this vault's log, so no cut names it)"
                            : "this cut: \(cut.through[device] ?? 0)"
                                + (holdsAll
                                    ? "; this vault holds them, from this checkpoint, but a cut names a device's changes only as far as its head in the store goes)"
                                    : ")"))
                }
            // A checkpoint naming only revoked devices beyond this cut, whose changes this vault does
            // not hold, is an honest one from before the revocation, perhaps their only copy.
            let onlyRevoked = other.through.allSatisfy { device, sequence in
                sequence <= cut.through[device] ?? 0 || revoked.contains(device)
            }
            let why: String
            if onlyRevoked {
                why =
                    " It may hold the only copy of those changes: a compaction by a vault that wrote or applied this checkpoint replaces it."
            } else if formerIDs.contains(other.device) {
                // G5: this vault re-enrolled after finding it was a restored or cloned copy, and the
                // device's head in the store names fewer of its changes than its own cut.
                why =
                    " Device \(writer) is this vault's own id before it re-enrolled as a new device (it found it was a restored or cloned copy), and its head in the store names fewer of its changes than this cut: no compaction replaces it while that id is a member. Unless another copy of this vault still runs as \(writer), revoke it (\(InterfaceName.revoke(writer))); the next compaction then deletes this checkpoint"
                    + (holdsAll ? ", which this vault has applied." : ", once this vault has applied it.")
            } else {
                why =
                    " A compaction by a device that has them replaces it. If it stays after every member has pulled and compacted, the devices' heads in the store name fewer changes than this cut: a head was put back to an older one (that device's next push mends it; if the device is gone for good, as the old id of a vault that re-enrolled is, revoke it), or someone holding device \(writer)'s keys wrote a cut claiming more than was pushed (revoking that device, or its owner's rekey, \(InterfaceName.rekey), voids it)."
            }
            summary.notices.append(
                "Kept the checkpoint \(id) of device \(writer): its cut names changes past this compaction's cut, \(beyond.joined(separator: ", "))."
                    + why
            )
        }
        // The checkpoint holds every chunk: where it lies there is noted before the bundles that held
        // this vault's offloaded chunks go.
        try noteSites(sites, of: cut, remote: remote, layout: layout)
        // An object a read here found damaged is kept: this vault cannot tell what it held, and a
        // records object may have given it records whose content lies in its intact part (outside
        // test of records objects, F1: a thin vault's compaction deleted the only copy). A
        // compaction by a device that imported it whole (or holds its changes) replaces it.
        let damaged = try storage("reading the objects found damaged") { () throws -> [String: UInt64] in
            guard let content = StoreContent(schema: schema) else { return [:] }
            let identity = remote.identity
            let found = try environment.read { txn in try content.foundDamaged(in: identity, in: txn) }
            let stale = found.filter { key, size in sizes[key].map { UInt64($0) != size } ?? true }
            if !stale.isEmpty {
                try environment.write { txn in
                    for key in stale.keys { try content.forgetFoundDamaged(key, in: identity, in: txn) }
                }
            }
            return found.filter { stale[$0.key] == nil }
        }
        for key in doomed where damaged[key] != nil {
            summary.notices.append(
                "Kept \(key): a read here found it damaged, so this vault cannot tell what it held. A compaction by a device that holds those changes whole replaces it."
            )
        }
        doomed.removeAll { damaged[$0] != nil }
        // A bundle's records object goes first: one left without its bundle would be read for
        // nothing, and deleted by the next compaction.
        doomed = doomed.flatMap { key in
            RecordsObject.key(forBundle: key).flatMap { listedKeys.contains($0) ? [$0, key] : nil } ?? [key]
        }
        for key in doomed {
            do {
                try client.delete(key)
            } catch {
                guard error.code == .authFailed else { throw error }
                throw CofferError(
                    .authFailed,
                    "the store refused to delete \(key): \(error.message). The checkpoint \(summary.checkpoint) is complete and nothing it does not hold was deleted; \(run: .compactRemote) again with credentials that allow s3:DeleteObject",
                    underlying: error
                )
            }
            summary.deletedObjects += 1
            summary.deletedBytes += sizes[key] ?? 0
        }
        let after = try client.list(prefix: layout.listingPrefix)
        summary.storedBytesAfter = after.reduce(0) { $0 + $1.size }
        _ = try refreshStoreSites(remote: remote)
        return summary
    }

    /// Uploads a checkpoint of this vault's syncable state, everything it holds as a full export,
    /// then, as its commit point, its `cut`, signed by this device. Deletes nothing. Offloaded
    /// chunks the store no longer gives are left out as `unreadable` says (``UnreadableChunks``).
    ///
    /// - Returns: Where each chunk lies in the checkpoint's bundle (and its size), and how many
    ///   offloaded chunks were left out.
    func writeCheckpoint(
        _ cut: RemoteCut,
        client: S3Client,
        layout: RemoteLayout,
        unreadable: UnreadableChunks,
        progress: SyncProgress?
    ) throws(CofferError) -> (sites: BundleSites, lostChunks: Int) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-compact-\(UUID().uuidString)")
        let recordsFile = file.appendingPathExtension("records")
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: recordsFile)
        }
        let (export, _, sites) = try writeBundle(
            to: file,
            progress: nil,
            notingSites: true,
            recordsObject: recordsFile,
            unreadable: unreadable
        ) { _ in nil }
        let bundleKey = layout.checkpointBundleKey(cut.id)
        try client.upload(file: file.path, to: bundleKey, progress: progress)
        uploadRecordsObject(recordsFile, beside: bundleKey, bundleSize: sites.size, client: client)
        // The cut records the bundle as the store took it, so that one changed since is seen in a
        // listing (red team round 44, F3).
        var cut = cut
        guard let stored = try client.attributes(of: bundleKey), stored.size == Int64(sites.size),
            let header = BundleHeader.fixedFields(
                ofPrefix: try client.getPrefix(bundleKey, count: BundleHeader.fixedSize)
            ), header.deviceID == deviceID
        else {
            throw CofferError(
                .io,
                "the object store does not hold the checkpoint bundle \(bundleKey) as uploaded (\(sites.size) bytes); its cut was not written, so it counts for nothing. Try again"
            )
        }
        cut.bundle = RemoteCut.StoredBundle(size: stored.size, etag: stored.etag ?? "", salt: header.salt)
        // Noted first: a cut this vault wrote, found later (in this store or, copied, in another
        // one), is no sign that another copy of it pushed (``ownCutClaim(client:layout:)``).
        let schema = schema
        try storage("recording the checkpoint \(cut.id)") {
            try environment.write { txn in _ = try txn.put(schema.meta, key: Self.ownCheckpointKey(cut.id), value: []) }
        }
        try client.put(layout.checkpointCutKey(cut.id), body: try sealed(cut))
        return (sites, export.lostChunks)
    }

    /// `cut` as stored: sealed under the group key of the current epoch and signed by this device.
    package func sealed(_ cut: RemoteCut) throws(CofferError) -> [UInt8] {
        let keys = try keyRing()
        let epoch = keys.currentEpoch(.sync)
        return try cut.encoded(epoch: epoch, root: try keys.root(.sync, epoch: epoch), signer: try deviceKeys().signing)
    }

    /// Notes where each chunk lies in the checkpoint `cut` commits, for reads of offloaded chunks.
    func noteSites(_ sites: BundleSites, of cut: RemoteCut, remote: S3Remote, layout: RemoteLayout) throws(CofferError)
    {
        let schema = schema
        try storage("noting where chunks lie") {
            try schema.ensureStoreContent(in: environment)
            try environment.write { txn in
                try BundleChunkSite.note(
                    sites.chunks,
                    in: sites.object(remote: remote.identity, key: layout.checkpointBundleKey(cut.id)),
                    schema: schema,
                    txn: txn
                )
            }
        }
    }

    /// The device that signed the cut `bytes` of checkpoint `id`, when it is a member no longer active
    /// here and the signature verifies with the signing key the log last gave it: a cut only that
    /// device could have written, which no pull reads any more.
    private func revokedSigner(of bytes: [UInt8], key: String, id: String, among members: [GroupMember]) -> UUID? {
        guard let (_, epoch, device) = try? RemoteCut.signer(of: bytes, key: key),
            let member = members.first(where: { $0.deviceID == device && !$0.isActive }),
            let root = try? keyRing().root(.sync, epoch: epoch),
            let cut = try? RemoteCut(
                decoding: bytes,
                key: key,
                expectedID: id,
                root: root,
                signingKey: Array(member.identity.signingKey)
            ),
            cut.device == device
        else { return nil }
        return device
    }
}
