import Foundation

// Changes the store lost when the checkpoint that held them stopped counting: a compaction deleted
// the bundles its cut covered, then its writer was revoked, or rekeyed (its cut is signed with keys
// it replaced), so no device follows that cut any more (red team round 17, F1; docs/FORMAT.md,
// "Compaction"). A push that finds such a gap writes a checkpoint of what this vault holds.
extension Vault {
    /// What the store no longer holds of the group's changes.
    struct LostChanges {
        /// For each active device, the first run of its changes that is in no listed bundle and in
        /// no checkpoint that counts.
        var gaps: [UUID: ClosedRange<UInt64>] = [:]
        /// Why each checkpoint in the store that no longer counts was ignored.
        var ignoredCheckpoints: [String] = []
    }

    /// The changes of active members that the store holds in no listed bundle and no checkpoint that
    /// counts: "every change ever pushed is in a listed bundle or in a complete checkpoint" no longer
    /// holds for them. `nil` when this vault cannot judge (a cut in a key epoch it does not hold).
    func lostChanges(
        in listing: [S3Object],
        members: [GroupMember],
        client: S3Client,
        layout: RemoteLayout
    ) throws(CofferError) -> LostChanges? {
        var lost = LostChanges()
        var covered: [UUID: UInt64] = [:]
        let listed = Dictionary(listing.map { ($0.key, $0) }) { first, _ in first }
        for (id, state) in layout.checkpoints(in: listing).sorted(by: { $0.key < $1.key })
        where state.hasCut && state.hasBundle {
            let key = layout.checkpointCutKey(id)
            guard let bytes = try client.get(key) else { continue }
            do throws(CofferError) {
                let cut = try verifiedCut(bytes, key: key, id: id)
                // A cut counts only with its bundle: one overwritten with anything else, or cut short,
                // holds nothing (red team round 20, R20-3). A cut that records its bundle's size and
                // entity tag tells a changed one from the listing, even where only what follows the
                // header changed (red team round 44, F3); the first bytes of any say whose export it is.
                if let mismatch = cut.bundleMismatch(listed[layout.checkpointBundleKey(id)]) {
                    lost.ignoredCheckpoints.append("\(id): \(mismatch)")
                    continue
                }
                // A cut written before cuts recorded their bundle (or by someone holding a device's
                // keys who left the record out) cannot vouch for a bundle damaged past its header:
                // what only it covers is written again once, by a checkpoint that records its own.
                guard cut.bundle != nil else {
                    lost.ignoredCheckpoints.append(
                        "\(id): its cut does not record its bundle (written before Coffer recorded a checkpoint bundle's size, entity tag and salt, or by someone holding its device's keys who left them out), so this vault cannot tell whether the bundle is whole"
                    )
                    continue
                }
                let prefix = try client.getPrefix(layout.checkpointBundleKey(id), count: BundleHeader.fixedSize)
                guard let header = BundleHeader.fixedFields(ofPrefix: prefix), header.deviceID == cut.device,
                    header.firstSequence == 1
                else {
                    lost.ignoredCheckpoints.append("\(id): its bundle is not the export its cut describes")
                    continue
                }
                if let mismatch = cut.saltMismatch(header.salt) {
                    lost.ignoredCheckpoints.append("\(id): \(mismatch)")
                    continue
                }
                for (device, through) in cut.through { covered[device] = max(covered[device] ?? 0, through) }
            } catch  where error.code == .notTrusted || error.code == .decode || error.code == .itemNotFound {
                lost.ignoredCheckpoints.append("\(id): \(error.message)")
            } catch  where error.code == .keyUnavailable {
                return nil
            }
        }
        let devices = layout.devices(in: listing)
        for member in members where member.isActive {
            guard let objects = devices[member.deviceID], objects.hasHead else { continue }
            var next = (covered[member.deviceID] ?? 0) + 1
            var gap: ClosedRange<UInt64>?
            for bundle in objects.bundles.sorted(by: { $0.first < $1.first }) {
                if bundle.first > next {
                    gap = next...(bundle.first - 1)
                    break
                }
                next = max(next, bundle.last + 1)
            }
            // Every bundle it lists ends before its head's last change: the rest went (a compaction
            // deletes a device's bundles from its first on, so a gap is at the start or the end).
            if gap == nil, let last = try? lastPushed(by: member.deviceID, client: client, layout: layout), last >= next
            {
                gap = next...last
            }
            if let gap { lost.gaps[member.deviceID] = gap }
        }
        return lost
    }

    /// The last change `device`'s head in the store says it pushed, when this vault trusts the head.
    private func lastPushed(by device: UUID, client: S3Client, layout: RemoteLayout) throws(CofferError) -> UInt64? {
        let key = layout.headKey(device)
        guard let bytes = try client.get(key) else { return nil }
        return try trustedHead(bytes, key: key, device: device).latest.last
    }

    /// After a push: when the store lost changes of an active member that this vault holds, writes
    /// a checkpoint of this vault's syncable state (nothing is deleted), so members that missed them,
    /// and devices that join later, get them again. Says what it did, or why it could not, in
    /// `summary`'s notices.
    func repairLostChanges(remote: S3Remote, summary: inout PushSummary) throws(CofferError) {
        let client = S3Client(remote)
        let layout = RemoteLayout(location: remote.location)
        let listing = try client.list(prefix: layout.listingPrefix)
        let members = try members()
        guard let lost = try lostChanges(in: listing, members: members, client: client, layout: layout),
            !lost.gaps.isEmpty
        else { return }
        let names = Dictionary(members.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        func describe(_ device: UUID, _ gap: ClosedRange<UInt64>) -> String {
            let name = names[device].map { "\($0.name) (\(device.uuidString.prefix(8).lowercased()))" }
            return "changes \(gap.lowerBound)-\(gap.upperBound) of \(name ?? device.uuidString.lowercased())"
        }
        let what = lost.gaps.sorted { $0.key.uuidString < $1.key.uuidString }.map { describe($0.key, $0.value) }
            .joined(separator: ", ")
        let why =
            lost.ignoredCheckpoints.isEmpty
            ? "their bundles are gone and no checkpoint that counts holds them"
            : "the checkpoint that held them no longer counts (\(lost.ignoredCheckpoints.joined(separator: "; ")))"
        // The cut: what this vault holds of each active device that pushed here, as a compaction's.
        let schema = schema
        let applied = try storage("reading how far this vault has pulled") {
            try environment.read { txn in try PulledCursors(schema: schema, remote: remote.identity).load(in: txn) }
        }
        let devices = layout.devices(in: listing)
        var through: [UUID: UInt64] = [:]
        for member in members where member.isActive && devices[member.deviceID]?.hasHead == true {
            let device = member.deviceID
            if device == deviceID {
                if let last = try lastPushed(by: device, client: client, layout: layout) { through[device] = last }
            } else if let cursor = applied[device] {
                through[device] = cursor
            }
        }
        guard lost.gaps.contains(where: { device, gap in (through[device] ?? 0) >= gap.lowerBound }) else {
            summary.notices.append(
                "The store lacks \(what): \(why). This vault does not hold them either; the push of a member that does writes them again."
            )
            return
        }
        let held = try storage("reading the records held back") {
            try environment.read { txn in try HeldRecords(schema: schema).all(in: txn).count }
        }
        guard held == 0, try !syncGroupIsFrozen() else {
            summary.notices.append(
                "The store lacks \(what): \(why). This vault cannot write them again now (it holds records back until data they need arrives, or the group is frozen); pull, then push again, or push from another member."
            )
            return
        }
        let cut = RemoteCut(id: RemoteCut.freshID(), device: deviceID, through: through)
        let sites: BundleSites
        let lostChunks: Int
        do {
            (sites, lostChunks) = try writeCheckpoint(
                cut,
                client: client,
                layout: layout,
                unreadable: .leaveOut,
                progress: nil
            )
        } catch {
            throw CofferError(
                error.code,
                "the push itself is done\(summary.object.map { " (\($0))" } ?? ""), but writing a checkpoint to give the store back \(what), which it lost (\(why)), failed: \(error.message). Push again to retry",
                underlying: error
            )
        }
        try noteSites(sites, of: cut, remote: remote, layout: layout)
        let key = layout.checkpointBundleKey(cut.id)
        summary.repairCheckpoint = key
        // Said only of what the checkpoint holds: the rest waits for a member that holds it.
        let short = lost.gaps.filter { device, gap in through[device] ?? 0 < gap.upperBound }
            .sorted { $0.key.uuidString < $1.key.uuidString }
            .map { device, gap in
                describe(device, max(gap.lowerBound, (through[device] ?? 0) + 1)...gap.upperBound)
            }
        let lacking =
            short.isEmpty
            ? ""
            : " It lacks \(short.joined(separator: ", ")), which this vault does not hold either: the push of a member that does writes them."
        summary.notices.append(
            "The store had lost \(what): \(why). This push wrote the checkpoint \(key), everything this vault holds (\(ByteCount.format(Int64(sites.size)))), so the devices that missed what it holds, and devices that join later, get it; \(InterfaceName.compactRemote) removes what it replaces.\(lacking)"
        )
        if let lost = Self.lostChunksNotice(lostChunks, remote: remote) { summary.notices.append(lost) }
    }
}
