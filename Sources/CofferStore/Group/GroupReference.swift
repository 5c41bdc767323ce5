public import Foundation

/// Which sync group a device asks to join: the group's id and a fingerprint of its founding entries,
/// for two people to compare (``JoinRequest/group``, ``Vault/groupReference()-4zjb9``).
///
/// The id alone is not enough: anyone who saw a bundle can make a log under the same id. The
/// fingerprint covers the entries that founded the group, which only devices holding its original key
/// could write, so a group shown with the same fingerprint on both sides is the same group.
public struct GroupReference: Sendable, Hashable, Codable {
    /// The sync group's id.
    public let id: UUID
    /// SHA-256("coffer/v3/group-fingerprint" ‖ 0x00 ‖ group id ‖ the founding entries' hashes in
    /// ascending order), first 10 bytes, as five groups of four hex digits.
    public let fingerprint: String
    /// The heads of the membership log this reference was read from: a device asking to join keeps
    /// them, and takes an approval only from a log that holds them, so a member's stale copy that
    /// has not heard of a revocation the asking device saw cannot admit it. Not part of equality.
    package private(set) var seenHeads: [[UInt8]] = []

    /// A reference from its parts (as a join request carries them).
    public init(id: UUID, fingerprint: String) {
        self.id = id
        self.fingerprint = fingerprint
    }

    /// Whether both name the same group (id and fingerprint).
    public static func == (lhs: GroupReference, rhs: GroupReference) -> Bool {
        lhs.id == rhs.id && lhs.fingerprint == rhs.fingerprint
    }

    /// Hashes the id and fingerprint.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(fingerprint)
    }

    private enum CodingKeys: String, CodingKey {
        case id, fingerprint
    }

    /// This reference with `heads` as the log heads seen.
    package func seeing(_ heads: [[UInt8]]) -> GroupReference {
        var copy = self
        copy.seenHeads = heads
        return copy
    }

    /// The reference of the group whose membership log is `log`.
    package init(log: GroupLog) throws(CofferError) {
        let anchor = GroupEntry.anchor(group: log.group)
        let founding = log.entries.filter { $0.parents == [anchor] }.map(\.hash)
            .sorted { $0.lexicographicallyPrecedes($1) }
        let digest: [UInt8]
        do {
            digest = try SHA256.hash(
                Array("coffer/v3/group-fingerprint".utf8) + [0] + log.group.bytes + founding.flatMap { $0 }
            )
        } catch {
            throw CofferError(.internalError, "hashing the group fingerprint failed: \(error)", underlying: error)
        }
        self.init(id: log.group, fingerprint: FingerprintText.of(digest))
        seenHeads = log.heads
    }

    /// The group as people read it: its id and fingerprint.
    public var description: String { "\(id.uuidString.lowercased()) (fingerprint \(fingerprint))" }
}

/// How fingerprints are shown: the first 10 bytes of a digest as five groups of four hex digits.
package enum FingerprintText {
    /// `digest`'s first 10 bytes as `xxxx-xxxx-xxxx-xxxx-xxxx`.
    package static func of(_ digest: [UInt8]) -> String {
        let hex = Array(digest.prefix(10)).hexEncoded
        return stride(from: 0, to: hex.count, by: 4).map { start in
            let from = hex.index(hex.startIndex, offsetBy: start)
            return String(hex[from..<hex.index(from, offsetBy: 4)])
        }.joined(separator: "-")
    }
}
