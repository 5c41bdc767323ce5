/// When data can be read, after Apple's data protection classes: the level of the key that seals it.
///
/// `whenUnlocked` data is sealed under a key that ``Vault/lock()`` wipes, so it is unreadable while the
/// vault is locked; `afterFirstUnlock` data under one that stays in memory from the first unlock until
/// the vault is closed, for background work.
public enum ProtectionLevel: String, CaseIterable, Sendable, Codable {
    /// Readable only while the vault is unlocked.
    case whenUnlocked
    /// Readable from the first unlock until the vault is closed, even while it is locked.
    case afterFirstUnlock

    /// Parses a level by name (`whenUnlocked` or `afterFirstUnlock`).
    ///
    /// - Throws: ``CofferError`` `.param` naming the accepted names.
    public init(name: String) throws(CofferError) {
        guard let level = Self(rawValue: name) else {
            throw CofferError(.param, "unknown protection '\(name)'; use whenUnlocked or afterFirstUnlock")
        }
        self = level
    }

    package var code: UInt8 { self == .whenUnlocked ? 1 : 2 }
}

extension ProtectionLevel: StoredCode {}
