/// Which root a key descends from: the device root never leaves this machine; the sync root is shared
/// by the vaults of one sync group.
enum KeyScope: CaseIterable, Sendable {
    case device
    case sync

    var name: String {
        switch self {
        case .device: return "device"
        case .sync: return "sync"
        }
    }
}

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

    var code: UInt8 { self == .whenUnlocked ? 1 : 2 }

    init?(code: UInt8) {
        switch code {
        case 1: self = .whenUnlocked
        case 2: self = .afterFirstUnlock
        default: return nil
        }
    }

    var label: String {
        switch self {
        case .whenUnlocked: return "coffer/v1/class/when-unlocked"
        case .afterFirstUnlock: return "coffer/v1/class/after-first-unlock"
        }
    }
}

/// What a working key is for. Each is HKDF(class key, label), derived once at unlock.
enum KeyPurpose: CaseIterable, Sendable {
    /// Seals keychain item records.
    case item
    /// Keys item ids and the blind index. Derived from the `afterFirstUnlock` class key only, so
    /// lookups keep working while the vault is locked (the records they find may still be locked).
    case index
    /// Keys chunk ids (HMAC of the plaintext). One per level, so chunks of `whenUnlocked` blobs are
    /// never shared with (or found through) `afterFirstUnlock` ones.
    case chunkID
    /// Derives each chunk's sealing key from its id.
    case chunkSeal
    /// Seals blob and snapshot manifests.
    case manifest
    /// Keys blob ids (HMAC of the name), so names are never stored in the clear.
    case blobName
    /// Seeds the FastCDC gear table.
    case gear

    var label: String {
        switch self {
        case .item: return "coffer/v1/item"
        case .index: return "coffer/v1/index"
        case .chunkID: return "coffer/v1/chunk-id"
        case .chunkSeal: return "coffer/v1/chunk-seal"
        case .manifest: return "coffer/v1/manifest"
        case .blobName: return "coffer/v1/blob-name"
        case .gear: return "coffer/v1/gear-seed"
        }
    }

    /// The protection levels this purpose has a key for.
    var levels: [ProtectionLevel] {
        switch self {
        case .item, .chunkID, .chunkSeal, .manifest: return ProtectionLevel.allCases
        case .index, .blobName, .gear: return [.afterFirstUnlock]
        }
    }
}

/// The two root keys of a vault, present only while it is unlocked.
struct RootKeys: Sendable {
    let device: SecureBytes
    let sync: SecureBytes

    func root(_ scope: KeyScope) -> SecureBytes { scope == .device ? device : sync }

    /// Makes two fresh random roots.
    static func generate() -> RootKeys { RootKeys(device: .random(count: 32), sync: .random(count: 32)) }
}

/// The keys a vault holds in memory, by protection level.
///
/// Protection-class keys are derived from the roots with HKDF, one per (scope, level). A
/// `whenUnlocked` key cannot be computed from an `afterFirstUnlock` key, so dropping the roots and
/// the `whenUnlocked` keys at `lock()` really makes `whenUnlocked` data unreadable while the
/// `afterFirstUnlock` data stays available. Dropped keys are wiped by ``SecureBytes`` as soon as no
/// operation still holds them.
struct KeyRing: Sendable {
    /// Present while unlocked.
    private(set) var roots: RootKeys?
    private var classKeys: [Slot: SecureBytes] = [:]
    private var purposeKeys: [PurposeSlot: SecureBytes] = [:]

    private struct Slot: Hashable {
        let scope: KeyScope
        let level: ProtectionLevel
    }

    private struct PurposeSlot: Hashable {
        let purpose: KeyPurpose
        let slot: Slot
    }

    /// Whether the roots (and so every key) are available.
    var isUnlocked: Bool { roots != nil }

    /// Whether any key has been in memory since the vault opened.
    var hasBeenUnlocked: Bool { !classKeys.isEmpty }

    /// Installs the roots and derives every class and purpose key from them.
    mutating func unlock(with roots: RootKeys) throws(CofferError) {
        var derived: [Slot: SecureBytes] = [:]
        var purposes: [PurposeSlot: SecureBytes] = [:]
        do {
            for scope in KeyScope.allCases {
                for level in ProtectionLevel.allCases {
                    derived[Slot(scope: scope, level: level)] = try HKDF.deriveKey(
                        from: roots.root(scope),
                        label: level.label
                    )
                }
                for purpose in KeyPurpose.allCases {
                    for level in purpose.levels {
                        let slot = Slot(scope: scope, level: level)
                        purposes[PurposeSlot(purpose: purpose, slot: slot)] = try HKDF.deriveKey(
                            from: derived[slot]!,
                            label: purpose.label
                        )
                    }
                }
            }
        } catch {
            throw CofferError(.internalError, "deriving the vault's working keys failed: \(error)", underlying: error)
        }
        self.roots = roots
        classKeys = derived
        purposeKeys = purposes
    }

    /// Drops the roots and the `whenUnlocked` keys; `afterFirstUnlock` keys stay.
    mutating func lock() {
        roots = nil
        classKeys = classKeys.filter { $0.key.level != .whenUnlocked }
        purposeKeys = purposeKeys.filter { $0.key.slot.level != .whenUnlocked }
    }

    /// Drops every key.
    mutating func clear() {
        roots = nil
        classKeys = [:]
        purposeKeys = [:]
    }

    /// Every key held, with the level it belongs to (`nil` for the roots): what ``lock()`` and
    /// ``clear()`` are to destroy, listed so tests can watch them go.
    var heldKeys: [(level: ProtectionLevel?, key: SecureBytes)] {
        let rootKeys = roots.map { [$0.device, $0.sync] } ?? []
        return rootKeys.map { (nil, $0) } + classKeys.map { ($0.key.level, $0.value) }
            + purposeKeys.map { ($0.key.slot.level, $0.value) }
    }

    /// The working key for `purpose` in `scope` at `level`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory.
    func key(_ purpose: KeyPurpose, _ scope: KeyScope, _ level: ProtectionLevel) throws(CofferError) -> SecureBytes {
        guard let key = purposeKeys[PurposeSlot(purpose: purpose, slot: Slot(scope: scope, level: level))] else {
            throw lockedError(level)
        }
        return key
    }

    /// The class key for `scope` and `level`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when the vault is locked and the key is of a
    ///   level that is not available then.
    func classKey(_ scope: KeyScope, _ level: ProtectionLevel) throws(CofferError) -> SecureBytes {
        guard let key = classKeys[Slot(scope: scope, level: level)] else { throw lockedError(level) }
        return key
    }

    private func lockedError(_ level: ProtectionLevel) -> CofferError {
        CofferError(
            .interactionNotAllowed,
            level == .whenUnlocked && hasBeenUnlocked
                ? "the vault is locked; unlock it with its passphrase first"
                : "the vault has not been unlocked since it was opened; unlock it with its passphrase first"
        )
    }
}
