import Foundation

// Bundles off a device's chain (docs/FORMAT.md, "Bundles off the chain"): objects in a device's
// folder that its head's chain of bundles does not pass through.
extension RemoteLayout.BundleName {
    /// Whether this bundle lies past `head`, starting no later than just after it: a push under way
    /// or killed before its head, or, from another copy of the vault, a push whose head the other
    /// copy's overwrote.
    func isPast(_ head: RemoteHead) -> Bool {
        first <= last && last > head.latest.last && first <= head.latest.last + 1
    }

    /// Whether this bundle in a vault's own folder, whose head there is the vault's own, was pushed
    /// by another copy of the vault: past the head, or from the same cursor as the head's bundle
    /// under another name (both copies passed their last look at the head, and this vault's head
    /// went up last).
    func isOtherCopys(beside head: RemoteHead) -> Bool {
        isPast(head) || (first <= last && first == head.latest.first && self != head.latest)
    }
}

extension Vault {
    /// Applies the bundles someone else holding this device's keys pushed into its folder,
    /// `objects`, whose head there is this vault's own `head`: every bundle this vault did not write
    /// (``OwnBundles``), another copy's past or beside that head, or a thief's inside this device's
    /// range, which the other devices apply as this device's (red team round 24, F2).
    func applyOtherCopys(
        _ objects: RemoteLayout.DeviceObjects,
        beside head: RemoteHead,
        client: S3Client,
        layout: RemoteLayout,
        summary: inout PullSummary
    ) throws(CofferError) {
        let own = OwnBundles(schema: schema, remote: client.remote.identity, device: deviceID)
        var written = try storage("reading which bundles this vault wrote") {
            try environment.read { txn in try own.names(in: txn) }
        }
        if written.isEmpty {
            // A vault that pushed before Coffer kept these names takes what lies on its chain now for
            // its own.
            written = Set(objects.bundles.filter { !$0.isOtherCopys(beside: head) })
            try storage("recording which bundles this vault wrote") {
                try environment.write { txn in try own.record(written, in: txn) }
            }
        }
        // Not those this vault wrote: after a push that sent everything again (a store rolled back,
        // a rekey), its older bundles from change 1 lie beside its head, and are its own.
        let names = objects.bundles.filter { $0.first <= $0.last && !written.contains($0) }
        try applyOffChain(names, of: deviceID, objects, client: client, layout: layout, summary: &summary)
    }

    /// Applies `names`, bundles of `device` off its head's chain, once each (by its entity tag),
    /// records only: the device's cursor stays, so its next bundles come as usual. Another copy of
    /// the vault whose head was overwritten re-enrols and sends its changes again on its next push or
    /// pull, but it may never come back (restored from an older backup, or lost): such a bundle holds
    /// acknowledged changes only it has. Applying a push under way, or one killed before its head,
    /// early changes nothing its head's chain does not bring again. A bundle that is no bundle of
    /// the device is passed over with a notice; one sealed in keys this vault does not hold (yet, or
    /// any more) waits, or is skipped as its device's chain would skip it.
    func applyOffChain(
        _ names: [RemoteLayout.BundleName],
        of device: UUID,
        _ objects: RemoteLayout.DeviceObjects,
        client: S3Client,
        layout: RemoteLayout,
        summary: inout PullSummary
    ) throws(CofferError) {
        let origin = client.remote.identity
        let cursors = PulledCursors(schema: schema, remote: origin)
        for name in names.sorted() {
            let tag = objects.etags[name] ?? ""
            let applied = try storage("reading how far this vault has pulled") {
                try environment.read { txn in try cursors.offChainApplied(name, of: device, in: txn) }
            }
            guard !tag.isEmpty, applied != tag else { continue }
            let key = layout.bundleKey(device, name)
            do throws(CofferError) {
                let imported = try pullBundle(key, from: client, origin: origin, expecting: (device, name)) { _ in }
                summary.bundles.append(PulledBundle(object: key, imported: imported))
                summary.applied.add(imported.applied)
                summary.bytes += imported.bytes
            } catch  where error.code == .keyUnavailable || error.code == .itemNotFound {
                continue  // tried again once this vault holds the key; or gone (compacted, or rewritten)
            } catch  where SupersededKeys.caused(error) {
                // Signed with keys the device has replaced: pushed before its rekey, which sent its
                // changes again from the start under the new keys.
            } catch  where error.code == .notTrusted || error.code == .param || error.code == .decode {
                // Signed with keys the device had before its rekey (its own pushes then, which the
                // push after the rekey sent again), or no bundle of the device's at all.
                if !(device == deviceID && error.code == .notTrusted) {
                    summary.notices.append("Passed over \(key), off its device's chain of bundles: \(error.message).")
                }
            }
            // Each object is tried once.
            try storage("recording the pull of \(key)") {
                try environment.write { txn in try cursors.recordOffChainApplied(tag, name: name, of: device, in: txn) }
            }
        }
    }
}
