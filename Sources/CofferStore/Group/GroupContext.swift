package import Foundation

/// A vault's sync group inside one write transaction: the membership log, the group keys this
/// device holds, and the device's own keys to sign with. Operations change it through its methods
/// and ``store(in:)`` writes it back in the same transaction, so a membership change and the keys it
/// brings commit together or not at all (docs/FORMAT.md, "Membership log").
package struct GroupContext {
    package private(set) var log: GroupLog
    /// Every group key held, the original epoch's (the sync root) included.
    package private(set) var roots: [KeyEpoch: SecureBytes]
    package let device: UUID
    package let deviceKeys: DeviceKeys
    package let publicKeys: DevicePublicKeys
    /// Whether anything changed since it was loaded.
    package private(set) var changed = false

    /// The meta entries the group lives in.
    package enum Meta {
        package static let log = "group-log"
        package static let epoch = "group-epoch"
        package static let joinRequest = "join-request"
    }

    package init(
        log: GroupLog,
        roots: [KeyEpoch: SecureBytes],
        device: UUID,
        deviceKeys: DeviceKeys,
        changed: Bool = false
    ) throws(CofferError) {
        self.log = log
        self.roots = roots
        self.device = device
        self.deviceKeys = deviceKeys
        self.changed = changed
        do {
            publicKeys = DevicePublicKeys(
                agreement: try deviceKeys.agreement.publicKey(),
                signing: try deviceKeys.signing.publicKey()
            )
        } catch {
            throw CofferError(.internalError, "reading the device's public keys failed: \(error)", underlying: error)
        }
    }

    /// The state the log describes.
    package func state() throws(CofferError) -> GroupState { try log.state(roots: { roots[$0] }) }

    /// The group key new records are sealed with, and its epoch.
    package func currentRoot() throws(CofferError) -> (epoch: KeyEpoch, root: SecureBytes) {
        let epoch = try state().currentEpoch
        guard let root = roots[epoch] else {
            throw CofferError(
                .keyUnavailable,
                "this device does not hold the sync group's current key (epoch \(epoch)); it may have been revoked"
            )
        }
        return (epoch, root)
    }

    /// The epochs to install in the key ring.
    package func epochRoots() throws(CofferError) -> EpochRoots {
        EpochRoots(roots: roots.filter { !$0.key.isOriginal }, current: try currentRoot().epoch)
    }

    /// Appends an entry by this device.
    package mutating func append(_ change: GroupEntry.Change) throws(CofferError) {
        let entry = try GroupEntry(
            change: change,
            previous: log.head,
            author: device,
            signing: deviceKeys.signing,
            group: log.group
        )
        try log.append(entry, roots: { roots[$0] })
        changed = true
    }

    /// Appends this device's own joining entry, proving it holds the current group key.
    package mutating func appendJoined(name: String) throws(CofferError) {
        let epoch = log.entries.isEmpty ? KeyEpoch.original : try state().currentEpoch
        guard let root = roots[epoch] else {
            throw CofferError(.keyUnavailable, "this device does not hold the group key of epoch \(epoch) to join with")
        }
        let message = GroupEntry.proofMessage(
            previous: log.head,
            author: device,
            keys: publicKeys,
            name: name,
            epoch: epoch
        )
        try append(
            .joined(keys: publicKeys, name: name, epoch: epoch, proof: try GroupKeys.proof(of: message, root: root))
        )
    }

    /// Starts a new key epoch: a fresh group key sealed to every active member, carrying every group
    /// key held so far.
    package mutating func startEpoch() throws(CofferError) {
        let state = try state()
        let epoch = KeyEpoch.random()
        let root = SecureBytes.random(count: 32)
        var boxes: [UUID: [UInt8]] = [:]
        for member in state.activeMembers {
            boxes[member.device] = try GroupKeys.box(root, epoch: epoch, to: member.keys, group: log.group)
        }
        let history = try GroupKeys.sealHistory(roots, under: root, epoch: epoch, group: log.group)
        roots[epoch] = root
        try append(.epochStarted(epoch: epoch, boxes: boxes, history: history))
    }

    /// Learns every group key `log` seals to this device (boxes, and the histories they open).
    package mutating func learnKeys(from other: GroupLog) {
        let collected = GroupKeys.collect(from: other, device: device, key: deviceKeys.agreement, known: roots)
        if collected.count != roots.count {
            roots = collected
            changed = true
        }
    }

    /// Merges `other`, another device's log of the group: learns the keys it seals to this device,
    /// checks it from its first entry, then keeps whichever log every device keeps
    /// (``GroupLog/relation(to:)``). When the other side of a fork wins, this device appends again
    /// what it had written in the losing branch, where it still means something (a device to add,
    /// a device to revoke, a new epoch, a join policy), so no membership change is lost.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when `other` is not a valid log of the group.
    package mutating func merge(_ other: GroupLog) throws(CofferError) {
        guard other.group == log.group else {
            throw CofferError(.notTrusted, "a membership log of another sync group was offered; it was refused")
        }
        learnKeys(from: other)
        _ = try other.state(roots: { roots[$0] })
        switch log.relation(to: other) {
        case .same, .ahead:
            return
        case .behind:
            adopt(other)
        case .forked(let common, let otherWins):
            guard otherWins else { return }
            let displaced = log.entries[common...].filter { $0.author == device }
            adopt(other)
            for entry in displaced { try reapply(entry) }
        }
    }

    /// Appends anew, on top of the winning branch, what a displaced entry of this device did, if it
    /// still applies.
    private mutating func reapply(_ entry: GroupEntry) throws(CofferError) {
        let state = try state()
        let me = state.member(device)
        if case .joined(_, let name, _, _) = entry.change {
            // A device that joined on the losing side joins again, if passphrase joins are open.
            if me == nil, state.policy == .passphrase, roots[state.currentEpoch] != nil { try appendJoined(name: name) }
            return
        }
        guard me?.isActive == true else { return }
        switch entry.change {
        case .joined:
            break
        case .added(let added, let keys, let name, _, _):
            guard state.member(added) == nil else { return }
            let (epoch, root) = try currentRoot()
            try append(
                .added(
                    device: added,
                    keys: keys,
                    name: name,
                    epoch: epoch,
                    box: try GroupKeys.box(root, epoch: epoch, to: keys, group: log.group)
                )
            )
        case .revoked(let revoked, let cutoff):
            guard state.member(revoked)?.isActive == true else { return }
            try append(.revoked(device: revoked, cutoff: cutoff))
        case .epochStarted:
            // A fresh key, not the displaced one: a device revoked on the winning side may hold that.
            // Records sealed under the displaced key stay readable: the new epoch carries it.
            try startEpoch()
        case .policy(let policy):
            if state.policy != policy { try append(.policy(policy)) }
        }
    }

    /// Replaces the log with `other` (checked by the caller), keeping every key.
    package mutating func adopt(_ other: GroupLog) {
        log = other
        changed = true
    }

    /// The `meta` entries that store the log, the current epoch and the keys (sealed under the
    /// device root).
    package func metaEntries(deviceRoot: SecureBytes, vaultID: UUID) throws(CofferError) -> [(String, [UInt8])] {
        let epoch = try state().currentEpoch
        return [
            (Meta.log, log.encoded),
            (Meta.epoch, withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }),
            (GroupKeys.metaKey, try GroupKeys.sealStore(roots, deviceRoot: deviceRoot, vaultID: vaultID)),
        ]
    }

    /// Writes ``metaEntries(deviceRoot:vaultID:)`` in `txn`.
    package func store(in txn: Transaction, schema: Schema, deviceRoot: SecureBytes, vaultID: UUID) throws {
        for (name, value) in try metaEntries(deviceRoot: deviceRoot, vaultID: vaultID) {
            try txn.put(schema.meta, key: Array(name.utf8), value: value)
        }
    }
}
