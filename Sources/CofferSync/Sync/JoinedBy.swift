public import Foundation

/// Which group a vault waiting for approval joined, and which member approved it.
public struct JoinedBy: Sendable, Hashable, Codable {
    /// The group it joined.
    public let group: GroupReference
    /// The member whose approval admitted it.
    public let approver: UUID
    /// That member's name in the group.
    public let approverName: String
}
