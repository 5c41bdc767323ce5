import Foundation

// A pull applies the checkpoints it needs before the bundles left after compactions
// (docs/FORMAT.md, "Compaction").
extension Vault {
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
        let (pulledBefore, appliedCheckpoints) = try storage("reading how far this vault has pulled") {
            try environment.read { txn in (try cursors.load(in: txn), try cursors.appliedCheckpoints(in: txn)) }
        }
        let holdsRecordsBack = try storage("reading the records held back") {
            try environment.read { txn in try HeldRecords(schema: schema).any(in: txn) }
        }
        let listed = Dictionary(listing.map { ($0.key, $0) }) { first, _ in first }
        let cuts = try trustedCuts(listing, client: client, layout: layout, remote: remote, summary: &summary)
        // Each device's chain, as far as its head goes: another copy's bundle beside it holds other
        // changes under the same numbers, and a cut claiming past the head claims what no one pushed.
        var chains: [UUID: Chain] = [:]
        for cut in cuts {
            for device in cut.cut.through.keys where chains[device] == nil {
                chains[device] = try chain(of: device, devices[device], heads: heads, layout: layout)
            }
        }
        // A cut is as much its device's word as its head is: one naming its own changes past the
        // head in the store means the head was put back (red team round 44, F3), and the changes
        // between are in the checkpoints whose cuts name them.
        var ownClaims: [UUID: UInt64] = [:]
        for (_, _, cut) in cuts where cut.device != deviceID && !revoked.contains(cut.device) {
            if let own = cut.through[cut.device], own > chains[cut.device]?.end ?? 0 {
                ownClaims[cut.device] = max(ownClaims[cut.device] ?? 0, own)
            }
        }
        // How far this vault holds each device's changes: its cursor, and what the checkpoints it
        // imported (in this pull, or before, by their entity tags) hold past it.
        var held = pulledBefore
        func hold(_ cut: RemoteCut, except ahead: Set<UUID> = []) {
            for (device, covered) in cut.through where !ahead.contains(device) {
                held[device] = max(held[device] ?? 0, covered)
            }
        }
        for (id, bundleKey, cut) in cuts where appliedCheckpoints[id].map({ $0 == listed[bundleKey]?.etag }) == true {
            hold(cut)
        }
        // Checkpoints this pull needed and could not import, with their cuts.
        var unusable: [(id: String, bundleKey: String, cut: RemoteCut)] = []
        // The devices whose records each checkpoint imported held ahead of this machine's clock.
        var aheadIn: [String: Set<UUID>] = [:]
        for (id, bundleKey, cut) in cuts {
            let needed = cut.through.contains { device, covered in
                let after = pulledBefore[device] ?? 0
                guard device != deviceID, !revoked.contains(device), let chain = chains[device],
                    after < min(covered, chain.end)
                else { return false }
                return !chain.goesOn(after: after)
            }
            // Changes a device's own cut names past its head, which this vault does not hold: applied
            // from any checkpoint that holds them, records only and once (by its entity tag), since
            // the cursor stays within the head (a cut signed with leaked keys may claim anything).
            let pastHead = cut.through.contains { device, covered in
                guard let claim = ownClaims[device], let chain = chains[device] else { return false }
                return held[device] ?? 0 < min(covered, claim) && covered > chain.end
            }
            // A record held back for chunks its sender may never send (revoked since, say) applies
            // from a checkpoint that holds them: each checkpoint is imported for that once, as it
            // stands (outside test of G5's fix, F2).
            let forHeld = holdsRecordsBack && appliedCheckpoints[id] != listed[bundleKey]?.etag
            if needed || pastHead || forHeld, !summary.checkpoints.contains(bundleKey) {
                // A bundle cut short since its cut was written is not downloaded (red team round 44,
                // F3); one whose entity tag alone changed is (a copy of the same bytes has another
                // tag), and its import checks every byte.
                if let mismatch = cut.bundleMismatch(listed[bundleKey], sizeOnly: true) {
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
                        writer: cut.device,
                        cut: cut
                    )
                } catch  where error.code == .param || error.code == .decode || error.code == .notTrusted {
                    if error.code == .notTrusted { try refuseIfOutOfGroup() }
                    // Its bundle was overwritten or cut short (red team round 20, R20-3), or the
                    // membership log in its header altered (a signature that does not verify): the cut
                    // counts for nothing then, and what only it held waits for the next push of a
                    // member that holds it, which writes it again (the repair does not count such a
                    // cut either). Refusing the pull would let whoever may write to the store stop
                    // every device (copies model, seed 69).
                    summary.notices.append("Ignored the checkpoint \(id): \(error.message).")
                    unusable.append((id, bundleKey, cut))
                    continue
                }
                summary.bytes += imported.bytes
                summary.applied.add(imported.applied)
                summary.checkpoints.append(bundleKey)
                summary.refusedFutureRecords += imported.refusedFutureRecords
                summary.devicesAhead.merge(imported.devicesAhead) { max($0, $1) }
                // Records refused for clock stamps ahead of this machine's clock: the devices they
                // name keep their cursors, and the checkpoint is not noted as applied, so the next
                // pulls import it again until their time has come, and no compaction here covers it
                // (outside test of the F2 fix, finding 1: a checkpoint's refused records were lost).
                aheadIn[bundleKey] = Set(imported.devicesAhead.keys).subtracting([deviceID])
                for device in imported.devicesAhead.keys where device != deviceID && cut.through[device] != nil {
                    guard !summary.waitingDevices.contains(device) else { continue }
                    summary.noteWaiting(device)
                    summary.notices.append(
                        "Waiting for device \(device.uuidString.lowercased())'s changes in the checkpoint \(id): some of its records carry clock stamps ahead of this machine's clock and were refused (see the warning); the next pulls import the checkpoint again until their time has come."
                    )
                }
            }
            guard summary.checkpoints.contains(bundleKey) else { continue }
            let ahead = aheadIn[bundleKey] ?? []
            hold(cut, except: ahead)
            // A device this vault did not know had no chain it trusted; the checkpoint just imported
            // may have admitted it (its log does), so its cursor moves as far as its head allows.
            for device in cut.through.keys where chains[device]?.end == 0 {
                chains[device] = try chain(of: device, devices[device], heads: heads, layout: layout)
            }
            let schema = schema
            let etag = listed[bundleKey]?.etag ?? ""
            try storage("recording the checkpoint \(bundleKey)") {
                try environment.write { txn in
                    let requests = SyncRequests(schema: schema)
                    let applied = try cursors.load(in: txn)
                    for (device, covered) in cut.through where device != deviceID && !ahead.contains(device) {
                        let raised = (chains[device] ?? Chain()).cursorAfterCheckpoint(
                            covered,
                            applied: applied[device] ?? 0
                        )
                        guard raised > applied[device] ?? 0 else { continue }
                        try cursors.record(device, through: raised, in: txn)
                        try requests.noteCovered(device.bytes, through: raised, in: txn)
                    }
                    if !etag.isEmpty, ahead.isEmpty { try cursors.recordCheckpointApplied(etag, id: id, in: txn) }
                }
            }
        }
        try noteWaiting(unusable, chains: chains, held: held, cursors: cursors, revoked: revoked, summary: &summary)
        // Records of checkpoints no longer in the store go.
        let gone = Set(appliedCheckpoints.keys).subtracting(layout.checkpoints(in: listing).keys)
        if !gone.isEmpty {
            try storage("recording the checkpoints applied") {
                try environment.write { txn in for id in gone { try cursors.forgetCheckpointApplied(id, in: txn) } }
            }
        }
        return ownClaims
    }

    /// The checkpoints complete in `listing` (cut and bundle) whose cut this vault trusts, in the
    /// order of their ids: a cut under an epoch this vault lacks, or signed by a device it does not
    /// know yet, is trusted once the checkpoint's bundle, imported first, gave the key or admitted
    /// the device. The rest are named in `summary`'s notices (and, when sealed in an epoch this
    /// vault cannot open yet, its waiting checkpoints).
    private func trustedCuts(
        _ listing: [S3Object],
        client: S3Client,
        layout: RemoteLayout,
        remote: S3Remote,
        summary: inout PullSummary
    ) throws(CofferError) -> [(id: String, bundleKey: String, cut: RemoteCut)] {
        var cuts: [(id: String, bundleKey: String, cut: RemoteCut)] = []
        for (id, state) in layout.checkpoints(in: listing).sorted(by: { $0.key < $1.key })
        where state.hasCut && state.hasBundle {
            let cutKey = layout.checkpointCutKey(id)
            guard let bytes = try client.get(cutKey) else { continue }
            let bundleKey = layout.checkpointBundleKey(id)
            do throws(CofferError) {
                do throws(CofferError) {
                    cuts.append((id, bundleKey, try verifiedCut(bytes, key: cutKey, id: id)))
                } catch  where error.code == .keyUnavailable || error.code == .notTrusted {
                    // A newer epoch, or a device this vault's log does not know yet: the checkpoint's
                    // log may seal the key to this device, or admit its writer.
                    let writer = try? RemoteCut.signer(of: bytes, key: cutKey).device
                    let known = try knowsDevice(writer)
                    guard error.code == .keyUnavailable || (writer != nil && !known) else { throw error }
                    summary.bytes +=
                        try pullCheckpoint(bundleKey, client: client, origin: remote.identity, writer: writer).bytes
                    summary.checkpoints.append(bundleKey)
                    cuts.append((id, bundleKey, try verifiedCut(bytes, key: cutKey, id: id)))
                }
            } catch  where error.code == .notTrusted || error.code == .decode || error.code == .param {
                // A cut no active member signed (forged, or written by a device revoked since), or a
                // pair of objects that are no checkpoint (planted by whoever may write to the store),
                // counts for nothing: following it would raise this vault's cursors past bundles it
                // lacks, and refusing the pull would let it stop every device (red team round 19).
                // A cut whose signer is not an active member, naming another checkpoint, was copied
                // over this one's or forged: say so (outside test of the G5 fix, F3: a revoked
                // device's genuine cut copied over an honest checkpoint's was named as that
                // checkpoint's own). A genuine cut under the wrong name says so itself (`.decode`).
                var why = error.message
                if error.code == .notTrusted, let named = RemoteCut.checkpointNamed(in: bytes), named != id {
                    why +=
                        " (and its text names checkpoint \(named), not this one: a cut copied over this one's, or a forged one)"
                }
                summary.notices.append("Ignored the checkpoint \(id): \(why).")
            } catch  where error.code == .keyUnavailable {
                // Sealed in a key epoch no object this vault can open gives it yet: the changes only
                // this checkpoint holds wait, the rest of the pull goes on (red team round 19, N4).
                summary.waitingCheckpoints.append(bundleKey)
                summary.notices.append(
                    "Could not open the checkpoint \(id) yet: \(error.message). The changes only it holds wait; a later pull applies it once a member seals its key epoch to this vault, which its next push does."
                )
            }
        }
        return cuts
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
        held: [UUID: UInt64],
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
                return max(after, held[device] ?? 0) < end(device, covered) && !chain.goesOn(after: after)
            }
            guard !lacking.isEmpty else { continue }
            summary.waitingCheckpoints.append(bundleKey)
            let changes = lacking.map { device, covered in
                "\(max(applied[device] ?? 0, held[device] ?? 0) + 1)-\(end(device, covered)) of device \(device.uuidString.lowercased())"
            }
            // A cut naming its own device past the head in the store: the head was put back, or the
            // cut claims more than the device pushed (signed with its keys).
            let pastHead = lacking.filter { device, covered in
                device == cut.device && covered > chains[device]?.end ?? 0
            }
            let claim = pastHead.first.map { device, covered in
                " Device \(device.uuidString.lowercased()) signed that cut, naming its changes through \(covered), past its head in the store (through \(chains[device]?.end ?? 0)); its next push writes them again. If pulls still wait for them after it, the cut claims more than the device pushed: whoever signed it holds the device's keys, and revoking the device ends the wait."
            }
            // Named once: the pull of each device's bundles passes over these.
            for device in lacking.keys { summary.noteWaiting(device) }
            summary.notices.append(
                "Waiting for changes \(changes.sorted().joined(separator: ", ")): the store holds them only in the checkpoint \(id), which this vault could not use; the next push of a member that holds them writes them again, and a later pull applies them."
                    + (claim ?? "")
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
        writer: UUID? = nil,
        cut: RemoteCut? = nil
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
                // Another genuine export of the same device (an older checkpoint's bundle, of the
                // same size) would pass for this one, and its cut would raise the cursors past what
                // it holds (outside test of red team round 44's F3 fix, G4).
                if let mismatch = cut?.saltMismatch(header.salt) { throw CofferError(.decode, mismatch) }
            }
        )
    }
}
