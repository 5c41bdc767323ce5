/// When an item's secret can be read, after Apple's data-protection classes (`kSecAttrAccessible…`).
///
/// `whenUnlocked` items are sealed under a key that ``Vault/lock()`` wipes; `afterFirstUnlock` items
/// under one that stays in memory from the first unlock until the vault is closed. The
/// `…ThisDeviceOnly` classes are always device-bound: they never leave this machine.
///
/// Apple's `always` classes are not offered: they would keep secrets readable without the passphrase.
public enum Accessibility: String, Sendable, Hashable, CaseIterable, Codable {
    /// Readable only while the vault is unlocked. The default, as on Apple platforms.
    case whenUnlocked
    /// Readable from the first unlock until the vault is closed, even while locked: for background work.
    case afterFirstUnlock
    /// As ``whenUnlocked``, device-bound. (A vault always has a passphrase, so the passcode condition
    /// always holds.)
    case whenPasscodeSetThisDeviceOnly
    /// As ``whenUnlocked``, device-bound.
    case whenUnlockedThisDeviceOnly
    /// As ``afterFirstUnlock``, device-bound.
    case afterFirstUnlockThisDeviceOnly

    /// Whether items of this class are always device-bound.
    public var isThisDeviceOnly: Bool {
        switch self {
        case .whenUnlocked, .afterFirstUnlock: return false
        default: return true
        }
    }

    /// The key level that seals items of this class.
    package var level: ProtectionLevel {
        switch self {
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: return .afterFirstUnlock
        default: return .whenUnlocked
        }
    }

    /// Parses a class by name, e.g. `whenUnlocked` or `afterFirstUnlockThisDeviceOnly`.
    ///
    /// - Throws: ``KeychainError`` `.param` for an unknown name, and for Apple's `always` classes with
    ///   the reason they are not supported.
    public init(name: String) throws(KeychainError) {
        if let match = Self(rawValue: name) {
            self = match
            return
        }
        if name.lowercased().hasPrefix("always") {
            throw KeychainError(
                .param,
                "accessibility '\(name)' is not supported: it would leave the secret readable without the "
                    + "passphrase (Apple deprecated it for the same reason); use afterFirstUnlock for background access"
            )
        }
        throw KeychainError(
            .param,
            "unknown accessibility '\(name)'; use one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))"
        )
    }

    package var code: UInt8 {
        switch self {
        case .whenUnlocked: return 1
        case .afterFirstUnlock: return 2
        case .whenPasscodeSetThisDeviceOnly: return 3
        case .whenUnlockedThisDeviceOnly: return 4
        case .afterFirstUnlockThisDeviceOnly: return 5
        }
    }
}

extension Accessibility: StoredCode {}
