package import Foundation

/// The last state a ``GroupContext`` replayed, and what it was replayed from.
private final class StateMemo {
    struct Key: Equatable {
        let heads: [[UInt8]]
        let count: Int
        let keys: Set<KeyEpoch>
        let trusted: Set<KeyEpoch>
    }

    private var key: Key?
    private var state: GroupState?

    func state(for key: Key) -> GroupState? { key == self.key ? state : nil }

    func store(_ state: GroupState, for key: Key) {
        self.key = key
        self.state = state
    }
}

/// A vault's sync group inside one write transaction: the membership log, the group keys this
/// device holds, and the device's own keys to sign with. Operations change it through its methods
/// and ``store(in:)`` writes it back in the same transaction, so a membership change and the keys it
/// brings commit together or not at all (docs/FORMAT.md, "Membership log").
package struct GroupContext {
    package private(set) var log: GroupLog
    /// The group keys held, and which of them this device may seal with.
    package private(set) var keys: HeldGroupKeys
    /// Every group key held, the original epoch's (the sync root) included.
    package var roots: [KeyEpoch: SecureBytes] { keys.roots }
    package let device: UUID
    package private(set) var deviceKeys: DeviceKeys
    package private(set) var publicKeys: DevicePublicKeys
    /// Whether anything changed since it was loaded.
    package private(set) var changed = false
    /// Admissions that reached this vault in merged logs, each as the admitting device and the
    /// device it admitted: entries this vault did not append (it holds everything it appended), so
    /// when their author is this device, or a device this vault was before it re-enrolled, a copy
    /// holding its keys made them. ``store(in:schema:roots:vaultID:)`` adds them to
    /// ``Meta/admittedElsewhere``.
    package private(set) var admittedElsewhere: Set<Admission> = []
    /// The epoch this device sealed with when it was last an active member, as stored (meta
    /// ``Meta/memberEpoch``).
    package let memberEpoch: KeyEpoch?

    /// One admission: `author` added `admitted`.
    package struct Admission: Hashable, Sendable {
        package let author: UUID
        package let admitted: UUID
    }

    /// The meta entries the group lives in.
    package enum Meta {
        package static let log = "group-log"
        package static let epoch = "group-epoch"
        /// The epoch this device sealed with when it was last an active member (8 bytes): it seals
        /// with no earlier one once it is not (``sealingRoot()``).
        package static let memberEpoch = "group-member-epoch"
        package static let joinRequest = "join-request"
        /// The id of a group a member's log would have made overflow (``Vault/recordOverflow(of:)``).
        package static let overflowed = "group-overflowed"
        /// Admissions that reached this vault in merged logs (``admittedElsewhere``), 32 bytes each:
        /// the author's id, then the admitted device's. A rekey revokes the devices that this
        /// device's keys, or an earlier identity's, admitted elsewhere (red team rounds 17 and 18).
        package static let admittedElsewhere = "group-admitted-elsewhere"
        /// The device ids this vault had before it re-enrolled as a new device (a restored or cloned
        /// copy), 16 bytes each, oldest first: their keys are in its files too.
        package static let formerIdentities = "device-former-ids"
    }

    package init(
        log: GroupLog,
        roots: [KeyEpoch: SecureBytes],
        legacy: Set<KeyEpoch>? = nil,
        device: UUID,
        deviceKeys: DeviceKeys,
        memberEpoch: KeyEpoch? = nil,
        changed: Bool = false
    ) throws(CofferError) {
        self.log = log
        self.memberEpoch = memberEpoch
        self.keys = HeldGroupKeys(roots: roots, legacy: legacy, group: log.group)
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

    /// The state the log describes (replayed once per log and set of keys: the memo is shared by
    /// copies, and keyed by the log's head and the keys held).
    package func state() throws(CofferError) -> GroupState {
        let key = StateMemo.Key(
            heads: log.heads,
            count: log.entries.count,
            keys: Set(roots.keys),
            trusted: keys.committed.union(keys.legacy)
        )
        if let state = memo.state(for: key) { return state }
        let state = try log.state(roots: keys.trustedRoot)
        memo.store(state, for: key)
        return state
    }

    private let memo = StateMemo()

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

    /// The epoch this device seals with: the current one, or, while it does not hold that (it was
    /// left out of a fork's epoch and waits for a member to seal it the key again) or may not seal
    /// with the key it holds (one that commits to nothing, ``HeldGroupKeys``), the latest one it
    /// holds and may seal with, which every member can still open.
    package func sealingRoot() throws(CofferError) -> (epoch: KeyEpoch, root: SecureBytes) {
        let state = try state()
        var counted: (GroupEntry) -> Bool = { !state.voided.contains($0.hash) }
        var floor: (epoch: KeyEpoch, position: Int)?
        if state.member(device)?.isActive != true {
            // Revoked (two devices revoking each other, or both lose): the epochs this device started
            // at the same time count although they have no effect, since sealing under an earlier one
            // would hand what it writes next to whoever revoked it, who holds those. Not an epoch
            // concurrent with a rekey of this device: that one came from a copy holding its old keys.
            let graph = try GroupGraph(log.entries, group: log.group)
            let rekeys = log.entries.indices.filter {
                log.entries[$0].author == device && log.entries[$0].change.isKeysReplaced
            }
            let own = Set(
                log.entries.indices.filter { index in
                    log.entries[index].author == device && !rekeys.contains { graph.concurrent($0, index) }
                }.map { log.entries[$0].hash }
            )
            counted = { !state.voided.contains($0.hash) || own.contains($0.hash) }
            // Nor an epoch before the one it sealed with as a member: a log whose later entries lost
            // their effect (a stale copy's closing, signed on old entries, voided the joins of the
            // devices that started them) would hand what it writes next to whoever holds the old
            // one (red team round 26, F1: a revoked founder's copy read what the members it
            // evicted wrote).
            if let memberEpoch, let start = log.entries.lastIndex(where: { $0.startedEpoch == memberEpoch }) {
                floor = (memberEpoch, start)
            }
        }
        var started = log.entries.indices.compactMap { index in
            counted(log.entries[index]) ? log.entries[index].startedEpoch.map { (epoch: $0, position: index) } : nil
        }
        if let floor, !started.contains(where: { $0.position == floor.position }) {
            started.append(floor)
            started.sort { $0.position < $1.position }
        }
        for epoch in ([KeyEpoch.original] + started.map(\.epoch)).reversed() where keys.isTrusted(epoch) {
            if let root = roots[epoch] { return (epoch, root) }
        }
        return try currentRoot()
    }

    /// The epochs to install in the key ring.
    package func epochRoots() throws(CofferError) -> EpochRoots {
        EpochRoots(roots: roots.filter { !$0.key.isOriginal }, current: try sealingRoot().epoch)
    }

    /// While the log has more heads than an entry may name (a crafted log of many concurrent
    /// entries), appends entries that share no key (an empty `keysShared`), each naming as many heads
    /// as it may, so the entry that follows knows every entry this device holds: a revocation must
    /// not void joins it merely could not name. A device without the current key names what it can.
    ///
    /// The folds are made together and the log checked once: checking it after each one decided the
    /// whole log again per fold, minutes for a stolen member's mesh of made-up devices (red team round
    /// 14, F6). A log with room for an entry has room for every fold (``GroupLog/isFull``).
    private mutating func foldHeads() throws(CofferError) {
        var heads = log.heads
        guard heads.count > GroupEntry.maximumParents, !log.isFull else { return }
        let state = try state()
        guard state.member(device)?.isActive == true, let root = roots[state.currentEpoch] else { return }
        var folds: [GroupEntry] = []
        while heads.count > GroupEntry.maximumParents {
            let parents = Self.parents(among: heads, voided: state.voided)
            let history = try GroupKeys.sealHistory([:], under: root, epoch: state.currentEpoch, group: log.group)
            let fold = try GroupEntry(
                change: .keysShared(epoch: state.currentEpoch, history: history),
                parents: parents,
                author: device,
                signing: deviceKeys.signing,
                group: log.group
            )
            folds.append(fold)
            let named = Set(parents)
            heads = (heads.filter { !named.contains($0) } + [fold.hash]).sorted { $0.lexicographicallyPrecedes($1) }
        }
        try log.append(contentsOf: folds, roots: keys.trustedRoot)
        changed = true
    }

    /// The entries the next entry follows: every head of the log, or, when a log has been made wider
    /// than an entry may name (a crafted log of many concurrent entries), the heads of entries with
    /// effect first, so members can still revoke, rotate and approve. What an entry does not name it
    /// did not know, as the rules expect; the next entry names the rest.
    func nextParents() -> [[UInt8]] {
        let heads = log.heads
        guard heads.count > GroupEntry.maximumParents else { return heads }
        return Self.parents(among: heads, voided: (try? state().voided) ?? [])
    }

    /// As many of `heads` as an entry may name, those not `voided` first, in order.
    private static func parents(among heads: [[UInt8]], voided: Set<[UInt8]>) -> [[UInt8]] {
        let effectiveFirst = heads.filter { !voided.contains($0) } + heads.filter { voided.contains($0) }
        return Array(effectiveFirst.prefix(GroupEntry.maximumParents)).sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Appends an entry by this device.
    package mutating func append(_ change: GroupEntry.Change) throws(CofferError) {
        try foldHeads()
        try appendSigned(change)
    }

    /// Signs `change` as this device's next entry, following ``nextParents()``, and appends it.
    private mutating func appendSigned(_ change: GroupEntry.Change) throws(CofferError) {
        let entry = try GroupEntry(
            change: change,
            parents: nextParents(),
            author: device,
            signing: deviceKeys.signing,
            group: log.group
        )
        try log.append(entry, roots: keys.trustedRoot)
        changed = true
    }

    /// Appends this device's own joining entry, proving it holds the current group key.
    package mutating func appendJoined(name: String) throws(CofferError) {
        let epoch = log.entries.isEmpty ? KeyEpoch.original : try state().currentEpoch
        guard let root = roots[epoch] else {
            throw CofferError(.keyUnavailable, "this device does not hold the group key of epoch \(epoch) to join with")
        }
        let message = GroupEntry.proofMessage(
            previous: GroupEntry.placeDigest(nextParents()),
            author: device,
            keys: publicKeys,
            name: name,
            epoch: epoch
        )
        try append(
            .joined(keys: publicKeys, name: name, epoch: epoch, proof: try GroupKeys.proof(of: message, root: root))
        )
    }

    /// Replaces this device's keys with `fresh` in the log (a rekey): appends the replacement, signed
    /// with the keys it replaces and proving `fresh` with its own signature, then signs with `fresh`
    /// from now on. A copy of the vault made before, holding the old keys, can add nothing the group
    /// accepts afterwards, and a new epoch started after this (``startEpoch()``) is sealed to the
    /// new X25519 key alone.
    package mutating func replaceKeys(with fresh: DeviceKeys) throws(CofferError) {
        try foldHeads()  // the possession proof names the parents the entry will have
        let keys: DevicePublicKeys
        let possession: [UInt8]
        do {
            keys = DevicePublicKeys(agreement: try fresh.agreement.publicKey(), signing: try fresh.signing.publicKey())
            possession = try fresh.signing.signature(
                of: GroupEntry.possessionMessage(group: log.group, parents: nextParents(), author: device, keys: keys)
            )
        } catch {
            throw CofferError(.internalError, "signing with the device's new keys failed: \(error)", underlying: error)
        }
        try append(.keysReplaced(keys: keys, possession: possession))
        deviceKeys = fresh
        publicKeys = keys
    }

    /// Starts a new key epoch: a fresh group key sealed to every active member, carrying the group
    /// keys held of epochs the log starts, or with `carryingEverything` (a new group's founding
    /// epoch) every key held (``LearnableKeys``). Its id commits to the key
    /// (``GroupKeys/committedEpoch(for:group:)``).
    package mutating func startEpoch(carryingEverything: Bool = false) throws(CofferError) {
        let state = try state()
        var root: SecureBytes
        var epoch: KeyEpoch
        repeat {
            root = SecureBytes.random(count: 32)
            epoch = GroupKeys.committedEpoch(for: root, group: log.group) ?? .original
        } while epoch.isOriginal || roots[epoch] != nil
        var boxes: [UUID: [UInt8]] = [:]
        for member in state.activeMembers {
            boxes[member.device] = try GroupKeys.box(root, epoch: epoch, to: member.keys, group: log.group)
        }
        let history = try GroupKeys.sealHistory(
            carryingEverything ? roots : LearnableKeys.passable(roots, in: log),
            under: root,
            epoch: epoch,
            group: log.group
        )
        keys.hold(root, epoch: epoch)
        try append(.epochStarted(epoch: epoch, boxes: boxes, history: history))
    }

    /// Learns every group key `log` seals to this device (boxes, and the histories they open).
    package mutating func learnKeys(from other: GroupLog) {
        var learned = keys
        GroupKeys.collect(from: other, device: device, key: deviceKeys.agreement, into: &learned)
        if learned.roots.count != roots.count || learned.committed != keys.committed || learned.legacy != keys.legacy {
            keys = learned
            changed = true
        }
    }

    /// Merges `other`, another device's log of the group: learns the keys it seals to this device,
    /// checks it from its first entry, then keeps the union of both (``GroupLog/union(_:)``), whose
    /// meaning every device that has seen the same entries computes alike (``GroupState``). When the
    /// union leaves the current key epoch unsafe (a revocation or rekey its author did not know of,
    /// or a device admitted without its key) and this device is an active member, it starts a new
    /// epoch at once, sealed to exactly the members that remain. Without `settling`, it stops before
    /// that: the caller settles (``settleMerge()``) once it knows it keeps the result.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when `other` is not a valid log of the group.
    package mutating func merge(_ other: GroupLog, settling: Bool = true) throws(CofferError) {
        guard other.group == log.group else {
            throw CofferError(.notTrusted, "a membership log of another sync group was offered; it was refused")
        }
        learnKeys(from: other)
        _ = try other.state(roots: keys.trustedRoot)
        let union = try log.union(other)
        guard union != log else { return }
        // A founder this device did not know is accepted only while nothing could be voided by it or
        // void: after that, anyone who ever held the original key could found a log of the group.
        if !log.entries.isEmpty, !union.founders.isSubset(of: log.founders), union.hasClosings {
            throw CofferError(
                .notTrusted,
                "the sync group's membership log carries a second founding entry, made with the group's original key by a device this one never knew, in a group that has changed its keys or members since; it was refused and nothing changed"
            )
        }
        let known = Set(log.entries.map(\.hash))
        for entry in union.entries where !known.contains(entry.hash) {
            if case .added(let admitted, _, _, _, _) = entry.change {
                admittedElsewhere.insert(Admission(author: entry.author, admitted: admitted))
            }
        }
        adopt(union)
        if settling { try settleMerge() }
    }

    /// What a merge does once the union is adopted: acknowledges other members' rekeys and joins, then starts a
    /// new epoch if the log needs one (sealed to the members the acknowledgement leaves: a rekey its
    /// witnesses acknowledge voids what a copy of its device wrote at the same time, docs/FORMAT.md),
    /// and acknowledges again what a new epoch let it (a key it now holds).
    package mutating func settleMerge() throws(CofferError) {
        try acknowledgeOthers()
        try settle()
        try acknowledgeOthers()
    }

    /// Whether entries this device appends when it settles a merge (a new epoch, entries folding the
    /// log's heads, acknowledgements of rekeys: never a closing) may change what the log says of any
    /// device's membership. They void nothing; they only acknowledge, which decides a race between two
    /// concurrent rekeys of one device (``GroupEffect``), so only a log holding such a pair may change.
    package var settlingMayChangeMembership: Bool {
        get throws(CofferError) {
            let graph = try GroupGraph(log.entries, group: log.group)
            return graph.rekeysOf.values.contains { rekeys in
                rekeys.indices.contains { first in
                    rekeys[(first + 1)...].contains { graph.concurrent(rekeys[first], $0) }
                }
            }
        }
    }

    /// Appends an entry that follows every replacement of another member's keys, and every passphrase
    /// join of another device, with effect, that this device has not followed with an entry of its own
    /// yet (an empty `keysShared`), so the log shows what this device heard of first
    /// (``GroupEffect``): of two rekeys of one device, a leaked copy's, made on old heads after the
    /// owner's reached a member, loses (red team round 8, N2); a rekey left in doubt stands only when
    /// a member its author knew acknowledged it; and a closing a copy of this device signs later on
    /// old entries closes no door on a join this device followed (red team round 26, F1: a revoked
    /// founder's copy signed a rekey on its founding entry, which voided every passphrase join since).
    /// Nothing when this device is not an active member, holds no trusted current key, or the log is
    /// full.
    package mutating func acknowledgeOthers() throws(CofferError) {
        let anchor = GroupEntry.anchor(group: log.group)
        let others = log.entries.indices.filter { index in
            let entry = log.entries[index]
            guard entry.author != device else { return false }
            return entry.change.isKeysReplaced || (entry.change.isJoin && entry.parents != [anchor])
        }
        guard !others.isEmpty, !log.isFull else { return }
        let state = try state()
        guard state.member(device)?.isActive == true, keys.isTrusted(state.currentEpoch),
            let root = roots[state.currentEpoch]
        else { return }
        let graph = try GroupGraph(log.entries, group: log.group)
        let own = log.entries.indices.filter { log.entries[$0].author == device }
        let unacknowledged = others.filter { other in
            !state.voided.contains(log.entries[other].hash) && !own.contains { graph.ancestors[$0].contains(other) }
        }
        guard !unacknowledged.isEmpty else { return }
        let history = try GroupKeys.sealHistory([:], under: root, epoch: state.currentEpoch, group: log.group)
        try append(.keysShared(epoch: state.currentEpoch, history: history))
    }

    /// Whether merging `other`, a log of the group, would make this device's log hold more than a
    /// log may (``GroupLog/exceedsLimits(_:)``) with entries that count: this device's, and those
    /// of `other` that have effect in the union. Entries without effect (joins nobody could prove,
    /// entries of revoked devices' copies, a copy's entries made with keys its device replaced)
    /// cost a non-member nothing to make, so they never count (red team round 7, F2). `false` when
    /// the union is not a valid log (the merge says why).
    package func overflows(with other: GroupLog) -> Bool {
        guard other.group == log.group, let union = try? log.overflowingUnion(other) else { return false }
        var learned = self
        learned.learnKeys(from: other)
        guard let state = try? union.state(roots: learned.keys.trustedRoot) else { return false }
        let mine = Set(log.entries.map(\.hash))
        return GroupLog.exceedsLimits(
            union.entries.filter { mine.contains($0.hash) || !state.voided.contains($0.hash) }
        )
    }

    /// At most this many entries without effect of one device are kept from refused bundles (its
    /// first closings, ``mergeEffective(_:)``): a copy can sign any number side by side.
    package static let keptVoidedClosingsPerDevice = 4

    /// Merges, of `other` (the log of a bundle whose records were refused, made by a device without
    /// effect), the entries that have effect once merged, and of each admitted device's entries
    /// without effect (a member's, revoked since) only its first closings (revocations, rekeys,
    /// switches to approval-only that no other such entry of that device precedes), each with what it
    /// follows, at most ``keptVoidedClosingsPerDevice`` of a device in all; and of revocations with
    /// effect by devices that are out, as many of each device revoked. A device never admitted
    /// (its join voided, or not proven) keeps nothing: its closings close nothing, and ids cost
    /// nothing to make (red team round 5, R1); but a device whose join this device acknowledged (a
    /// member it knew, whose join a closing voided since) keeps its first closings: a revocation of a
    /// stolen device that lost to the copy's closing tells a member that revokes the device itself
    /// which devices came in beside it (``GroupGraph/admittedBesideRevocations(of:active:except:)``,
    /// red team round 35, F1). What the log says about the
    /// group reaches this device, so members that disagree about a device converge, and a closing
    /// without effect still closes the door on joins made at the same time (no device defends its own
    /// admission); but a revoked device's stale copy, or a device whose join does not count, cannot
    /// fill the log up to its cap with entries that do nothing (red team round 3, finding 3). Leaving
    /// them out is only not having heard of them yet: a member whose bundle this device accepts
    /// brings them if it holds them.
    package mutating func mergeEffective(_ other: GroupLog) throws(CofferError) {
        guard other.group == log.group else {
            throw CofferError(.notTrusted, "a membership log of another sync group was offered; it was refused")
        }
        learnKeys(from: other)
        let union = try log.union(other)
        guard union != log else { return }
        let state = try union.state(roots: keys.trustedRoot)
        let voided = state.voided
        let graph = try GroupGraph(union.entries, group: union.group)
        let voidedClosings = union.entries.indices.filter {
            union.entries[$0].change.isClosing && voided.contains(union.entries[$0].hash)
                && state.member(union.entries[$0].author) != nil
        }
        let mine = Set(log.entries.map(\.hash))
        let first = voidedClosings.filter { index in
            !mine.contains(union.entries[index].hash)
                && !voidedClosings.contains {
                    union.entries[$0].author == union.entries[index].author && graph.ancestors[index].contains($0)
                }
        }
        // A copy can sign any number of first closings side by side (on the same stale heads): of
        // each device, only a few are kept, counting those this device holds already.
        var held: [UUID: Int] = [:]
        for index in voidedClosings where mine.contains(union.entries[index].hash) {
            held[union.entries[index].author, default: 0] += 1
        }
        var firstClosings = Set<[UInt8]>()
        for (author, candidates) in Dictionary(grouping: first, by: { union.entries[$0].author }) {
            let room = max(0, Self.keptVoidedClosingsPerDevice - held[author, default: 0])
            let hashes = candidates.map { union.entries[$0].hash }.sorted { $0.lexicographicallyPrecedes($1) }
            firstClosings.formUnion(hashes.prefix(room))
        }
        // Revocations of active members by devices this device knew as members (it acknowledged their
        // joins) whose joins a closing voided since, not ids made up for free: a revocation of a
        // stolen device that lost to the copy's closing tells a member that revokes the device itself
        // which devices came in beside it (red team round 35, F1). A few of each revoked device,
        // the first in the log's order.
        var acknowledgedHere = EntrySet(count: union.entries.count)
        for index in union.entries.indices where union.entries[index].author == device {
            acknowledgedHere.formUnion(graph.ancestors[index])
        }
        let lostRevocations = union.entries.indices.filter { index in
            let entry = union.entries[index]
            guard let target = entry.change.revokedDevice, voided.contains(entry.hash),
                state.member(entry.author) == nil, state.member(target)?.isActive == true
            else { return false }
            return (graph.admissionsOf[entry.author] ?? []).contains { acknowledgedHere.contains($0) }
        }
        for indices in Dictionary(grouping: lostRevocations, by: { union.entries[$0].change.revokedDevice }).values {
            let heldAlready = indices.filter { mine.contains(union.entries[$0].hash) }.count
            let room = max(0, Self.keptVoidedClosingsPerDevice - heldAlready)
            firstClosings.formUnion(
                indices.filter { !mine.contains(union.entries[$0].hash) }.prefix(room).map { union.entries[$0].hash }
            )
        }
        // Revocations with effect by devices that are out: a revoked device's copy revoking its
        // revoker, or a device whose join was voided revoking its closer (both lose). Their authors
        // can sign any number, side by side, and made-up devices joining from an old bundle with the
        // passphrase cost nothing (red team round 10, F1): more than a few revocations of one device
        // by devices that are out say nothing more.
        let revocationsByOut = union.entries.indices.filter {
            union.entries[$0].change.revokedDevice != nil && !voided.contains(union.entries[$0].hash)
                && state.member(union.entries[$0].author)?.isActive != true
        }
        var redundant = Set<[UInt8]>()
        let byTarget = Dictionary(grouping: revocationsByOut) { union.entries[$0].change.revokedDevice }
        for indices in byTarget.values {
            let heldAlready = indices.filter { mine.contains(union.entries[$0].hash) }.count
            let room = max(0, Self.keptVoidedClosingsPerDevice - heldAlready)
            let offered = indices.map { union.entries[$0].hash }.filter { !mine.contains($0) }
                .sorted { $0.lexicographicallyPrecedes($1) }
            redundant.formUnion(offered.dropFirst(room))
        }
        // A kept entry brings every entry it follows: one closing on a chain of thousands of entries
        // without effect brought them all (red team round 11, F1). A closing, or a revocation by a
        // device that is out, is kept only if it brings at most a few entries without effect this
        // device does not hold.
        func bringsTooMuch(_ index: Int) -> Bool {
            var brought = voided.contains(union.entries[index].hash) ? 1 : 0
            for ancestor in graph.ancestors[index] {
                let hash = union.entries[ancestor].hash
                if voided.contains(hash), !mine.contains(hash) { brought += 1 }
                if brought > Self.keptVoidedClosingsPerDevice + 1 { return true }
            }
            return false
        }
        firstClosings = firstClosings.filter { hash in
            union.entries.firstIndex { $0.hash == hash }.map { !bringsTooMuch($0) } ?? false
        }
        for index in revocationsByOut where !mine.contains(union.entries[index].hash) && bringsTooMuch(index) {
            redundant.insert(union.entries[index].hash)
        }
        let evidence = forkEvidence(
            in: union,
            graph: graph,
            voided: voided,
            kept: { mine.contains($0) || firstClosings.contains($0) },
            held: mine,
            admitted: { device in
                (graph.admissionsOf[device] ?? []).contains { !voided.contains(union.entries[$0].hash) }
            },
            bringsLittle: { !bringsTooMuch($0) }
        )
        try merge(
            try union.keeping {
                mine.contains($0.hash) || (!voided.contains($0.hash) && !redundant.contains($0.hash))
                    || firstClosings.contains($0.hash) || evidence.contains($0.hash)
            }
        )
    }

    /// Of `union`'s entries without effect that this device does not hold, those that show a kept
    /// closing came from a copy: acknowledgements (``acknowledgeOthers()``) by the closer's own
    /// device, admitted with effect, concurrent with the closing, that
    /// follow a passphrase join the closing is concurrent with (the device knew the join, so the
    /// closing cannot close the door on it: docs/FORMAT.md, rule 4). A refused bundle's log keeps its
    /// stale closing; without these, a member kept the closing and dropped what shows it stale (red
    /// team round 28, F2). A few per device, the first in canonical order, each bringing few others.
    private func forkEvidence(
        in union: GroupLog,
        graph: GroupGraph,
        voided: Set<[UInt8]>,
        kept: ([UInt8]) -> Bool,
        held: Set<[UInt8]>,
        admitted: (UUID) -> Bool,
        bringsLittle: (Int) -> Bool
    ) -> Set<[UInt8]> {
        let anchor = GroupEntry.anchor(group: union.group)
        let joins = union.entries.indices.filter {
            union.entries[$0].change.isJoin && union.entries[$0].parents != [anchor]
        }
        var evidence = Set<[UInt8]>()
        var counts: [UUID: Int] = [:]
        for closing in union.entries.indices
        where union.entries[closing].change.isClosing && kept(union.entries[closing].hash) {
            let author = union.entries[closing].author
            // Only a device that was admitted acknowledges: made-up devices' entries say nothing.
            guard admitted(author) else { continue }
            let doors = joins.filter { graph.concurrent($0, closing) }
            guard !doors.isEmpty else { continue }
            for index in union.entries.indices where counts[author, default: 0] < Self.keptVoidedClosingsPerDevice {
                let entry = union.entries[index]
                guard entry.author == author, case .keysShared = entry.change, voided.contains(entry.hash),
                    !held.contains(entry.hash),
                    !evidence.contains(entry.hash), graph.concurrent(index, closing),
                    doors.contains(where: graph.ancestors[index].contains), bringsLittle(index)
                else { continue }
                evidence.insert(entry.hash)
                counts[author, default: 0] += 1
            }
        }
        return evidence
    }

    /// Starts a new epoch when the log needs one, or this device may not seal with the current key it
    /// holds (its id commits to nothing: an older Coffer's epoch, or a forgery reusing a real epoch's
    /// id), and this device may start it.
    package mutating func settle() throws(CofferError) {
        let state = try state()
        // A full log is frozen (``GroupLog/isFull``): nothing is sealed for the group again, so no
        // new key is needed, and there may be no room for one.
        guard !log.isFull, state.member(device)?.isActive == true, roots[state.currentEpoch] != nil,
            state.needsNewEpoch || !keys.isTrusted(state.currentEpoch)
        else {
            return
        }
        try startEpoch()
    }

    /// Appends the group keys this device holds that a holder of the current key could not read from
    /// the log (epochs of a branch that lost a fork, records of which it holds), sealed under the
    /// current key, so every member, and every device approved later, can open every record the group
    /// passes around. Does nothing when there are none, when this device is not an active member, or
    /// when the log is full (the group is frozen, and nothing is sealed for it again).
    package mutating func shareKeysTheLogLacks() throws(CofferError) {
        guard !log.isFull, try state().member(device)?.isActive == true else { return }
        let (epoch, root) = try currentRoot()
        // Never under a key that may be a forgery: its forger would read every key shared.
        guard keys.isTrusted(epoch) else { return }
        let reachable = GroupKeys.reachable(from: log, epoch: epoch, root: root)
        // Keys the log does not reach, and committed keys where it reaches only another key under
        // the same id: a forgery a member heard first and passed on in its own epoch's history,
        // which left it, once it rekeyed, without the real key (adversary model seed 982578).
        let missing = LearnableKeys.passable(roots, in: log).filter { epoch, held in
            guard let reached = reachable[epoch] else { return true }
            return keys.committed.contains(epoch) && !reached.constantTimeEquals(held)
        }
        guard !missing.isEmpty else { return }
        try append(
            .keysShared(
                epoch: epoch,
                history: try GroupKeys.sealHistory(missing, under: root, epoch: epoch, group: log.group)
            )
        )
    }

    /// Replaces the log with `other` (checked by the caller), keeping every key.
    package mutating func adopt(_ other: GroupLog) {
        log = other
        changed = true
    }

    /// The `meta` entries that store the log, the current epoch and the keys (sealed under the
    /// device root).
    package func metaEntries(deviceRoot: SecureBytes, vaultID: UUID) throws(CofferError) -> [(String, [UInt8])] {
        // The epoch this device seals with: the current one, or the latest it holds while it lacks
        // that (left out of an epoch, or revoked), so a reopened vault still seals and exports.
        let epoch = try sealingRoot().epoch
        let isMember = try state().member(device)?.isActive == true
        let sealedAsMember = isMember ? epoch : memberEpoch
        return [
            (Meta.log, log.encoded),
            (Meta.epoch, withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }),
            (GroupKeys.metaKey, try GroupKeys.store.seal(roots, under: deviceRoot, vaultID: vaultID)),
            (
                GroupKeys.legacyMetaKey,
                keys.legacy.sorted().flatMap { withUnsafeBytes(of: $0.id.bigEndian) { Array($0) } }
            ),
        ] + (sealedAsMember.map { [(Meta.memberEpoch, withUnsafeBytes(of: $0.id.bigEndian) { Array($0) })] } ?? [])
    }

    /// Writes ``metaEntries(deviceRoot:vaultID:)`` in `txn`, sealed under the current device root of
    /// `roots` (refused if another process rekeyed the vault since `roots` were read).
    package func store(in txn: Transaction, schema: Schema, roots: RootKeys, vaultID: UUID) throws {
        try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
        for (name, value) in try metaEntries(deviceRoot: roots.device, vaultID: vaultID) {
            try txn.put(schema.meta, key: Array(name.utf8), value: value)
        }
        if !admittedElsewhere.isEmpty {
            let all = try Self.admittedElsewhere(in: txn, schema: schema).union(admittedElsewhere)
            try txn.put(
                schema.meta,
                key: Array(Meta.admittedElsewhere.utf8),
                value: all.map { $0.author.bytes + $0.admitted.bytes }.sorted { $0.lexicographicallyPrecedes($1) }
                    .flatMap { $0 }
            )
        }
    }

    /// The ids ``Meta/formerIdentities`` lists.
    package static func formerIdentities(in txn: Transaction, schema: Schema) throws -> [UUID] {
        try ids(in: txn, schema: schema, key: Meta.formerIdentities)
    }

    /// The 16-byte ids stored under the meta entry `key`.
    private static func ids(in txn: Transaction, schema: Schema, key: String) throws -> [UUID] {
        guard let stored = try txn.get(schema.meta, key: Array(key.utf8)), stored.count % 16 == 0 else { return [] }
        return try stride(from: 0, to: stored.count, by: 16).map { (start) throws(CofferError) in
            try UUID(storedBytes: Array(stored[start..<(start + 16)]), what: key)
        }
    }

    /// The admissions ``Meta/admittedElsewhere`` lists.
    package static func admittedElsewhere(in txn: Transaction, schema: Schema) throws -> Set<Admission> {
        let ids = try ids(in: txn, schema: schema, key: Meta.admittedElsewhere)
        guard ids.count % 2 == 0 else { return [] }
        return Set(stride(from: 0, to: ids.count, by: 2).map { Admission(author: ids[$0], admitted: ids[$0 + 1]) })
    }
}
