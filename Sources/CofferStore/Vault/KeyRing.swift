/// Which root a key descends from: the device root never leaves this machine; the sync root is shared
/// by the vaults of one sync group.
package enum KeyScope: CaseIterable, Sendable {
    case device
    case sync

    package var name: String {
        switch self {
        case .device: return "device"
        case .sync: return "sync"
        }
    }
}

extension SyncScope {
    /// The root this scope's keys descend from.
    package var keyScope: KeyScope { self == .deviceBound ? .device : .sync }
}

extension ProtectionLevel {
    /// The HKDF label of this level's class key.
    package var label: String {
        switch self {
        case .whenUnlocked: return "coffer/v1/class/when-unlocked"
        case .afterFirstUnlock: return "coffer/v1/class/after-first-unlock"
        }
    }
}

/// What a working key is for. Each is HKDF(class key, label), derived once at unlock.
package enum KeyPurpose: CaseIterable, Sendable {
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

    package var label: String {
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

    /// The purpose's place in ``allCases``, for indexing.
    package var ordinal: Int {
        switch self {
        case .item: return 0
        case .index: return 1
        case .chunkID: return 2
        case .chunkSeal: return 3
        case .manifest: return 4
        case .blobName: return 5
        case .gear: return 6
        }
    }

    /// The protection levels this purpose has a key for.
    package var levels: [ProtectionLevel] {
        switch self {
        case .item, .chunkID, .chunkSeal, .manifest: return ProtectionLevel.allCases
        case .index, .blobName, .gear: return [.afterFirstUnlock]
        }
    }
}

/// The two root keys of a vault, present only while it is unlocked.
package struct RootKeys: Sendable {
    package let device: SecureBytes
    package let sync: SecureBytes

    package init(device: SecureBytes, sync: SecureBytes) {
        self.device = device
        self.sync = sync
    }

    package func root(_ scope: KeyScope) -> SecureBytes { scope == .device ? device : sync }

    /// Makes two fresh random roots.
    package static func generate() -> RootKeys { RootKeys(device: .random(count: 32), sync: .random(count: 32)) }
}

/// The keys a vault holds in memory, by protection level.
///
/// Protection-class keys are derived from the roots with HKDF, one per (scope, level). A
/// `whenUnlocked` key cannot be computed from an `afterFirstUnlock` key, so dropping the roots and
/// the `whenUnlocked` keys at `lock()` really makes `whenUnlocked` data unreadable while the
/// `afterFirstUnlock` data stays available. Dropped keys are wiped by ``SecureBytes`` as soon as no
/// operation still holds them.
package struct KeyRing: Sendable {
    /// Present while unlocked.
    private(set) var roots: RootKeys?

    package init(roots: RootKeys? = nil) {
        self.roots = roots
    }
    /// By ``Slot/index``: flat arrays, so a lookup on the hot path is an index, not a hash, and a copy
    /// of the ring retains two buffers.
    private var classKeys = [SecureBytes?](repeating: nil, count: Slot.count)
    /// By ``PurposeSlot/index``.
    private var purposeKeys = [SecureBytes?](repeating: nil, count: PurposeSlot.count)

    private struct Slot {
        package let scope: KeyScope
        package let level: ProtectionLevel

        package static let count = KeyScope.allCases.count * ProtectionLevel.allCases.count
        package static let all = KeyScope.allCases.flatMap { scope in
            ProtectionLevel.allCases.map { Slot(scope: scope, level: $0) }
        }

        package var index: Int { (scope == .device ? 0 : 2) + (level == .whenUnlocked ? 0 : 1) }
    }

    private struct PurposeSlot {
        package let purpose: KeyPurpose
        package let slot: Slot

        package static let count = KeyPurpose.allCases.count * Slot.count
        package static let all = KeyPurpose.allCases.flatMap { purpose in
            Slot.all.map { PurposeSlot(purpose: purpose, slot: $0) }
        }

        package var index: Int { purpose.ordinal * Slot.count + slot.index }
    }

    /// Whether the roots (and so every key) are available.
    package var isUnlocked: Bool { roots != nil }

    /// Whether any key has been in memory since the vault opened.
    package var hasBeenUnlocked: Bool { classKeys.contains { $0 != nil } }

    /// Installs the roots and derives every class and purpose key from them.
    package mutating func unlock(with roots: RootKeys) throws(CofferError) {
        var derived = [SecureBytes?](repeating: nil, count: Slot.count)
        var purposes = [SecureBytes?](repeating: nil, count: PurposeSlot.count)
        do {
            for slot in Slot.all {
                let classKey = try HKDF.deriveKey(from: roots.root(slot.scope), label: slot.level.label)
                derived[slot.index] = classKey
                for purpose in KeyPurpose.allCases where purpose.levels.contains(slot.level) {
                    purposes[PurposeSlot(purpose: purpose, slot: slot).index] = try HKDF.deriveKey(
                        from: classKey,
                        label: purpose.label
                    )
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
    package mutating func lock() {
        roots = nil
        for slot in Slot.all where slot.level == .whenUnlocked { classKeys[slot.index] = nil }
        for slot in PurposeSlot.all where slot.slot.level == .whenUnlocked { purposeKeys[slot.index] = nil }
    }

    /// Drops every key.
    package mutating func clear() {
        roots = nil
        classKeys = [SecureBytes?](repeating: nil, count: Slot.count)
        purposeKeys = [SecureBytes?](repeating: nil, count: PurposeSlot.count)
    }

    /// Every key held, with the level it belongs to (`nil` for the roots): what ``lock()`` and
    /// ``clear()`` are to destroy, listed so tests can watch them go.
    package var heldKeys: [(level: ProtectionLevel?, key: SecureBytes)] {
        let rootKeys = roots.map { [$0.device, $0.sync] } ?? []
        return rootKeys.map { (nil, $0) }
            + Slot.all.compactMap { slot in classKeys[slot.index].map { (slot.level, $0) } }
            + PurposeSlot.all.compactMap { slot in purposeKeys[slot.index].map { (slot.slot.level, $0) } }
    }

    /// The working key for `purpose` in `scope` at `level`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory.
    package func key(
        _ purpose: KeyPurpose,
        _ scope: KeyScope,
        _ level: ProtectionLevel
    ) throws(CofferError) -> SecureBytes {
        guard let key = purposeKeys[PurposeSlot(purpose: purpose, slot: Slot(scope: scope, level: level)).index] else {
            throw lockedError(level)
        }
        return key
    }

    /// The class key for `scope` and `level`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when the vault is locked and the key is of a
    ///   level that is not available then.
    package func classKey(_ scope: KeyScope, _ level: ProtectionLevel) throws(CofferError) -> SecureBytes {
        guard let key = classKeys[Slot(scope: scope, level: level).index] else { throw lockedError(level) }
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
