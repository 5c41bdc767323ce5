import Foundation

/// What changed in a sync group's membership between two readings of it (``Vault/members()-3bf8v``),
/// in words: what an import or a pull that changed it says, so that a member revoked, or this device
/// shut out, is never left to a generic "see coffer devices".
package struct MembershipChanges: Equatable {
    /// One line per device whose membership changed, this device first.
    package private(set) var lines: [String] = []
    /// Whether this device was a member before and is not now (revoked, or its join voided).
    package private(set) var thisDeviceIsOut = false

    /// The changes from `before` to `after`.
    package init(from before: [GroupMember], to after: [GroupMember]) {
        let earlier = Dictionary(before.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        let now = Dictionary(after.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        var lines: [(isThisDevice: Bool, text: String)] = []
        for member in after {
            let was = earlier[member.deviceID]
            let subject = member.isThisDevice ? "this device" : Self.name(member)
            if member.isActive, was == nil {
                // What arrives in an import or a pull was not done here: an approval under this
                // device's keys was made by another copy of this vault (final outside test of issue
                // 37, F5: it read as this device's own).
                let byThisDevice = now[member.addedBy]?.isThisDevice == true
                let how =
                    member.addedBy == member.deviceID
                    ? "joined with the group key (a passphrase join)"
                    : byThisDevice
                        ? "was approved with this device's keys by another copy of this vault (a restored or cloned copy re-enrols that way; if you made no copy, this device's files leaked: rekey it)"
                        : "was approved by \(Self.name(member.addedBy, in: now))"
                lines.append((member.isThisDevice, "\(subject) \(how)"))
            } else if !member.isActive, was?.isActive != false {
                let by =
                    member.revokedBy == member.deviceID
                    ? "two replacements of its keys at once (a copy of it rekeyed too)"
                    : Self.name(member.revokedBy, in: now)
                lines.append((member.isThisDevice, "\(subject) was revoked by \(by)"))
                if member.isThisDevice, was?.isActive == true { thisDeviceIsOut = true }
            }
        }
        for member in before where now[member.deviceID] == nil {
            let subject = member.isThisDevice ? "this device" : Self.name(member)
            lines.append(
                (
                    member.isThisDevice,
                    "\(subject)'s join no longer counts (a member closed the group to new devices at the same time)"
                )
            )
            if member.isThisDevice, member.isActive { thisDeviceIsOut = true }
        }
        self.lines = lines.filter(\.isThisDevice).map(\.text) + lines.filter { !$0.isThisDevice }.map(\.text)
    }

    /// Whether no device's membership changed.
    package var isEmpty: Bool { lines.isEmpty }

    /// The changes as one clause: "pA (02d1126c) was revoked by …; …".
    package var summary: String { lines.joined(separator: "; ") }

    private static func name(_ member: GroupMember) -> String {
        "\(member.name) (\(member.deviceID.uuidString.prefix(8).lowercased()))"
    }

    private static func name(_ device: UUID?, in members: [UUID: GroupMember]) -> String {
        guard let device else { return "a member" }
        guard let member = members[device] else {
            return "device \(device.uuidString.prefix(8).lowercased()), whose own join does not count"
        }
        return member.isThisDevice ? "this device" : name(member)
    }
}
