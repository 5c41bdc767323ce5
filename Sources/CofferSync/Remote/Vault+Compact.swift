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
        // bundle that brought it would be deleted.
        let schema = schema
        let held = try storage("reading the records held back") {
            try environment.read { txn in try HeldRecords(schema: schema).all(in: txn).count }
        }
        guard held == 0 else {
            throw CofferError(
                .param,
                "this vault holds \(held) record\(held == 1 ? "" : "s") back until data they need arrives, so its checkpoint would lack them; pull again (\(InterfaceName.pull)) after the devices that have the data push, or compact from another device. Nothing was changed"
            )
        }
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let before = try client.list(prefix: layout.listingPrefix)
        let devices = layout.devices(in: before)
        let revoked = Set(try members().filter { !$0.isActive }.map(\.deviceID))
        // The cut: what this vault holds of each active device that pushed here.
        let applied = try storage("reading how far this vault has pulled") {
            try environment.read { txn in try PulledCursors(schema: schema, remote: remote.identity).load(in: txn) }
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
        // Another checkpoint goes only when this one's cut covers it and it was complete before this
        // compaction began: it was written before this checkpoint, and this vault has applied all it
        // holds. A cut is a claim its signer makes: one naming more than its bundle holds (signed with
        // a leaked device's keys) must not make this vault delete its own checkpoint, nor one written
        // meanwhile, which may hold changes this one lacks (red team round 23). Two compactions at
        // once each keep their own; the next one deletes both.
        let complete = Set(layout.checkpoints(in: before).filter { $0.value.hasCut && $0.value.hasBundle }.keys)
        for (id, state) in layout.checkpoints(in: listing) where id != cut.id && state.hasCut && state.hasBundle {
            let key = layout.checkpointCutKey(id)
            guard let bytes = try client.get(key), let other = try? verifiedCut(bytes, key: key, id: id) else {
                continue
            }
            if complete.contains(id) && cut.covers(other) {
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
                            ? "revoked in this vault's log, so no cut of it names the device)"
                            : "this vault: \(cut.through[device] ?? 0))")
                }
            // A checkpoint naming only revoked devices beyond this cut is an honest one from before
            // the revocation: no later cut names them, so no compaction replaces it.
            let onlyRevoked = other.through.allSatisfy { device, sequence in
                sequence <= cut.through[device] ?? 0 || revoked.contains(device)
            }
            summary.notices.append(
                "Kept the checkpoint \(id) of device \(writer): its cut names changes this vault has not applied, \(beyond.joined(separator: ", "))."
                    + (onlyRevoked
                        ? " No compaction replaces it: cuts leave revoked devices out."
                        : " A compaction by a device that has them replaces it. If it stays after every member has pulled and compacted, the cut claims more than was ever pushed: someone holding device \(writer)'s keys wrote it, and revoking that device (or its owner's rekey, \(InterfaceName.rekey)) voids it.")
            )
        }
        // The checkpoint holds every chunk: where it lies there is noted before the bundles that held
        // this vault's offloaded chunks go.
        try noteSites(sites, of: cut, remote: remote, layout: layout)
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
        defer { try? FileManager.default.removeItem(at: file) }
        let (export, _, sites) = try writeBundle(to: file, progress: nil, notingSites: true, unreadable: unreadable) {
            _ in nil
        }
        let bundleKey = layout.checkpointBundleKey(cut.id)
        try client.upload(file: file.path, to: bundleKey, progress: progress)
        // The cut records the bundle as the store took it, so that one changed since is seen in a
        // listing (red team round 44, F3).
        var cut = cut
        guard let stored = try client.attributes(of: bundleKey), stored.size == Int64(sites.size) else {
            throw CofferError(
                .io,
                "the object store does not hold the checkpoint bundle \(bundleKey) as uploaded (\(sites.size) bytes); its cut was not written, so it counts for nothing. Try again"
            )
        }
        cut.bundle = RemoteCut.StoredBundle(size: stored.size, etag: stored.etag ?? "")
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

    /// Applies the checkpoints this vault needs before the bundles left after compactions: one
    /// whose cut names a device whose next bundle this vault has not applied and the store no longer
    /// holds. After each, the pull cursors (and the gap bookkeeping) move up to its cut.
    ///
    /// - Returns: For each other device that signed a cut this pull trusts, the last of its own
    ///   changes its cuts name: the device's word as much as its head's, so a head older than that
    ///   was put back (the store rolled back), and the changes between are ones its head hides.
    func applyCheckpoints(
        _ listing: [S3Object],
        client: S3Client,
        layout: RemoteLayout,
        remote: S3Remote,
        revoked: Set<UUID>,
        heads: HeadReads,
        summary: inout PullSummary
    ) throws(CofferError) -> [UUID: UInt64] {
        let devices = layout.devices(in: listing)
        let cursors = PulledCursors(schema: schema, remote: remote.identity)
        // Whether a checkpoint is needed is judged against the cursors before any checkpoint moved
        // them: a cut claiming more than its bundle holds (signed with a leaked device's keys) must
        // not make this pull pass over the checkpoint that does hold it (red team round 23).
        let pulledBefore = try storage("reading how far this vault has pulled") {
            try environment.read { txn in try cursors.load(in: txn) }
        }
        // Each device's chain, as far as its head goes: another copy's bundle beside it holds other
        // changes under the same numbers, and a cut claiming past the head claims what no one pushed.
        var chains: [UUID: Chain] = [:]
        // What each device's own cuts say it pushed, which an older head put back in the store
        // hides (red team round 44, F3).
        var ownClaims: [UUID: UInt64] = [:]
        func chainOf(_ device: UUID) throws(CofferError) -> Chain {
            try chain(of: device, devices[device], heads: heads, layout: layout)
        }
        // Checkpoints this pull needed and could not import, with their cuts.
        var unusable: [(id: String, bundleKey: String, cut: RemoteCut)] = []
        let listed = Dictionary(listing.map { ($0.key, $0) }) { first, _ in first }
        for (id, state) in layout.checkpoints(in: listing).sorted(by: { $0.key < $1.key })
        where state.hasCut && state.hasBundle {
            let cutKey = layout.checkpointCutKey(id)
            guard let bytes = try client.get(cutKey) else { continue }
            let bundleKey = layout.checkpointBundleKey(id)
            var cut: RemoteCut
            do throws(CofferError) {
                do throws(CofferError) {
                    cut = try verifiedCut(bytes, key: cutKey, id: id)
                } catch  where error.code == .keyUnavailable || error.code == .notTrusted {
                    // A newer epoch, or a device this vault's log does not know yet: the checkpoint's
                    // log may seal the key to this device, or admit its writer.
                    let writer = try? RemoteCut.signer(of: bytes, key: cutKey).device
                    let known = try knowsDevice(writer)
                    guard error.code == .keyUnavailable || (writer != nil && !known) else { throw error }
                    summary.bytes +=
                        try pullCheckpoint(bundleKey, client: client, origin: remote.identity, writer: writer).bytes
                    summary.checkpoints.append(bundleKey)
                    cut = try verifiedCut(bytes, key: cutKey, id: id)
                }
            } catch  where error.code == .notTrusted || error.code == .decode || error.code == .param {
                // A cut no active member signed (forged, or written by a device revoked since), or a
                // pair of objects that are no checkpoint (planted by whoever may write to the store),
                // counts for nothing: following it would raise this vault's cursors past bundles it
                // lacks, and refusing the pull would let it stop every device (red team round 19).
                summary.notices.append("Ignored the checkpoint \(id): \(error.message).")
                continue
            } catch  where error.code == .keyUnavailable {
                // Sealed in a key epoch no object this vault can open gives it yet: the changes only
                // this checkpoint holds wait, the rest of the pull goes on (red team round 19, N4).
                summary.waitingCheckpoints.append(bundleKey)
                summary.notices.append(
                    "Could not open the checkpoint \(id) yet: \(error.message). The changes only it holds wait; a later pull applies it once a member seals its key epoch to this vault, which its next push does."
                )
                continue
            }
            for device in cut.through.keys where chains[device] == nil {
                chains[device] = try chainOf(device)
            }
            // A cut is as much its device's word as its head is: a claim of its own changes past its
            // head means the head was put back, and the changes between are in this checkpoint. It
            // is applied for them, records only and once (by its entity tag): the cursor stays
            // within the head, since a cut signed with leaked keys may claim anything (round 23).
            let ownClaim = cut.through[cut.device].flatMap { own -> UInt64? in
                guard cut.device != deviceID, !revoked.contains(cut.device), own > chains[cut.device]?.end ?? 0
                else { return nil }
                return own
            }
            if let ownClaim { ownClaims[cut.device] = max(ownClaims[cut.device] ?? 0, ownClaim) }
            let etag = listed[bundleKey]?.etag ?? ""
            let pastHead = try ownClaim.map { (own) throws(CofferError) -> Bool in
                guard pulledBefore[cut.device] ?? 0 < own, !etag.isEmpty else { return false }
                let applied = try storage("reading how far this vault has pulled") {
                    try environment.read { txn in try cursors.checkpointApplied(id, in: txn) }
                }
                return applied != etag
            }
            let needed = cut.through.contains { device, covered in
                let after = pulledBefore[device] ?? 0
                guard device != deviceID, !revoked.contains(device), let chain = chains[device],
                    after < min(covered, chain.end)
                else { return false }
                return !chain.goesOn(after: after)
            }
            if needed || pastHead == true, !summary.checkpoints.contains(bundleKey) {
                // A bundle changed since its cut was written is not downloaded (red team round 44, F3).
                if let mismatch = cut.bundleMismatch(listed[bundleKey]) {
                    summary.notices.append("Ignored the checkpoint \(id): \(mismatch).")
                    unusable.append((id, bundleKey, cut))
                    continue
                }
                let imported: ImportSummary
                do throws(CofferError) {
                    imported = try pullCheckpoint(
                        bundleKey,
                        client: client,
                        origin: remote.identity,
                        writer: cut.device
                    )
                } catch  where error.code == .param || error.code == .decode {
                    // Its bundle was overwritten or cut short (red team round 20, R20-3): the cut counts
                    // for nothing then, and what only it held waits for the next push of a member that
                    // holds it, which writes it again (the repair does not count such a cut either).
                    summary.notices.append("Ignored the checkpoint \(id): \(error.message).")
                    unusable.append((id, bundleKey, cut))
                    continue
                }
                summary.bytes += imported.bytes
                summary.applied.add(imported.applied)
                summary.checkpoints.append(bundleKey)
                if ownClaim != nil, !etag.isEmpty {
                    try storage("recording the checkpoint \(bundleKey)") {
                        try environment.write { txn in try cursors.recordCheckpointApplied(etag, id: id, in: txn) }
                    }
                }
            }
            guard summary.checkpoints.contains(bundleKey) else { continue }
            // A device this vault did not know had no chain it trusted; the checkpoint just imported
            // may have admitted it (its log does), so its cursor moves as far as its head allows.
            for device in cut.through.keys where chains[device]?.end == 0 {
                chains[device] = try chainOf(device)
            }
            let schema = schema
            try storage("recording the checkpoint \(bundleKey)") {
                try environment.write { txn in
                    let requests = SyncRequests(schema: schema)
                    let applied = try cursors.load(in: txn)
                    for (device, covered) in cut.through where device != deviceID {
                        let raised = (chains[device] ?? Chain()).cursorAfterCheckpoint(
                            covered,
                            applied: applied[device] ?? 0
                        )
                        guard raised > applied[device] ?? 0 else { continue }
                        try cursors.record(device, through: raised, in: txn)
                        try requests.noteCovered(device.bytes, through: raised, in: txn)
                    }
                }
            }
        }
        try noteWaiting(unusable, chains: chains, cursors: cursors, revoked: revoked, summary: &summary)
        return ownClaims
    }

    /// Makes the pull incomplete for each checkpoint it needed and could not import whose changes
    /// no other object brought: a device's changes its signed cut names (up to the device's head)
    /// that this vault's cursor still lies before. With every bundle of such a device compacted
    /// away, no later bundle shows the gap, and the pull would say it was complete while this vault
    /// lacks them (red team rounds 43 and 44, F3). They wait for the next push of a member that
    /// holds them, which writes them again; a checkpoint another one in this pull made unneeded is
    /// not named.
    private func noteWaiting(
        _ unusable: [(id: String, bundleKey: String, cut: RemoteCut)],
        chains: [UUID: Chain],
        cursors: PulledCursors,
        revoked: Set<UUID>,
        summary: inout PullSummary
    ) throws(CofferError) {
        guard !unusable.isEmpty else { return }
        let applied = try storage("reading how far this vault has pulled") {
            try environment.read { txn in try cursors.load(in: txn) }
        }
        for (id, bundleKey, cut) in unusable where !summary.checkpoints.contains(bundleKey) {
            // Up to the device's head, or, for the cut's own device, as far as the cut says.
            func end(_ device: UUID, _ covered: UInt64) -> UInt64 {
                device == cut.device ? covered : min(covered, chains[device]?.end ?? 0)
            }
            // Not those a listed bundle of the device's chain goes on with from the cursor: the pull
            // of its bundles applies them next.
            let lacking = cut.through.filter { device, covered in
                guard device != deviceID, !revoked.contains(device), let chain = chains[device] else { return false }
                let after = applied[device] ?? 0
                return after < end(device, covered) && !chain.goesOn(after: after)
            }
            guard !lacking.isEmpty else { continue }
            summary.waitingCheckpoints.append(bundleKey)
            let changes = lacking.map { device, covered in
                "\((applied[device] ?? 0) + 1)-\(end(device, covered)) of device \(device.uuidString.lowercased())"
            }
            // Named once: the pull of each device's bundles passes over these.
            for device in lacking.keys { summary.noteWaiting(device) }
            summary.notices.append(
                "Waiting for changes \(changes.sorted().joined(separator: ", ")): the store holds them only in the checkpoint \(id), which this vault could not use; the next push of a member that holds them writes them again, and a later pull applies them."
            )
        }
    }

    /// A device's chain of bundles in the store as a pull sees it before it applies checkpoints: the
    /// listed bundles ending no later than the device's head, and that head's last change.
    struct Chain {
        /// The bundles the head's chain may pass through.
        var bundles: [RemoteLayout.BundleName] = []
        /// The last change of the device's head, or the last of its own changes a cut it signed
        /// names when that is later (its head was put back); 0 without either (nothing of the
        /// device's that a checkpoint could stand for).
        var end: UInt64 = 0

        /// Whether a listed bundle of the chain holds the device's next change after `after`, and
        /// goes past it: the pull of its bundles goes on from there.
        func goesOn(after: UInt64) -> Bool {
            bundles.contains { $0.first <= after + 1 && $0.last > after }
        }

        /// How far a checkpoint whose cut names `covered` of the device moves its cursor from
        /// `applied`: across the changes the store holds in no listed bundle of the chain, never past
        /// one nor past the head. A cut is its signer's claim; one claiming more than its bundle holds
        /// (signed with a leaked device's keys) would otherwise make this vault pass over bundles it
        /// lacks, or the device's next changes, for good (red team round 23). Where the claim is
        /// true, applying such a bundle again changes nothing.
        func cursorAfterCheckpoint(_ covered: UInt64, applied: UInt64) -> UInt64 {
            let nextListed = bundles.filter { $0.first <= $0.last && $0.last > applied }.map(\.first).min()
            return min(covered, end, (nextListed ?? .max) - 1)
        }
    }

    /// `device`'s chain: its trusted head's last change, and the listed bundles ending no later.
    private func chain(
        of device: UUID,
        _ objects: RemoteLayout.DeviceObjects?,
        heads: HeadReads,
        layout: RemoteLayout
    ) throws(CofferError) -> Chain {
        let key = layout.headKey(device)
        guard let bytes = try heads.bytes(of: device), let head = try? trustedHead(bytes, key: key, device: device)
        else {
            return Chain()
        }
        let last = head.latest.last
        return Chain(bundles: (objects?.bundles ?? []).filter { $0.last <= last }, end: last)
    }

    /// Imports one checkpoint bundle as it downloads: a full export by `writer`, the device its cut
    /// names, when known (a cut must not lend its cursors to another bundle).
    func pullCheckpoint(
        _ key: String,
        client: S3Client,
        origin: String,
        writer: UUID? = nil
    ) throws(CofferError) -> ImportSummary {
        try importObject(
            key,
            from: client,
            origin: origin,
            what: "checkpoint",
            progress: { _ in },
            expect: { header throws(CofferError) in
                guard let writer else { return }
                guard header.deviceID == writer, header.firstSequence == 1 else {
                    throw CofferError(
                        .decode,
                        "its header says device \(header.deviceID.uuidString.lowercased()), changes \(header.firstSequence)-\(header.lastSequence), not a full export by the device its cut names"
                    )
                }
            }
        )
    }
}
