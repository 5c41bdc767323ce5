import Foundation

extension Vault {
    /// Leaves this vault's sync group and founds a new one, with this device as its only member: for a
    /// device that can no longer trust its group (a thief revoked it while it revoked the thief, and
    /// no member it trusts is left), or that splits off.
    ///
    /// The new group has a fresh id, accepts devices by approval only, and starts a key epoch at once
    /// whose key only this device holds; it carries the old group keys its records need (the keys of
    /// epochs the old log started, and those that seal a syncable record this vault holds), so its
    /// records stay readable here and by the devices it approves, and no made-up keys a stolen
    /// founder padded the old log with (docs/FORMAT.md, "What `group new` carries"). Anyone who held the old group's keys (a
    /// thief among them) cannot join it: a passphrase join made with the old keys never counts once
    /// the new epoch is known, and no join block is carried until a member allows passphrase joins.
    /// Other devices join by approval (``requestJoin(at:passphrase:name:group:configuration:)-51kop``
    /// with a bundle this vault exports, then ``approve(_:)-3q91o``). Push to a new store prefix: the
    /// old group's objects are another group's.
    ///
    /// - Returns: The new group, for a device asking to join to compare.
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while locked, `.notTrusted` while this vault
    ///   waits for approval.
    @discardableResult
    public func startNewGroup() throws(CofferError) -> GroupReference {
        try foundNewGroup().group
    }

    /// ``startNewGroup()-4fuyt``, saying also how many syncable records no carried key opens: records
    /// sealed under epochs past `budget` (``NewGroupKeys/budget``), which only a member's modified
    /// client plants (0 otherwise). No export carries them (``BundleExporter``).
    package func foundNewGroup(
        carryingAtMost budget: Int = NewGroupKeys.budget
    ) throws(CofferError) -> (group: GroupReference, recordsLeftOut: Int) {
        let roots = try unlockedRoots()
        let deviceKeys = try self.deviceKeys()
        let (schema, vaultID, device) = (schema, id, deviceID)
        let group = UUID()
        let (context, recordsLeftOut) = try storage("founding a new sync group") {
            try environment.write { txn -> (GroupContext, Int) in
                let old = try groupContext(in: txn, roots: roots, deviceKeys: deviceKeys)
                let name = (try? old.state().member(device)?.name) ?? Self.defaultDeviceName
                let carried = NewGroupKeys(
                    held: old.roots,
                    log: old.log,
                    recordsByEpoch: try RecordEpochs.count(in: txn, schema: schema),
                    budget: budget
                )
                var context = try GroupContext(
                    log: GroupLog(group: group),
                    roots: carried.roots,
                    device: device,
                    deviceKeys: deviceKeys,
                    changed: true
                )
                try context.appendJoined(name: name)
                try context.append(.policy(.approval))
                try context.startEpoch(carryingEverything: true)
                try context.store(in: txn, schema: schema, roots: roots, vaultID: vaultID)
                try txn.put(schema.meta, key: Array(MetaKey.syncGroupID.utf8), value: group.bytes)
                _ = try txn.delete(schema.meta, key: Array(JoinBlock.metaKey.utf8))
                try Self.markFormat(in: txn, schema: schema)
                return (context, carried.recordsLeftOut)
            }
        }
        try installGroupKeys(try context.epochRoots(), group: group)
        return (try GroupReference(log: context.log), recordsLeftOut)
    }
}
