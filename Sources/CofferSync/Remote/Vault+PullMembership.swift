import Foundation

// Before a pull applies anything, it learns what the store says of the group: the membership log
// in the header of each device's newest bundle and of each checkpoint (red team round 18).
extension Vault {
    /// Merges, from the header of every device's newest bundle and every checkpoint's bundle in
    /// `listing`, what its membership log says that has effect (as for a refused bundle's log:
    /// revocations, rekeys, epochs and the keys sealed to this device), so that a pull judges each
    /// object against everything the store tells of the group, whatever order it takes the devices
    /// in. Without it, a revoked device's bundles taken before its revoker's were applied (and
    /// passed on), and a checkpoint sealed in an epoch whose key only another device's later bundle
    /// brings stopped every pull. Best effort: an object that cannot be read or is not of this group
    /// is left to the pull, which reports it.
    func learnMembershipFromHeaders(
        _ listing: [S3Object],
        client: S3Client,
        layout: RemoteLayout
    ) throws(CofferError) {
        let objects = Dictionary(listing.map { ($0.key, $0) }) { first, _ in first }
        let cursors = PulledCursors(schema: schema, remote: client.remote.identity)
        var keys: [String] = []
        for (device, held) in layout.devices(in: listing) where device != deviceID && held.hasHead {
            let claimed = try client.get(layout.headKey(device)).flatMap { RemoteHead.claimedLatest(of: $0) }
            guard let newest = claimed.flatMap({ held.bundles.contains($0) ? $0 : nil }) ?? held.bundles.max()
            else { continue }
            // A newest object this vault applied already brought its log.
            let applied = try storage("reading how far this vault has pulled") {
                try environment.read { txn in try cursors.latestApplied(of: device, in: txn) }
            }
            if let tag = held.etags[newest], !tag.isEmpty, tag == applied { continue }
            keys.append(layout.bundleKey(device, newest))
        }
        for (id, state) in layout.checkpoints(in: listing) where state.hasCut && state.hasBundle {
            keys.append(layout.checkpointBundleKey(id))
        }
        for key in keys.sorted() {
            guard let object = objects[key] else { continue }
            var source = S3RangeSource(
                client: client,
                key: key,
                size: object.size,
                etag: object.etag,
                rangeSize: 256 << 10
            )
            guard let (header, _) = try? BundleHeader.read(from: &source), header.syncGroupID == syncGroupID,
                !header.log.isEmpty, let log = try? GroupLog(group: header.syncGroupID, decoding: header.log)
            else { continue }
            _ = try? learnMembership(from: log)
        }
    }
}
