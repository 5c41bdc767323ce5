/// Whether a record may leave this machine. Device-bound records never go into a sync bundle;
/// syncable ones are exported to the vaults of the sync group.
public enum SyncScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// Stays on this machine (the default, as Apple's items are not synchronizable by default).
    case deviceBound
    /// Travels to the other vaults of the sync group.
    case syncable

    /// The scope this one is not.
    package var other: SyncScope { self == .deviceBound ? .syncable : .deviceBound }

    /// The scope a query matches: one scope, or both.
    public enum Match: String, Sendable, Hashable, CaseIterable, Codable {
        /// Device-bound items only.
        case deviceBound
        /// Syncable items only.
        case syncable
        /// Items of either scope.
        case any

        /// The scopes this matches.
        package var scopes: [SyncScope] {
            switch self {
            case .deviceBound: return [.deviceBound]
            case .syncable: return [.syncable]
            case .any: return [.deviceBound, .syncable]
            }
        }
    }

    package var code: UInt8 { self == .deviceBound ? 1 : 2 }
}

extension SyncScope: StoredCode {}
