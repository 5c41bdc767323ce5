/// When data can be read, after Apple's data protection classes: the level of the key that seals it.
///
/// `whenUnlocked` data is sealed under a key that ``Vault/lock()`` wipes, so it is unreadable while the
/// vault is locked; `afterFirstUnlock` data under one that stays in memory from the first unlock until
/// the vault is closed, for background work; `completeUnlessOpen` data under a key agreed, for each
/// write, with a class public key, so it can be written with no key at all (a locked vault, a
/// write-only client) and read only while unlocked.
public enum ProtectionLevel: String, CaseIterable, Sendable, Codable {
    /// Readable only while the vault is unlocked.
    case whenUnlocked
    /// Readable from the first unlock until the vault is closed, even while it is locked.
    case afterFirstUnlock
    /// Writable at any time, with no key (Apple's `NSFileProtectionCompleteUnlessOpen`): each write
    /// agrees a fresh key with the scope's class public key, whose private half exists only while the
    /// vault is unlocked. Readable only while unlocked; a read that began then finishes after a lock.
    /// Blobs and snapshots only (see ``Vault/allowWriteOnlyClients(_:)-8qwu``).
    case completeUnlessOpen

    /// Parses a level by name (`whenUnlocked` or `afterFirstUnlock`).
    ///
    /// - Throws: ``CofferError`` `.param` naming the accepted names.
    public init(name: String) throws(CofferError) {
        guard let level = Self(rawValue: name) else {
            throw CofferError(
                .param,
                "unknown protection '\(name)'; use whenUnlocked, afterFirstUnlock or completeUnlessOpen"
            )
        }
        self = level
    }

    package var code: UInt8 {
        switch self {
        case .whenUnlocked: return 1
        case .afterFirstUnlock: return 2
        case .completeUnlessOpen: return 3
        }
    }

    /// The levels sealed under symmetric class keys held in the key ring; `completeUnlessOpen` records
    /// are sealed under a key agreed per write instead (``isSealedToClassKey``).
    package static let symmetricLevels: [ProtectionLevel] = [.whenUnlocked, .afterFirstUnlock]

    /// Whether records of this level are sealed to the class public key, one agreed key per write.
    package var isSealedToClassKey: Bool { self == .completeUnlessOpen }
}

extension ProtectionLevel: StoredCode {}
