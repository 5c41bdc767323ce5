package import Foundation

/// One entry of a sync group's membership log (docs/FORMAT.md, "Membership log"):
///
/// ```
/// entry     = version (1) = 1 ‖ kind (1) ‖ parent (32) ‖ author device id (16) ‖ time (Int64 ms)
///             ‖ body length (UInt32) ‖ body ‖ signature (64)
///           | version (1) = 2 ‖ kind (1) ‖ parent count (1, 2…64) ‖ parents (32 × count, ascending)
///             ‖ author device id (16) ‖ time (Int64 ms) ‖ body length (UInt32) ‖ body ‖ signature (64)
/// parent    = SHA-256 of an earlier entry; for the first, SHA-256("coffer/v2/group" ‖ 0 ‖ group id)
/// signature = Ed25519 by the author over "coffer/v2/group-entry" ‖ 0 ‖ group id ‖ the entry up to it
/// ```
///
/// Each entry names, by hash, every entry its author had not yet seen named (the heads of the log it
/// held), so the entries form a graph that only grows, and an entry's ancestors are exactly what its
/// author knew when it wrote it. Each is signed by its author, so only a device holding a member's
/// private key can add one.
package struct GroupEntry: Equatable, Sendable {
    /// The version of an entry with one parent (the only kind older Coffers read).
    package static let version: UInt8 = 1
    /// The version of an entry with several parents.
    package static let mergeVersion: UInt8 = 2
    /// The most parents an entry may name.
    package static let maximumParents = 64

    /// What an entry does.
    package enum Change: Equatable, Sendable {
        /// The author joins, proving it holds the group key of `epoch` (the first device, a device
        /// joining with the passphrase, or a vault made before membership logs existed).
        case joined(keys: DevicePublicKeys, name: String, epoch: KeyEpoch, proof: [UInt8])
        /// A member adds an approved device and seals the current group key to it.
        case added(device: UUID, keys: DevicePublicKeys, name: String, epoch: KeyEpoch, box: [UInt8])
        /// A member revokes a device. `clock` is the revoker's hybrid clock then: every change it had
        /// seen, the revoked device's included, is stamped no later (kept for the record).
        case revoked(device: UUID, clock: UInt64)
        /// A member starts a key epoch: a fresh group key sealed to every member, and the earlier
        /// group keys it holds, sealed under the new one.
        case epochStarted(epoch: KeyEpoch, boxes: [UUID: [UInt8]], history: [UInt8])
        /// A member sets how devices may join.
        case policy(GroupJoinPolicy)
        /// A member shares group keys it holds that the log does not otherwise give a holder of the
        /// current key (epochs of a branch that lost a fork, whose records it holds), sealed under the
        /// group key of `epoch`, the current one.
        case keysShared(epoch: KeyEpoch, history: [UInt8])
        /// The author replaces its own device keys with `keys` (a rekey): entries it signs after this
        /// one are signed with the new key, and a copy of the device made before it, which holds only
        /// the old keys, can add nothing after it. `possession` is the new Ed25519 key's signature over
        /// ``GroupEntry/possessionMessage(group:parents:author:keys:)``.
        case keysReplaced(keys: DevicePublicKeys, possession: [UInt8])

        /// Whether this is a replacement of the author's keys (a rekey).
        package var isKeysReplaced: Bool {
            if case .keysReplaced = self { return true }
            return false
        }

        /// Whether this closes passphrase joins made at the same time: a revocation, a replacement of
        /// keys, or a switch to approval-only joins.
        package var isClosing: Bool {
            switch self {
            case .revoked, .keysReplaced, .policy(.approval): return true
            default: return false
            }
        }

        /// Whether this is a device joining by itself.
        package var isJoin: Bool {
            if case .joined = self { return true }
            return false
        }

        var kind: UInt8 {
            switch self {
            case .joined: return 1
            case .added: return 2
            case .revoked: return 3
            case .epochStarted: return 4
            case .policy: return 5
            case .keysShared: return 6
            case .keysReplaced: return 7
            }
        }
    }

    /// The hashes of the entries this one follows, ascending (one for a version-1 entry).
    package let parents: [[UInt8]]
    package let author: UUID
    package let time: Int64
    package let change: Change
    package let signature: [UInt8]
    /// SHA-256 of the encoded entry: what the next entry names.
    package let hash: [UInt8]
    /// The encoded entry.
    package let encoded: [UInt8]

    /// The hash the first entry of `group`'s log names as its previous entry.
    package static func anchor(group: UUID) -> [UInt8] {
        (try? SHA256.hash(Array("coffer/v2/group".utf8) + [0] + group.bytes)) ?? []
    }

    /// What a joining device's proof names as its place in the log: the one parent, or for several
    /// SHA-256("coffer/v3/parents" ‖ 0 ‖ the parents in order).
    package var previous: [UInt8] { Self.placeDigest(parents) }

    /// ``previous`` for a list of parents.
    package static func placeDigest(_ parents: [[UInt8]]) -> [UInt8] {
        guard parents.count != 1 else { return parents[0] }
        return (try? SHA256.hash(Array("coffer/v3/parents".utf8) + [0] + parents.flatMap { $0 })) ?? []
    }

    /// A new entry by `author`, signed with its key, following `parents` (sorted and deduplicated
    /// here).
    package init(
        change: Change,
        parents: [[UInt8]],
        author: UUID,
        signing key: Ed25519PrivateKey,
        group: UUID,
        time: Date = Date()
    ) throws(CofferError) {
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        let parents = Array(Set(parents)).sorted { $0.lexicographicallyPrecedes($1) }
        guard (1...Self.maximumParents).contains(parents.count) else {
            throw CofferError(.internalError, "a membership entry must follow 1 to \(Self.maximumParents) entries")
        }
        let unsigned = Self.unsignedBytes(change: change, parents: parents, author: author, time: milliseconds)
        let signature: [UInt8]
        do {
            signature = try key.signature(of: Self.signedMessage(unsigned, group: group))
        } catch {
            throw CofferError(.internalError, "signing a membership entry failed: \(error)", underlying: error)
        }
        try self.init(decoding: unsigned + signature)
    }

    /// Reads an encoded entry (its signature is checked by ``GroupLog``, which knows the author's key).
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed entry, `.unsupportedFormat` for a newer one.
    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a membership log entry")
        let version = try reader.readUInt8()
        guard version == Self.version || version == Self.mergeVersion else {
            throw CofferError(.unsupportedFormat, "a membership log entry has version \(version); upgrade Coffer")
        }
        let kind = try reader.readUInt8()
        if version == Self.version {
            parents = [try reader.readBytes(32)]
        } else {
            let count = Int(try reader.readUInt8())
            guard (2...Self.maximumParents).contains(count) else {
                throw CofferError(.decode, "a membership log entry names \(count) parents")
            }
            var parents: [[UInt8]] = []
            for _ in 0..<count {
                let parent = try reader.readBytes(32)
                if let last = parents.last, !last.lexicographicallyPrecedes(parent) {
                    throw CofferError(.decode, "a membership log entry's parents are not in ascending order")
                }
                parents.append(parent)
            }
            self.parents = parents
        }
        author = try UUID(storedBytes: try reader.readBytes(16), what: "a membership entry's author")
        time = try reader.readInt64()
        let body = try reader.readBytes(Int(try reader.readUInt32()))
        signature = try reader.readBytes(64)
        try reader.finish()
        change = try Self.decodeChange(kind: kind, body: body)
        encoded = bytes
        do {
            hash = try SHA256.hash(bytes)
        } catch {
            throw CofferError(.internalError, "hashing a membership entry failed: \(error)", underlying: error)
        }
    }

    /// The entry without its signature: what the signature covers (after the label and group id).
    package var unsignedBytes: [UInt8] { Array(encoded.dropLast(64)) }

    /// The message an entry's signature is over.
    package static func signedMessage(_ unsigned: [UInt8], group: UUID) -> [UInt8] {
        Array("coffer/v2/group-entry".utf8) + [0] + group.bytes + unsigned
    }

    /// When the entry was made, by its author's clock.
    package var date: Date { Date(timeIntervalSince1970: Double(time) / 1000) }

    private static func unsignedBytes(change: Change, parents: [[UInt8]], author: UUID, time: Int64) -> [UInt8] {
        var writer = BinaryWriter()
        writer.write(parents.count == 1 ? version : mergeVersion)
        writer.write(change.kind)
        if parents.count > 1 { writer.write(UInt8(parents.count)) }
        for parent in parents { writer.write(raw: parent) }
        writer.write(raw: author.bytes)
        writer.write(time)
        let body = encodeBody(change)
        writer.write(UInt32(body.count))
        writer.write(raw: body)
        return writer.bytes
    }

    /// What a joining device's proof covers: everything of its entry but the proof and signature.
    package static func proofMessage(
        previous: [UInt8],
        author: UUID,
        keys: DevicePublicKeys,
        name: String,
        epoch: KeyEpoch
    ) -> [UInt8] {
        var writer = BinaryWriter()
        writer.write(raw: Array("coffer/v2/join-proof".utf8) + [0])
        writer.write(raw: previous)
        writer.write(raw: author.bytes)
        writer.write(raw: keys.encoded)
        writer.write(lengthPrefixed: Array(name.utf8))
        writer.write(epoch.id)
        return writer.bytes
    }

    /// What a ``Change/keysReplaced(keys:possession:)`` entry's new key signs, proving the author
    /// holds it: "coffer/v3/keys-replaced" ‖ 0 ‖ group id ‖ ``placeDigest(_:)`` of the parents ‖
    /// author ‖ device-public.
    package static func possessionMessage(
        group: UUID,
        parents: [[UInt8]],
        author: UUID,
        keys: DevicePublicKeys
    ) -> [UInt8] {
        Array("coffer/v3/keys-replaced".utf8) + [0] + group.bytes + placeDigest(parents) + author.bytes + keys.encoded
    }

    private static func encodeBody(_ change: Change) -> [UInt8] {
        var writer = BinaryWriter()
        switch change {
        case .joined(let keys, let name, let epoch, let proof):
            writer.write(raw: keys.encoded)
            writer.write(lengthPrefixed: Array(name.utf8))
            writer.write(epoch.id)
            writer.write(raw: proof)
        case .added(let device, let keys, let name, let epoch, let box):
            writer.write(raw: device.bytes)
            writer.write(raw: keys.encoded)
            writer.write(lengthPrefixed: Array(name.utf8))
            writer.write(epoch.id)
            writer.write(lengthPrefixed: box)
        case .revoked(let device, let clock):
            writer.write(raw: device.bytes)
            writer.write(clock)
        case .epochStarted(let epoch, let boxes, let history):
            writer.write(epoch.id)
            writer.write(UInt16(boxes.count))
            for (device, box) in boxes.sorted(by: { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }) {
                writer.write(raw: device.bytes)
                writer.write(lengthPrefixed: box)
            }
            writer.write(UInt32(history.count))
            writer.write(raw: history)
        case .policy(let policy):
            writer.write(policy.code)
        case .keysShared(let epoch, let history):
            writer.write(epoch.id)
            writer.write(UInt32(history.count))
            writer.write(raw: history)
        case .keysReplaced(let keys, let possession):
            writer.write(raw: keys.encoded)
            writer.write(raw: possession)
        }
        return writer.bytes
    }

    private static func decodeChange(kind: UInt8, body: [UInt8]) throws(CofferError) -> Change {
        var reader = BinaryReader(body, what: "a membership log entry")
        func name() throws(CofferError) -> String {
            guard let text = String(validating: try reader.readLengthPrefixed(), as: UTF8.self) else {
                throw CofferError(.decode, "a membership log entry has a device name that is not UTF-8")
            }
            return text
        }
        func epoch() throws(CofferError) -> KeyEpoch { KeyEpoch(id: try reader.readUInt64()) }
        func device() throws(CofferError) -> UUID {
            try UUID(storedBytes: try reader.readBytes(16), what: "a membership entry's device")
        }
        let change: Change
        switch kind {
        case 1:
            change = .joined(
                keys: try DevicePublicKeys(decoding: try reader.readBytes(DevicePublicKeys.size)),
                name: try name(),
                epoch: try epoch(),
                proof: try reader.readBytes(32)
            )
        case 2:
            change = .added(
                device: try device(),
                keys: try DevicePublicKeys(decoding: try reader.readBytes(DevicePublicKeys.size)),
                name: try name(),
                epoch: try epoch(),
                box: try reader.readLengthPrefixed()
            )
        case 3:
            change = .revoked(device: try device(), clock: try reader.readUInt64())
        case 4:
            let epoch = try epoch()
            var boxes: [UUID: [UInt8]] = [:]
            for _ in 0..<(try reader.readUInt16()) {
                let member = try device()
                guard boxes[member] == nil else {
                    throw CofferError(.decode, "a membership log entry seals a group key to one device twice")
                }
                boxes[member] = try reader.readLengthPrefixed()
            }
            change = .epochStarted(
                epoch: epoch,
                boxes: boxes,
                history: try reader.readBytes(Int(try reader.readUInt32()))
            )
        case 5:
            guard let policy = GroupJoinPolicy(code: try reader.readUInt8()) else {
                throw CofferError(.decode, "a membership log entry sets an unknown join policy; upgrade Coffer")
            }
            change = .policy(policy)
        case 6:
            change = .keysShared(epoch: try epoch(), history: try reader.readBytes(Int(try reader.readUInt32())))
        case 7:
            change = .keysReplaced(
                keys: try DevicePublicKeys(decoding: try reader.readBytes(DevicePublicKeys.size)),
                possession: try reader.readBytes(64)
            )
        default:
            throw CofferError(.unsupportedFormat, "a membership log entry is of unknown kind \(kind); upgrade Coffer")
        }
        try reader.finish()
        return change
    }
}

/// The public halves of a device's keys as the membership log carries them: `version (1) = 1 ‖
/// X25519 public key (32) ‖ Ed25519 public key (32)`, the layout of meta `device-public`.
package struct DevicePublicKeys: Equatable, Hashable, Sendable {
    package static let size = 65

    package let agreement: [UInt8]
    package let signing: [UInt8]

    package init(agreement: [UInt8], signing: [UInt8]) {
        self.agreement = agreement
        self.signing = signing
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        guard bytes.count == Self.size, bytes[0] == 1 else {
            throw CofferError(.decode, "a device's public keys are malformed (\(bytes.count) bytes)")
        }
        agreement = Array(bytes[1..<33])
        signing = Array(bytes[33..<65])
    }

    package var encoded: [UInt8] { [1] + agreement + signing }
}

/// How devices may join a sync group.
public enum GroupJoinPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// A device joins with the passphrase of a member's vault and any of its bundles, or by approval.
    case passphrase
    /// A device joins only when a member approves its join request; bundles carry no
    /// passphrase-wrapped group key.
    case approval

    package var code: UInt8 { self == .passphrase ? 1 : 2 }

    package init?(code: UInt8) {
        switch code {
        case 1: self = .passphrase
        case 2: self = .approval
        default: return nil
        }
    }
}
