package import Foundation

/// A sync group's membership log: the chain of ``GroupEntry`` values every device keeps, checks from
/// its first entry, and merges with the logs other devices' bundles carry.
///
/// Replaying the log gives the group's state (``GroupState``): who is a member, who was revoked, the
/// current key epoch and the join policy. An entry is refused (and with it the whole log) when its
/// signature does not verify, when it does not name the entry before it, when its author is not a
/// member at that point (or was revoked before it), or when it breaks a rule of its kind.
package struct GroupLog: Equatable, Sendable {
    package let group: UUID
    package private(set) var entries: [GroupEntry]

    package init(group: UUID, entries: [GroupEntry] = []) {
        self.group = group
        self.entries = entries
    }

    /// The hash the next entry must name.
    package var head: [UInt8] { entries.last?.hash ?? GroupEntry.anchor(group: group) }

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

    /// Reads a stored or carried log (not yet checked: ``state(roots:)`` checks it).
    package init(group: UUID, decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a membership log")
        let count = Int(try reader.readUInt32())
        guard count <= 1 << 20 else { throw CofferError(.decode, "a membership log claims \(count) entries") }
        var entries: [GroupEntry] = []
        for _ in 0..<count {
            entries.append(try GroupEntry(decoding: try reader.readBytes(Int(try reader.readUInt32()))))
        }
        try reader.finish()
        self.init(group: group, entries: entries)
    }

    /// Appends an entry that extends the log; checks it against the state first.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when the entry may not follow the log.
    package mutating func append(_ entry: GroupEntry, roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) {
        var state = try state(roots: roots)
        try state.apply(entry, index: entries.count, previous: head, group: group, roots: roots)
        entries.append(entry)
    }

    /// Replays the log from its first entry, checking every entry.
    ///
    /// - Parameter roots: The group keys this device holds, by epoch, to check joining devices'
    ///   proofs; a proof under an epoch it does not hold is left unchecked (``GroupState/uncheckedProofs``).
    /// - Throws: ``CofferError`` `.notTrusted` naming the first entry that breaks a rule.
    package func state(roots: (KeyEpoch) -> SecureBytes?) throws(CofferError) -> GroupState {
        var state = GroupState()
        var previous = GroupEntry.anchor(group: group)
        for (index, entry) in entries.enumerated() {
            try state.apply(entry, index: index, previous: previous, group: group, roots: roots)
            previous = entry.hash
        }
        return state
    }

    /// How two logs of one group relate.
    package enum Relation: Equatable {
        /// They are the same log.
        case same
        /// The other log extends this one (it holds everything this one does, and more).
        case behind
        /// This log extends the other.
        case ahead
        /// They share the first `commonCount` entries and then differ; `otherWins` tells which side
        /// every device keeps (``forkWinner(_:_:)``).
        case forked(commonCount: Int, otherWins: Bool)
    }

    /// How `other` relates to this log.
    package func relation(to other: GroupLog) -> Relation {
        var common = 0
        while common < entries.count, common < other.entries.count, entries[common].hash == other.entries[common].hash {
            common += 1
        }
        if common == entries.count && common == other.entries.count { return .same }
        if common == entries.count { return .behind }
        if common == other.entries.count { return .ahead }
        let mine = Array(entries[common...])
        let theirs = Array(other.entries[common...])
        return .forked(commonCount: common, otherWins: Self.forkWinner(mine, theirs) == .second)
    }

    /// Which side of a fork stands: the branch whose first entry has the smaller hash. This is a
    /// total order on logs (lexicographic on entry hashes, a log before its extensions), so every
    /// device keeps the same log whatever order logs arrive in, however many branches meet. What the
    /// losing side did is appended again on top by the devices that hold it
    /// (``GroupContext/merge(_:)``), revocations included: a revoked device that wins a fork from
    /// before its revocation is revoked again, with the devices it added there.
    package static func forkWinner(_ first: [GroupEntry], _ second: [GroupEntry]) -> Side {
        first[0].hash.lexicographicallyPrecedes(second[0].hash) ? .first : .second
    }

    /// One side of a fork.
    package enum Side: Equatable {
        case first
        case second
    }
}

/// A member of a sync group as its membership log records it.
package struct GroupMemberRecord: Equatable, Sendable {
    package let device: UUID
    package let keys: DevicePublicKeys
    package let name: String
    package let added: Date
    /// Who added it: itself, for a device that joined with the group key.
    package let addedBy: UUID
    package var revoked: Date?
    package var revokedBy: UUID?

    package var isActive: Bool { revoked == nil }
}

/// What a membership log says, replayed from its first entry.
package struct GroupState: Equatable, Sendable {
    /// Every device the log ever added, revoked ones included, in the order they were added.
    package private(set) var members: [GroupMemberRecord] = []
    package private(set) var policy: GroupJoinPolicy = .passphrase
    /// The epoch new records are sealed in.
    package private(set) var currentEpoch: KeyEpoch = .original
    /// Every epoch the log started, in order, after the original.
    package private(set) var epochs: [KeyEpoch] = []
    /// Whether a joining device's proof was left unchecked for want of its epoch's key.
    package private(set) var uncheckedProofs = false

    package init() {}

    /// The member record of `device`, active or revoked.
    package func member(_ device: UUID) -> GroupMemberRecord? { members.first { $0.device == device } }

    /// The devices that are members now.
    package var activeMembers: [GroupMemberRecord] { members.filter(\.isActive) }

    mutating func apply(
        _ entry: GroupEntry,
        index: Int,
        previous: [UInt8],
        group: UUID,
        roots: (KeyEpoch) -> SecureBytes?
    ) throws(CofferError) {
        func refuse(_ why: String) -> CofferError {
            CofferError(
                .notTrusted,
                "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): \(why); it was refused and nothing changed"
            )
        }
        guard entry.previous == previous else {
            throw refuse(index == 0 ? "it does not start this group's log" : "it does not follow the entry before it")
        }
        let signer: DevicePublicKeys
        if case .joined(let keys, let name, let epoch, let proof) = entry.change {
            if let existing = member(entry.author) {
                throw refuse(
                    existing.isActive
                        ? "the device is already a member" : "the device was revoked and cannot join again"
                )
            }
            guard index == 0 || policy == .passphrase else {
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
                uncheckedProofs = true
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
        case .joined(let keys, let name, _, _):
            members.append(
                GroupMemberRecord(
                    device: entry.author,
                    keys: keys,
                    name: name,
                    added: entry.date,
                    addedBy: entry.author
                )
            )
        case .added(let device, let keys, let name, let epoch, _):
            guard member(device) == nil else { throw refuse("device \(device.uuidString) was already added") }
            guard epoch == currentEpoch else {
                throw refuse("it gives the new device epoch \(epoch), not the current epoch \(currentEpoch)")
            }
            members.append(
                GroupMemberRecord(device: device, keys: keys, name: name, added: entry.date, addedBy: entry.author)
            )
        case .revoked(let device, _):
            guard device != entry.author else { throw refuse("a device cannot revoke itself") }
            guard let position = members.firstIndex(where: { $0.device == device }), members[position].isActive else {
                throw refuse("device \(device.uuidString) is not an active member")
            }
            members[position].revoked = entry.date
            members[position].revokedBy = entry.author
        case .epochStarted(let epoch, let boxes, _):
            guard !epoch.isOriginal, !epochs.contains(epoch) else { throw refuse("epoch \(epoch) was started before") }
            guard Set(boxes.keys) == Set(activeMembers.map(\.device)) else {
                throw refuse("the new group key is not sealed to exactly the group's members")
            }
            epochs.append(epoch)
            currentEpoch = epoch
        case .policy(let policy):
            self.policy = policy
        case .keysShared(let epoch, _):
            guard epoch == currentEpoch else {
                throw refuse("it shares keys under epoch \(epoch), not the current epoch \(currentEpoch)")
            }
        }
    }
}

/// The entries whose signatures this process has verified, by entry hash and signing key, so that
/// replaying a log again (every export and import does, several times) verifies each entry once. An
/// entry's hash covers the hash of the one before it, so the whole chain, and with it who had to sign
/// the entry: a hit is the same check with the same answer.
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
