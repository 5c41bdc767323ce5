package import Foundation

/// A sync group's membership log: the graph of ``GroupEntry`` values every device keeps, checks from
/// its first entry, and merges with the logs other devices' bundles carry.
///
/// Every entry names the entries its author knew last (its parents), so the log is a graph in which
/// an entry's ancestors are exactly what its author knew. Merging two logs is their union, so every
/// device that has seen the same entries holds the same log, whatever order they came in, and what
/// the log means is decided from everything the deciding device knows, never from one branch alone
/// (``GroupState``, docs/FORMAT.md "Membership log"). The entries are kept in one canonical order
/// (parents first, then the smaller hash), so equal sets encode to equal bytes.
package struct GroupLog: Equatable, Sendable {
    package let group: UUID
    package private(set) var entries: [GroupEntry]

    /// A log of `entries`, which must already be in canonical order (``GroupLog/init(group:decoding:)``
    /// and ``union(_:)`` put them there).
    package init(group: UUID, entries: [GroupEntry] = []) {
        self.group = group
        self.entries = entries
    }

    /// The hashes of the entries no other entry names: what the next entry follows (the anchor for
    /// an empty log).
    package var heads: [[UInt8]] {
        guard !entries.isEmpty else { return [GroupEntry.anchor(group: group)] }
        let named = Set(entries.flatMap(\.parents))
        return entries.map(\.hash).filter { !named.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The stored form: `count (UInt32) ‖ [length (UInt32) ‖ entry] × count`.
    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(UInt32(entries.count))
        for entry in entries {
            writer.write(UInt32(entry.encoded.count))
            writer.write(raw: entry.encoded)
        }
        return writer.bytes
    }

    /// Reads a stored or carried log and puts it in canonical order (not yet checked:
    /// ``state(roots:)`` checks it).
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed log, `.notTrusted` for entries that do not
    ///   form one log of the group (an entry twice, a parent missing, two first entries).
    package init(group: UUID, decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a membership log")
        let count = Int(try reader.readUInt32())
        guard count <= Self.maximumEntries else {
            throw CofferError(
                .notTrusted,
                "a membership log of \(count) entries was offered, more than the \(Self.maximumEntries) a log may hold; it was refused and nothing changed"
            )
        }
        var entries: [GroupEntry] = []
        for _ in 0..<count {
            entries.append(try GroupEntry(decoding: try reader.readBytes(Int(try reader.readUInt32()))))
        }
        try reader.finish()
        self.init(group: group, entries: try Self.canonicalOrder(entries, group: group))
    }

    /// The most entries a log may hold. A group's log grows by one or two entries per membership
    /// change, so an honest group never comes near; the cap bounds what a member's crafted log can
    /// cost every device that replays it.
    package static let maximumEntries = 4096

    /// The most bytes a log may take encoded (what a bundle header may carry).
    package static let maximumBytes = 16 << 20

    /// The size of ``encoded``.
    package var encodedCount: Int { Self.encodedSize(entries) }

    /// The size of a log of `entries`, encoded.
    private static func encodedSize(_ entries: [GroupEntry]) -> Int {
        4 + entries.reduce(0) { $0 + 4 + $1.encoded.count }
    }

    /// Whether the log is *full*: a revocation would not fit. A revocation appends up to
    /// ``entriesToRevoke`` entries, after the entries that fold a log wider than an entry may name
    /// (``GroupEntry/maximumParents`` heads) into one each member can follow; full is when those would
    /// take the log past ``maximumEntries``, or when it is within 1 MiB (more than those entries take)
    /// of ``maximumBytes``. Every device holding the same log decides alike.
    ///
    /// Only a member can fill a log (the entries of devices without effect are not kept from refused
    /// bundles), and a stolen member's copy can fill it on purpose, so that no one can revoke it. A
    /// full log therefore freezes the group: no device seals records for it again, since a member
    /// that could not be revoked holds its key. Exports and pushes still carry the log, so every
    /// member learns the group is frozen; the way on is a new group (`coffer group new`). Logs only
    /// grow, so nothing unfreezes a group (docs/FORMAT.md, "A full log freezes the group").
    package var isFull: Bool {
        // Each fold names as many heads as an entry may and leaves itself: that many less one fewer.
        let excess = max(0, heads.count - GroupEntry.maximumParents)
        let perFold = GroupEntry.maximumParents - 1
        let folds = (excess + perFold - 1) / perFold
        return entries.count + folds + Self.entriesToRevoke > Self.maximumEntries
            || encodedCount > Self.maximumBytes - (1 << 20)
    }

    /// The most entries a revocation appends: the revocation, a switch to approval-only joins, and
    /// the new epoch that shuts the revoked device out.
    package static let entriesToRevoke = 3

    /// Why a full or overflowing log freezes the group, and what to do: said after what happened.
    package static let frozenExplanation =
        "A log fills up after thousands of membership changes, or sooner when a misbehaving device fills it (a stolen member's copy can, so that no one can revoke it), so this device seals nothing for the group any more, in case such a device holds the group's key; a group stays frozen even after a revocation that fit. Its bundles and pushes still carry the log, so the other members learn it too. On a device you trust, found a new group (\(InterfaceName.startNewGroup)) and approve your other devices into it"

    /// Whether `entries` are more than a log may hold, by count or by size.
    package static func exceedsLimits(_ entries: [GroupEntry]) -> Bool {
        entries.count > maximumEntries || encodedSize(entries) > maximumBytes
    }

    /// The union of this log and `other` when it holds more than a log may (``exceedsLimits(_:)``),
    /// unchecked for size; `nil` when it fits.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when together they do not form one log.
    package func overflowingUnion(_ other: GroupLog) throws(CofferError) -> GroupLog? {
        let mine = Set(entries.map(\.hash))
        let all = entries + other.entries.filter { !mine.contains($0.hash) }
        guard Self.exceedsLimits(all) else { return nil }
        return GroupLog(group: group, entries: try Self.canonicalOrder(all, group: group))
    }

    /// The epochs the log's entries start, and the original: the only epochs whose keys a device
    /// learns, or passes on in a history. A history may list others, made up by a member's modified
    /// client in any number, which every later epoch's history would otherwise carry until no
    /// revocation fits (red team round 6, C1).
    package var startedEpochs: Set<KeyEpoch> { Set([.original] + entries.compactMap(\.startedEpoch)) }

    /// The devices that found the log (the authors of joins naming the group's anchor).
    package var founderDevices: Set<UUID> {
        let anchor = GroupEntry.anchor(group: group)
        return Set(entries.filter { $0.parents == [anchor] }.map(\.author))
    }

    /// The hashes of the entries that found the log (joins naming the group's anchor).
    package var founders: Set<[UInt8]> {
        let anchor = GroupEntry.anchor(group: group)
        return Set(entries.filter { $0.parents == [anchor] }.map(\.hash))
    }

    /// Whether the log holds anything a founding join could be voided by or could void: a new epoch,
    /// a policy of approval, a revocation or a replacement of keys. While it holds none, anyone
    /// holding the original key may join anyway, so a second founder (two devices of a group made
    /// before membership logs existed) changes nothing anyone could not do.
    package var hasClosings: Bool {
        entries.contains { entry in
            switch entry.change {
            case .epochStarted, .policy(.approval), .revoked, .keysReplaced: return true
            default: return false
            }
        }
    }

    /// Whether every entry of `other` is in this log.
    package func contains(_ other: GroupLog) -> Bool {
        let mine = Set(entries.map(\.hash))
        return other.entries.allSatisfy { mine.contains($0.hash) }
    }

    /// The log holding the entries of both.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when together they do not form one log.
    package func union(_ other: GroupLog) throws(CofferError) -> GroupLog {
        guard !contains(other) else { return self }
        let mine = Set(entries.map(\.hash))
        let all = entries + other.entries.filter { !mine.contains($0.hash) }
        try Self.checkSize(all)
        return GroupLog(group: group, entries: try Self.canonicalOrder(all, group: group))
    }

    /// The entries of this log that `keep` names and all of their ancestors, as a log.
    package func keeping(_ keep: (GroupEntry) -> Bool) throws(CofferError) -> GroupLog {
        let graph = try GroupGraph(entries, group: group)
        var kept = EntrySet(count: entries.count)
        for index in entries.indices where keep(entries[index]) {
            kept.insert(index)
            kept.formUnion(graph.ancestors[index])
        }
        guard kept.count != entries.count else { return self }
        return GroupLog(group: group, entries: try Self.canonicalOrder(kept.map { entries[$0] }, group: group))
    }

    /// Adds an entry that follows entries of the log; checks it against the state first.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when the entry may not follow the log.
    package mutating func append(_ entry: GroupEntry, roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) {
        try append(contentsOf: [entry], roots: roots)
    }

    /// Adds entries that follow entries of the log or one another, checking them all in one replay
    /// (each against what its author knew).
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when an entry may not follow the log.
    package mutating func append(contentsOf added: [GroupEntry], roots: (KeyEpoch) -> SecureBytes?) throws(CofferError)
    {
        try Self.checkSize(entries + added)
        let extended = GroupLog(group: group, entries: try Self.canonicalOrder(entries + added, group: group))
        _ = try extended.state(roots: roots)
        self = extended
    }

    /// Forgets which entries this process has checked, so the next replay checks every entry again,
    /// as a fresh process does (tests of what a reopened vault accepts).
    package static func forgetCheckedEntries() { CheckedEntries.removeAll() }

    /// Replays the log, checking every entry against what its author knew (its ancestors), then
    /// says what the whole log means.
    ///
    /// - Parameter roots: The key this device trusts for an epoch (``HeldGroupKeys/trustedRoot(_:)``),
    ///   to check joining devices' proofs with: a join whose proof does not verify under it has no
    ///   effect (``GroupState/unprovenJoins``), though the log stays valid; a proof under an epoch
    ///   whose key it does not trust, or hold, is left unchecked (``GroupState/uncheckedProofs``).
    /// - Throws: ``CofferError`` `.notTrusted` naming the first entry that breaks a rule.
    package func state(roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) -> GroupState {
        let graph = try GroupGraph(entries, group: group)
        var pasts = GroupPasts(graph: graph)
        var unchecked = false
        var unproven = EntrySet(count: entries.count)
        // Joins whose proofs this device could not confirm (failed, or no trusted key): an epoch may
        // leave their devices out, as its author may have found them unproven.
        var unconfirmed: [Int] = []
        for index in entries.indices {
            // A join's proof is checked every time: whether it verifies depends on the keys held.
            let isJoin = entries[index].change.isJoin
            guard isJoin || !CheckedEntries.contains(entries[index].hash) else { continue }
            let past = pasts.state(before: index)
            // Only a new epoch asks which of its devices are unsure.
            let unsure =
                entries[index].startedEpoch == nil
                ? []
                : Set(
                    unconfirmed.filter { graph.ancestors[index].contains($0) }.compactMap {
                        entries[$0].admittedDevice
                    }
                )
            // And which devices it knew of whose admissions have no effect.
            let voidedAdmissions =
                entries[index].startedEpoch == nil
                ? []
                : Set(
                    graph.ancestors[index].compactMap { entries[$0].admittedDevice }.filter { past.member($0) == nil }
                )
            switch try past.check(
                entries[index],
                index: index,
                group: group,
                roots: roots,
                unsure: unsure,
                voidedAdmissions: voidedAdmissions
            ) {
            case .checked: if !isJoin { CheckedEntries.insert(entries[index].hash) }
            case .proofUnchecked:
                unchecked = true
                unconfirmed.append(index)
            case .proofFailed:
                unproven.insert(index)
                unconfirmed.append(index)
            }
        }
        // What an entry's author knew decides whether it is valid, joins proven or not (an entry after
        // a join with a bad proof is still a valid entry, without effect); what the log means leaves
        // such joins out.
        let effective =
            unproven.isEmpty
            ? pasts.effect(of: graph.everything)
            : GroupEffect(graph: graph, subset: graph.everything, unproven: unproven).effective
        var state = GroupState(graph: graph, members: graph.everything, effective: effective, unproven: unproven)
        state.uncheckedProofs = unchecked
        state.unprovenJoins = Set(unproven.map { entries[$0].hash })
        return state
    }

    private static func checkSize(_ entries: [GroupEntry]) throws(CofferError) {
        guard exceedsLimits(entries) else { return }
        let bytes = encodedSize(entries)
        throw CofferError(
            .notTrusted,
            "the sync group's membership log would hold \(entries.count) entries (\(bytes) bytes), more than a log may hold (\(maximumEntries) entries, \(maximumBytes >> 20) MiB), and was refused; nothing changed. Only a misbehaving device makes a log this large (a stolen member's copy can fill it so that no one can revoke it): on a device you trust, found a new group (\(InterfaceName.startNewGroup)) and approve your other devices into it"
        )
    }

    /// `entries` in canonical order: an entry after its parents, and of the entries that may come
    /// next the one with the smallest hash first.
    private static func canonicalOrder(_ entries: [GroupEntry], group: UUID) throws(CofferError) -> [GroupEntry] {
        let anchor = GroupEntry.anchor(group: group)
        var byHash: [[UInt8]: Int] = [:]
        for (index, entry) in entries.enumerated() {
            guard byHash.updateValue(index, forKey: entry.hash) == nil else {
                throw CofferError(.notTrusted, "the sync group's membership log holds one entry twice; it was refused")
            }
        }
        var waiting = [Int](repeating: 0, count: entries.count)
        var children = [[Int]](repeating: [], count: entries.count)
        var ready = ReadyEntries(hashes: entries.map(\.hash))
        for (index, entry) in entries.enumerated() {
            if entry.parents == [anchor] {
                ready.insert(index)
                continue
            }
            for parent in entry.parents {
                guard let position = byHash[parent] else {
                    throw CofferError(
                        .notTrusted,
                        "the sync group's membership log is not valid: an entry by device \(entry.author.uuidString) follows an entry the log does not hold; it was refused"
                    )
                }
                waiting[index] += 1
                children[position].append(index)
            }
        }
        var ordered: [GroupEntry] = []
        ordered.reserveCapacity(entries.count)
        while let index = ready.removeFirst() {
            ordered.append(entries[index])
            for child in children[index] {
                waiting[child] -= 1
                if waiting[child] == 0 { ready.insert(child) }
            }
        }
        guard ordered.count == entries.count else {
            throw CofferError(
                .notTrusted,
                "the sync group's membership log is not valid: its entries do not start from the group's first entry; it was refused"
            )
        }
        return ordered
    }
}

/// A member of a sync group as its membership log records it.
package struct GroupMemberRecord: Equatable, Sendable {
    package let device: UUID
    /// The device's keys now: those it was admitted with, or those its latest rekey gave it.
    package var keys: DevicePublicKeys
    package let name: String
    package let added: Date
    /// Who added it: itself, for a device that joined with the group key.
    package let addedBy: UUID
    package var revoked: Date?
    /// Who revoked it; itself when two rekeys of the device conflict (a copy of it rekeyed too).
    package var revokedBy: UUID?

    package var isActive: Bool { revoked == nil }
}

/// What a set of membership entries means (docs/FORMAT.md, "Membership log", "What a log means"):
/// the members, policy and key epoch that the entries with effect (``GroupEffect``) give.
package struct GroupState: Equatable, Sendable {
    /// Every device the log admits, revoked ones included, in the order they were admitted.
    package private(set) var members: [GroupMemberRecord] = []
    package private(set) var policy: GroupJoinPolicy = .passphrase
    /// The epoch new records are sealed in.
    package private(set) var currentEpoch: KeyEpoch = .original
    /// Every epoch the log started, in order, after the original.
    package private(set) var epochs: [KeyEpoch] = []
    /// Whether a joining device's proof was left unchecked for want of its epoch's key.
    package fileprivate(set) var uncheckedProofs = false
    /// The joins, by hash, whose proofs do not verify under the key this device trusts for their
    /// epoch: made with another key (a forged one under a real epoch's id), they have no effect.
    package fileprivate(set) var unprovenJoins: Set<[UInt8]> = []
    /// Whether an active member should start a new key epoch: a revocation, a rekey or an admission
    /// happened that the current epoch's author did not know of, so a revoked device (or a copy) may
    /// hold the current key, or a member may lack it.
    package private(set) var needsNewEpoch = false
    /// Every epoch any entry started, those without effect included: a new epoch must be none of them.
    private var startedEpochs: Set<KeyEpoch> = []
    /// The entries without effect, by hash.
    package private(set) var voided: Set<[UInt8]> = []

    package init() {}

    /// The member record of `device`, active or revoked.
    package func member(_ device: UUID) -> GroupMemberRecord? { memberPositions[device].map { members[$0] } }

    /// Where each member's record is in ``members``.
    private var memberPositions: [UUID: Int] = [:]

    /// The devices that are members now.
    package var activeMembers: [GroupMemberRecord] { members.filter(\.isActive) }

    /// The meaning of the entries `subset` of `graph` (closed under ancestors: the whole log, or what
    /// one entry's author knew), of which `effective` have effect (computed when not given).
    init(graph: GroupGraph, members subset: EntrySet, effective: EntrySet? = nil, unproven: EntrySet? = nil) {
        let unproven = unproven ?? EntrySet(count: graph.entries.count)
        let effective = effective ?? GroupEffect(graph: graph, subset: subset, unproven: unproven).effective
        var replay = Replay(graph: graph)
        for index in subset { replay.add(index, effective: effective.contains(index)) }
        self = replay.state(complete: true, unproven: unproven)
    }

    /// A ``GroupState`` built one entry at a time, in canonical order: what an entry's author knew
    /// is what its parent knew and the parent, so replaying a log builds each entry's past from the
    /// last one's instead of from the log's start (red team round 11, F3).
    struct Replay {
        private let graph: GroupGraph
        private var state = GroupState()
        /// The entries added, and those of them with effect.
        private var subset: EntrySet
        private var effective: EntrySet
        private var lastEpoch: Int?
        private var lastPolicy: (index: Int, policy: GroupJoinPolicy)?
        private var revocations: [Int] = []
        private var rekeys: [UUID: [Int]] = [:]
        private var admissions: [Int] = []

        /// The meaning of no entry of `graph`.
        init(graph: GroupGraph) {
            self.graph = graph
            subset = EntrySet(count: graph.entries.count)
            effective = subset
        }

        /// Adds the entry `index`, later than every entry added so far, which has effect or not.
        mutating func add(_ index: Int, effective hasEffect: Bool) {
            let entry = graph.entries[index]
            subset.insert(index)
            if let epoch = entry.startedEpoch { state.startedEpochs.insert(epoch) }
            guard hasEffect else { return }
            effective.insert(index)
            switch entry.change {
            case .joined(let keys, let name, _, _):
                guard state.member(entry.author) == nil else { return }
                state.admit(
                    GroupMemberRecord(
                        device: entry.author,
                        keys: keys,
                        name: name,
                        added: entry.date,
                        addedBy: entry.author
                    )
                )
                admissions.append(index)
            case .added(let device, let keys, let name, _, _):
                guard state.member(device) == nil else { return }
                state.admit(
                    GroupMemberRecord(device: device, keys: keys, name: name, added: entry.date, addedBy: entry.author)
                )
                admissions.append(index)
            case .revoked(let device, _):
                revocations.append(index)
                if let position = state.memberPositions[device], state.members[position].isActive {
                    state.members[position].revoked = entry.date
                    state.members[position].revokedBy = entry.author
                }
            case .epochStarted(let epoch, _, _):
                state.epochs.append(epoch)
                state.currentEpoch = epoch
                lastEpoch = index
            case .policy(let policy):
                lastPolicy = (index, policy)
            case .keysShared:
                break
            case .keysReplaced(let keys, _):
                if let position = state.memberPositions[entry.author] {
                    state.members[position].keys = keys
                }
                let earlier = rekeys[entry.author, default: []]
                if earlier.contains(where: { graph.concurrent($0, index) }),
                    let position = state.memberPositions[entry.author],
                    state.members[position].isActive
                {
                    state.members[position].revoked = entry.date
                    state.members[position].revokedBy = entry.author
                }
                rekeys[entry.author, default: []].append(index)
            }
        }

        /// The meaning of the entries added, of which `unproven` are joins whose proofs failed. Only
        /// a `complete` one says which entries are void and whether a new epoch is needed (checking
        /// an entry against its past needs neither).
        func state(complete: Bool, unproven: EntrySet? = nil) -> GroupState {
            var state = state
            // A revocation or a rekey closes passphrase joins until a member who knew of it opens them
            // again.
            let closings = revocations + rekeys.values.joined()
            if let lastPolicy, lastPolicy.policy == .passphrase,
                closings.allSatisfy({ graph.ancestors[lastPolicy.index].contains($0) })
            {
                state.policy = .passphrase
            } else if lastPolicy != nil || !closings.isEmpty {
                state.policy = .approval
            }
            guard complete else { return state }
            let entries = graph.entries
            state.voided = Set(subset.subtracting(effective).map { entries[$0].hash })
            // The current key is safe when exactly the active members hold it: every box of its epoch
            // is sealed to an active member under the keys it has now, and every active member has one
            // (or was added after it, with the key sealed to it in its admission).
            let active = Set(state.activeMembers.map(\.device))
            if let lastEpoch {
                let sealedTo = entries[lastEpoch].sealedTo
                let addedSince = Set(
                    admissions.filter { graph.ancestors[$0].contains(lastEpoch) }.compactMap {
                        entries[$0].admittedDevice
                    }
                )
                let rekeyedSince = rekeys.contains { device, indices in
                    active.contains(device) && indices.contains { !graph.ancestors[lastEpoch].contains($0) }
                }
                state.needsNewEpoch =
                    !sealedTo.isSubset(of: active) || !active.isSubset(of: sealedTo.union(addedSince)) || rekeyedSince
            } else {
                // Every device that ever joined holds the original key.
                // A join whose proof failed does not show its author holds the original key.
                let voidedHolders = subset.subtracting(effective).subtracting(
                    unproven ?? EntrySet(count: entries.count)
                )
                state.needsNewEpoch = !revocations.isEmpty || !rekeys.isEmpty || !voidedHolders.isEmpty
            }
            return state
        }
    }

    /// Adds `record`, of a device not yet a member.
    private mutating func admit(_ record: GroupMemberRecord) {
        memberPositions[record.device] = members.count
        members.append(record)
    }

    /// What ``check(_:index:group:roots:)`` found of an entry that may follow its ancestors.
    enum CheckOutcome {
        /// Everything was checked.
        case checked
        /// A join whose proof could not be checked: this device does not trust a key of its epoch.
        case proofUnchecked
        /// A join whose proof does not verify under the key this device trusts for its epoch.
        case proofFailed
    }

    /// Checks `entry` against this state, the meaning of exactly its ancestors; `unsure` are the
    /// devices among them admitted by joins whose proofs this device could not confirm (a new epoch
    /// may leave them out: its author may have found their proofs failing).
    func check(
        _ entry: GroupEntry,
        index: Int,
        group: UUID,
        roots: (KeyEpoch) -> SecureBytes?,
        unsure: Set<UUID> = [],
        voidedAdmissions: Set<UUID> = []
    ) throws(CofferError) -> CheckOutcome {
        func refuse(_ why: String) -> CofferError {
            CofferError(
                .notTrusted,
                "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): \(why); it was refused and nothing changed"
            )
        }
        let signer: DevicePublicKeys
        var outcome = CheckOutcome.checked
        if case .joined(let keys, let name, let epoch, let proof) = entry.change {
            if let existing = member(entry.author) {
                throw refuse(
                    existing.isActive
                        ? "the device is already a member" : "the device was revoked and cannot join again"
                )
            }
            guard policy == .passphrase else {
                throw refuse("the group accepts new devices by approval only, not by passphrase")
            }
            guard epoch == currentEpoch else {
                throw refuse("it proves a group key of epoch \(epoch), not the current epoch \(currentEpoch)")
            }
            if let root = roots(epoch) {
                let message = GroupEntry.proofMessage(
                    previous: entry.previous,
                    author: entry.author,
                    keys: keys,
                    name: name,
                    epoch: epoch
                )
                if try !GroupKeys.proofIsValid(proof, of: message, root: root) { outcome = .proofFailed }
            } else {
                outcome = .proofUnchecked
            }
            signer = keys
        } else {
            guard let author = member(entry.author) else { throw refuse("the author is not a member of the group") }
            guard author.isActive else { throw refuse("the author had been revoked before it") }
            signer = author.keys
        }
        let valid: Bool
        do {
            valid = try VerifiedSignatures.check(entry, group: group, signer: signer.signing)
        } catch {
            throw refuse("its signing key is malformed")
        }
        guard valid else { throw refuse("its signature does not verify") }

        switch entry.change {
        case .joined:
            break
        case .added(let device, _, _, let epoch, _):
            guard member(device) == nil else { throw refuse("device \(device.uuidString) was already added") }
            guard epoch == currentEpoch else {
                throw refuse("it gives the new device epoch \(epoch), not the current epoch \(currentEpoch)")
            }
        case .revoked(let device, _):
            guard device != entry.author else { throw refuse("a device cannot revoke itself") }
            guard member(device)?.isActive == true else {
                throw refuse("device \(device.uuidString) is not an active member")
            }
        case .epochStarted(let epoch, let boxes, _):
            guard !epoch.isOriginal, !startedEpochs.contains(epoch) else {
                throw refuse("epoch \(epoch) was started before")
            }
            // Sealed to every active member; to no one else but devices whose admission it knew and
            // the rules void (the rules its author followed may have admitted them: a log written
            // before red team round 12's F1 was fixed must stay readable, red team round 13, m2).
            // Such a key is unsafe, and the group starts a new epoch (``GroupState/needsNewEpoch``).
            let active = Set(activeMembers.map(\.device))
            guard Set(boxes.keys).isSubset(of: active.union(voidedAdmissions)),
                active.subtracting(boxes.keys).isSubset(of: unsure)
            else {
                throw refuse("the new group key is not sealed to exactly the group's members")
            }
        case .policy:
            break
        case .keysShared(let epoch, _):
            guard epoch == currentEpoch else {
                throw refuse("it shares keys under epoch \(epoch), not the current epoch \(currentEpoch)")
            }
        case .keysReplaced(let keys, let possession):
            guard keys != signer else { throw refuse("it replaces the device's keys with the same keys") }
            let message = GroupEntry.possessionMessage(
                group: group,
                parents: entry.parents,
                author: entry.author,
                keys: keys
            )
            guard (try? Ed25519PrivateKey.isValidSignature(possession, of: message, by: keys.signing)) == true else {
                throw refuse("it does not prove that the device holds its new signing key")
            }
        }
        return outcome
    }
}

extension GroupEntry {
    /// The device this entry admits, for a join or an addition.
    package var admittedDevice: UUID? {
        switch change {
        case .joined: return author
        case .added(let device, _, _, _, _): return device
        default: return nil
        }
    }

    /// The devices a new epoch's key is sealed to (none for other entries).
    // Not inlined: Swift 6.3.1's optimizer crashes (CopyPropagation, "outside of lifetime use") when
    // this switch is inlined into GroupState.init.
    @inline(never)
    var sealedTo: Set<UUID> {
        guard case .epochStarted(_, let boxes, _) = change else { return [] }
        return Set(boxes.keys)
    }

    /// The epoch this entry starts, if it starts one.
    @inline(never)
    var startedEpoch: KeyEpoch? {
        if case .epochStarted(let epoch, _, _) = change { return epoch }
        return nil
    }
}

/// The entries this process has checked against their ancestors, by hash: an entry's hash covers its
/// parents' hashes, so its whole past, and a check depends on nothing else (an entry whose join proof
/// was left unchecked for want of a key is not recorded). Replaying a log again (every export and
/// import does, several times) checks only the entries it has not seen.
private enum CheckedEntries {
    private static let checked = Locked<Set<[UInt8]>>([])
    private static let limit = 16_384

    static func contains(_ hash: [UInt8]) -> Bool { checked.withLock { $0.contains(hash) } }

    static func removeAll() { checked.withLock { $0.removeAll() } }

    static func insert(_ hash: [UInt8]) {
        checked.withLock { set in
            if set.count >= limit { set.removeAll(keepingCapacity: true) }
            set.insert(hash)
        }
    }
}

/// The entries whose signatures this process has verified, by entry hash and signing key, so that
/// replaying a log again (every export and import does, several times) verifies each entry once. An
/// entry's hash covers the hashes of its parents, so the whole past, and with it who had to sign the
/// entry: a hit is the same check with the same answer.
private enum VerifiedSignatures {
    private static let verified = Locked<Set<[UInt8]>>([])
    private static let limit = 16_384

    static func check(_ entry: GroupEntry, group: UUID, signer: [UInt8]) throws(CryptoError) -> Bool {
        let key = entry.hash + signer
        if verified.withLock({ $0.contains(key) }) { return true }
        let valid = try Ed25519PrivateKey.isValidSignature(
            entry.signature,
            of: GroupEntry.signedMessage(entry.unsignedBytes, group: group),
            by: signer
        )
        if valid {
            verified.withLock { set in
                if set.count >= limit { set.removeAll(keepingCapacity: true) }
                set.insert(key)
            }
        }
        return valid
    }
}
