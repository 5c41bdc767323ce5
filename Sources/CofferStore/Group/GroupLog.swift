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
        guard count <= 1 << 16 else { throw CofferError(.decode, "a membership log claims \(count) entries") }
        var entries: [GroupEntry] = []
        for _ in 0..<count {
            entries.append(try GroupEntry(decoding: try reader.readBytes(Int(try reader.readUInt32()))))
        }
        try reader.finish()
        self.init(group: group, entries: try Self.canonicalOrder(entries, group: group))
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
        return GroupLog(group: group, entries: try Self.canonicalOrder(all, group: group))
    }

    /// Adds an entry that follows entries of the log; checks it against the state first.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when the entry may not follow the log.
    package mutating func append(_ entry: GroupEntry, roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) {
        let extended = GroupLog(group: group, entries: try Self.canonicalOrder(entries + [entry], group: group))
        _ = try extended.state(roots: roots)
        self = extended
    }

    /// Replays the log, checking every entry against what its author knew (its ancestors), then
    /// says what the whole log means.
    ///
    /// - Parameter roots: The group keys this device holds, by epoch, to check joining devices'
    ///   proofs; a proof under an epoch it does not hold is left unchecked (``GroupState/uncheckedProofs``).
    /// - Throws: ``CofferError`` `.notTrusted` naming the first entry that breaks a rule.
    package func state(roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) -> GroupState {
        let graph = try GroupGraph(entries, group: group)
        var unchecked = false
        for index in entries.indices {
            let past = GroupState(graph: graph, members: graph.ancestors[index])
            unchecked = try past.check(entries[index], index: index, group: group, roots: roots) || unchecked
        }
        var state = GroupState(graph: graph, members: graph.everything)
        state.uncheckedProofs = unchecked
        return state
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
        var ready: [Int] = []
        for (index, entry) in entries.enumerated() {
            if entry.parents == [anchor] {
                ready.append(index)
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
        while !ready.isEmpty {
            let pick = ready.indices.min { entries[ready[$0]].hash.lexicographicallyPrecedes(entries[ready[$1]].hash) }!
            let index = ready.remove(at: pick)
            ordered.append(entries[index])
            for child in children[index] {
                waiting[child] -= 1
                if waiting[child] == 0 { ready.append(child) }
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

/// The entries of a log in canonical order with what each one's author knew: its ancestors.
struct GroupGraph {
    let entries: [GroupEntry]
    /// For each entry, the set of its ancestors (by index).
    let ancestors: [IndexSet]
    /// Every entry.
    let everything: IndexSet
    /// The founding entries (joins naming the group's anchor).
    let founding: IndexSet

    init(_ entries: [GroupEntry], group: UUID) throws(CofferError) {
        self.entries = entries
        var position: [[UInt8]: Int] = [:]
        var ancestors: [IndexSet] = []
        let anchor = GroupEntry.anchor(group: group)
        for (index, entry) in entries.enumerated() {
            var known = IndexSet()
            let founding = entry.parents == [anchor]
            guard founding ? entry.change.isJoin : index > 0 else {
                throw CofferError(
                    .notTrusted,
                    "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): it does not start this group's log; it was refused and nothing changed"
                )
            }
            if !founding {
                for parent in entry.parents {
                    guard let earlier = position[parent] else {
                        throw CofferError(
                            .notTrusted,
                            "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): it does not follow entries of the log before it; it was refused and nothing changed"
                        )
                    }
                    known.insert(earlier)
                    known.formUnion(ancestors[earlier])
                }
            }
            position[entry.hash] = index
            ancestors.append(known)
        }
        self.ancestors = ancestors
        everything = IndexSet(integersIn: 0..<entries.count)
        founding = IndexSet(entries.indices.filter { entries[$0].parents == [anchor] })
    }

    /// Whether neither entry was known to the other's author.
    func concurrent(_ first: Int, _ second: Int) -> Bool {
        first != second && !ancestors[first].contains(second) && !ancestors[second].contains(first)
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

/// What a set of membership entries means (docs/FORMAT.md, "Membership log", "What a log means").
///
/// Every entry was checked against its own ancestors when it was added. Taken together, entries may
/// void one another when neither author knew of the other (they are *concurrent*):
/// - a revocation always stands: two devices revoking each other at once are both revoked;
/// - anything else a device wrote at the same time as its revocation was written, or at the same
///   time as its rekey (by a copy holding its old keys), has no effect, nor does a revocation by such
///   a copy;
/// - a passphrase join at the same time as a new key epoch (every revocation and rotation starts one)
///   or a change of policy has no effect: the device proved a key that was being replaced, or joined
///   by a door that was being closed;
/// - two rekeys of one device at once revoke it (one of them came from a copy).
///
/// An entry whose author is not a member once these are applied has no effect either; they are
/// applied again until nothing changes.
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
    package func member(_ device: UUID) -> GroupMemberRecord? { members.first { $0.device == device } }

    /// The devices that are members now.
    package var activeMembers: [GroupMemberRecord] { members.filter(\.isActive) }

    /// The meaning of the entries `subset` of `graph` (closed under ancestors: the whole log, or what
    /// one entry's author knew).
    init(graph: GroupGraph, members subset: IndexSet) {
        let entries = graph.entries
        // Apply the voiding rules until nothing changes. Each round walks the entries in canonical
        // order and decides each with what was decided before it in the same round, so whatever
        // depends on an ancestor (an admission down a chain of additions) settles in one round;
        // only what depends on a concurrent entry later in the order takes another. A graph that
        // does not settle (it cannot, short of a crafted cycle) keeps only what had effect in each
        // of the last two rounds: nothing unresolved is ever taken as admitted.
        var effective = subset
        var settled = false
        for _ in 0..<Self.maximumRounds {
            let next = Self.effectiveEntries(graph: graph, subset: subset, effective: effective)
            if next == effective {
                settled = true
                break
            }
            effective = next
        }
        if !settled {
            effective = effective.intersection(
                Self.effectiveEntries(graph: graph, subset: subset, effective: effective)
            )
        }
        for index in subset { startedEpochs.formUnion(entries[index].startedEpoch.map { [$0] } ?? []) }
        voided = Set(subset.subtracting(effective).map { entries[$0].hash })

        var lastEpoch: Int?
        var lastPolicy: (index: Int, policy: GroupJoinPolicy)?
        var revocations: [Int] = []
        var rekeys: [UUID: [Int]] = [:]
        var admissions: [Int] = []
        for index in effective {
            let entry = entries[index]
            switch entry.change {
            case .joined(let keys, let name, _, _):
                guard member(entry.author) == nil else { continue }
                members.append(
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
                guard member(device) == nil else { continue }
                members.append(
                    GroupMemberRecord(device: device, keys: keys, name: name, added: entry.date, addedBy: entry.author)
                )
                admissions.append(index)
            case .revoked(let device, _):
                revocations.append(index)
                if let position = members.firstIndex(where: { $0.device == device }), members[position].isActive {
                    members[position].revoked = entry.date
                    members[position].revokedBy = entry.author
                }
            case .epochStarted(let epoch, _, _):
                epochs.append(epoch)
                currentEpoch = epoch
                lastEpoch = index
            case .policy(let policy):
                lastPolicy = (index, policy)
            case .keysShared:
                break
            case .keysReplaced(let keys, _):
                if let position = members.firstIndex(where: { $0.device == entry.author }) {
                    members[position].keys = keys
                }
                let earlier = rekeys[entry.author, default: []]
                if earlier.contains(where: { graph.concurrent($0, index) }),
                    let position = members.firstIndex(where: { $0.device == entry.author }),
                    members[position].isActive
                {
                    members[position].revoked = entry.date
                    members[position].revokedBy = entry.author
                }
                rekeys[entry.author, default: []].append(index)
            }
        }
        // A revocation closes passphrase joins until a member who knew of it opens them again.
        if let lastPolicy, lastPolicy.policy == .passphrase,
            revocations.allSatisfy({ graph.ancestors[lastPolicy.index].contains($0) })
        {
            policy = .passphrase
        } else if lastPolicy != nil || !revocations.isEmpty {
            policy = .approval
        }
        // The current key is safe when exactly the active members hold it: every box of its epoch
        // is sealed to an active member under the keys it has now, and every active member has one
        // (or was added after it, with the key sealed to it in its admission).
        let active = Set(activeMembers.map(\.device))
        if let lastEpoch, case .epochStarted(_, let boxes, _) = entries[lastEpoch].change {
            let sealedTo = Set(boxes.keys)
            let addedSince = Set(
                admissions.filter { graph.ancestors[$0].contains(lastEpoch) }.compactMap { entries[$0].admittedDevice }
            )
            let rekeyedSince = rekeys.contains { device, indices in
                active.contains(device) && indices.contains { !graph.ancestors[lastEpoch].contains($0) }
            }
            needsNewEpoch =
                !sealedTo.isSubset(of: active) || !active.isSubset(of: sealedTo.union(addedSince)) || rekeyedSince
        } else {
            // Every device that ever joined holds the original key.
            needsNewEpoch = !revocations.isEmpty || !rekeys.isEmpty || !voided.isEmpty
        }
    }

    /// How many rounds of the voiding rules settle a graph at most before the unresolved entries are
    /// taken as without effect.
    static let maximumRounds = 32

    /// One round of the voiding rules over `subset`, in canonical order: an entry is decided with the
    /// decisions of this round for the entries before it and of the round before (`effective`) for
    /// those after it.
    private static func effectiveEntries(graph: GroupGraph, subset: IndexSet, effective previous: IndexSet) -> IndexSet
    {
        let entries = graph.entries
        var decided = previous
        var admission: [UUID: Int] = [:]
        var revocationsOf: [UUID: [Int]] = [:]
        var rekeysOf: [UUID: [Int]] = [:]
        var closings: [Int] = []
        for index in subset {
            let entry = entries[index]
            switch entry.change {
            case .revoked(let device, _): revocationsOf[device, default: []].append(index)
            case .keysReplaced: rekeysOf[entry.author, default: []].append(index)
            case .epochStarted, .policy(.approval): closings.append(index)
            default: break
            }
        }
        for index in subset {
            let entry = entries[index]
            let author = entry.author
            func concurrentWithAny(_ others: [Int]?) -> Bool {
                (others ?? []).contains { decided.contains($0) && graph.concurrent($0, index) }
            }
            var hasEffect = true
            if case .joined = entry.change {
                // A founding join is exempt: a device accepts a second founder only while the log
                // has nothing it could void (``GroupContext/merge(_:)``).
                hasEffect = admission[author] == nil && (graph.founding.contains(index) || !concurrentWithAny(closings))
            } else if let admitted = admission[author] {
                // The author's own admission must have effect and have been known to it.
                hasEffect = graph.ancestors[index].contains(admitted)
            } else {
                hasEffect = false
            }
            if hasEffect {
                switch entry.change {
                case .revoked:
                    hasEffect = !concurrentWithAny(rekeysOf[author])
                case .keysReplaced:
                    hasEffect = !concurrentWithAny(revocationsOf[author])
                default:
                    hasEffect = !concurrentWithAny(revocationsOf[author]) && !concurrentWithAny(rekeysOf[author])
                }
            }
            if hasEffect {
                decided.insert(index)
                if let device = entry.admittedDevice, admission[device] == nil { admission[device] = index }
            } else {
                decided.remove(index)
            }
        }
        return decided
    }

    /// Checks `entry` against this state, the meaning of exactly its ancestors; returns whether a
    /// join proof was left unchecked.
    func check(
        _ entry: GroupEntry,
        index: Int,
        group: UUID,
        roots: (KeyEpoch) -> SecureBytes?
    ) throws(CofferError) -> Bool {
        func refuse(_ why: String) -> CofferError {
            CofferError(
                .notTrusted,
                "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): \(why); it was refused and nothing changed"
            )
        }
        let signer: DevicePublicKeys
        var unchecked = false
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
                guard try GroupKeys.proofIsValid(proof, of: message, root: root) else {
                    throw refuse("its proof of the group key does not verify")
                }
            } else {
                unchecked = true
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
            guard Set(boxes.keys) == Set(activeMembers.map(\.device)) else {
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
        return unchecked
    }
}

extension GroupEntry {
    /// The device this entry admits, for a join or an addition.
    var admittedDevice: UUID? {
        switch change {
        case .joined: return author
        case .added(let device, _, _, _, _): return device
        default: return nil
        }
    }

    /// The epoch this entry starts, if it starts one.
    var startedEpoch: KeyEpoch? {
        if case .epochStarted(let epoch, _, _) = change { return epoch }
        return nil
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
