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
        case .completeUnlessOpen: return "coffer/v1/class/complete-unless-open"
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

    /// Whether the purpose seals records, so that each key epoch has its own key for it. The others
    /// name things (item ids, chunk ids, blob names, chunk boundaries) and stay those of the original
    /// epoch, so a record keeps its id in every epoch and across the devices of a group.
    package var isSealing: Bool {
        switch self {
        case .item, .chunkSeal, .manifest: return true
        case .index, .chunkID, .blobName, .gear: return false
        }
    }

    /// The protection levels this purpose has a key for.
    package var levels: [ProtectionLevel] {
        switch self {
        case .item, .chunkID, .chunkSeal, .manifest: return ProtectionLevel.symmetricLevels
        case .index, .blobName, .gear: return [.afterFirstUnlock]
        }
    }
}

/// The root keys of a vault, present only while it is unlocked.
///
/// The device scope may have several generations (``DeviceGenerations``): `coffer rekey` moves the
/// device-bound records to a fresh root. Naming keys and the original generation's sealing keys
/// always come from the original device root; the passphrase and the recovery key wrap the current
/// one, which also seals the vault's own secrets (device keys, group keys, the recovery key).
package struct RootKeys: Sendable {
    /// The current device generation's root: what the passphrase and the recovery key wrap.
    package let device: SecureBytes
    /// The device generation ``device`` is the root of (``KeyEpoch/original`` until a rekey).
    package let deviceGeneration: KeyEpoch
    /// The original device root.
    package let originalDevice: SecureBytes
    /// The device generations other than the original, and the one new device-bound records are
    /// sealed in (a rekey in progress's, during one).
    package let deviceEpochs: EpochRoots
    /// The sync root (the sync group's original epoch key).
    package private(set) var sync: SecureBytes

    /// The roots of a vault whose device root was never rekeyed.
    package init(device: SecureBytes, sync: SecureBytes) {
        self.init(device: device, generations: DeviceGenerations(), sync: sync)
    }

    /// The roots of a vault whose current device root is `device`, with the generations stored
    /// beside it.
    package init(device: SecureBytes, generations: DeviceGenerations, sync: SecureBytes) {
        self.device = device
        self.deviceGeneration = generations.current
        self.originalDevice = generations.original ?? device
        self.deviceEpochs = generations.epochRoots(currentRoot: device)
        self.sync = sync
    }

    /// The same roots with another sync root (a vault that just joined a group by approval).
    package func replacingSync(_ root: SecureBytes) -> RootKeys {
        var copy = self
        copy.sync = root
        return copy
    }

    /// The original root of `scope`, which the class keys of its original epoch come from.
    package func root(_ scope: KeyScope) -> SecureBytes { scope == .device ? originalDevice : sync }

    /// The root of `scope` the passphrase and the recovery key wrap: the current device generation's,
    /// or the sync root.
    package func wrappedRoot(_ scope: KeyScope) -> SecureBytes { scope == .device ? device : sync }

    /// Makes two fresh random roots.
    package static func generate() -> RootKeys { RootKeys(device: .random(count: 32), sync: .random(count: 32)) }
}

/// The roots of one scope's later key epochs (``KeyEpoch``), and which epoch new records of the scope
/// are sealed in. A sync group starts a new epoch at every revocation and rotation; the original
/// epoch's root is the scope's root in ``RootKeys``.
package struct EpochRoots: Sendable {
    /// Roots of epochs other than the original, by epoch.
    package var roots: [KeyEpoch: SecureBytes]
    /// The epoch new records are sealed in.
    package var current: KeyEpoch

    package init(roots: [KeyEpoch: SecureBytes] = [:], current: KeyEpoch = .original) {
        self.roots = roots
        self.current = current
    }
}

/// The keys a vault holds in memory, by protection level.
///
/// Protection-class keys are derived from the roots with HKDF, one per (scope, level). A
/// `whenUnlocked` key cannot be computed from an `afterFirstUnlock` key, so dropping the roots and
/// the `whenUnlocked` keys at `lock()` really makes `whenUnlocked` data unreadable while the
/// `afterFirstUnlock` data stays available. Dropped keys are wiped by ``SecureBytes`` as soon as no
/// operation still holds them.
///
/// Each later key epoch of a scope has class keys and sealing keys (``KeyPurpose/isSealing``) of
/// its own, derived the same way from that epoch's root; naming keys always come from the original
/// roots.
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
    /// The keys of later epochs, by scope and epoch; empty for a vault whose scopes never left the
    /// original epoch.
    private var epochKeys: [EpochSlot: EpochKeys] = [:]
    /// The roots of later epochs while unlocked.
    private var epochRoots: [EpochSlot: SecureBytes] = [:]
    /// The epoch new records of each scope are sealed in, by `scope == .device ? 0 : 1`.
    private var currentEpochs: [KeyEpoch] = [.original, .original]

    private struct Slot {
        package let scope: KeyScope
        package let level: ProtectionLevel

        package static let count = KeyScope.allCases.count * ProtectionLevel.symmetricLevels.count
        package static let all = KeyScope.allCases.flatMap { scope in
            ProtectionLevel.symmetricLevels.map { Slot(scope: scope, level: $0) }
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

    private struct EpochSlot: Hashable {
        let scope: KeyScope
        let epoch: KeyEpoch
    }

    /// One later epoch's class and sealing keys, by level and by (sealing purpose, level).
    private struct EpochKeys {
        var classKeys: [ProtectionLevel: SecureBytes]
        var purposeKeys: [KeyPurpose: [ProtectionLevel: SecureBytes]]

        init(root: SecureBytes) throws(CryptoError) {
            classKeys = [:]
            purposeKeys = [:]
            for level in ProtectionLevel.symmetricLevels {
                let classKey = try HKDF.deriveKey(from: root, label: level.label)
                classKeys[level] = classKey
                for purpose in KeyPurpose.allCases where purpose.isSealing && purpose.levels.contains(level) {
                    purposeKeys[purpose, default: [:]][level] = try HKDF.deriveKey(from: classKey, label: purpose.label)
                }
            }
        }

        mutating func lock() {
            classKeys[.whenUnlocked] = nil
            for purpose in purposeKeys.keys { purposeKeys[purpose]?[.whenUnlocked] = nil }
        }

        var all: [(ProtectionLevel, SecureBytes)] {
            classKeys.map { ($0.key, $0.value) } + purposeKeys.values.flatMap { $0.map { ($0.key, $0.value) } }
        }
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
        try install(roots.deviceEpochs, for: .device)
    }

    /// Installs the later epochs of `scope` (replacing those held) and derives their keys.
    package mutating func install(_ epochs: EpochRoots, for scope: KeyScope) throws(CofferError) {
        var keys: [EpochSlot: EpochKeys] = epochKeys.filter { $0.key.scope != scope }
        var roots = epochRoots.filter { $0.key.scope != scope }
        do {
            for (epoch, root) in epochs.roots where !epoch.isOriginal {
                let slot = EpochSlot(scope: scope, epoch: epoch)
                keys[slot] = try EpochKeys(root: root)
                roots[slot] = root
            }
        } catch {
            throw CofferError(.internalError, "deriving a key epoch's keys failed: \(error)", underlying: error)
        }
        guard epochs.current.isOriginal || roots[EpochSlot(scope: scope, epoch: epochs.current)] != nil else {
            throw CofferError(
                .internalError,
                "the current key epoch \(epochs.current) of the \(scope.name) keys has no root"
            )
        }
        epochKeys = keys
        epochRoots = roots
        currentEpochs[scope == .device ? 0 : 1] = epochs.current
    }

    /// The epoch that stands for "no group key yet", in a vault waiting for approval to join a group:
    /// never held, so nothing syncable can be sealed.
    private static let awaitingJoin = KeyEpoch(id: .max)

    /// Marks the sync scope as waiting for a group to join: syncable records cannot be sealed until
    /// ``install(_:for:)`` brings the group's keys.
    package mutating func awaitJoin() {
        epochKeys = epochKeys.filter { $0.key.scope != .sync }
        epochRoots = epochRoots.filter { $0.key.scope != .sync }
        currentEpochs[1] = Self.awaitingJoin
    }

    /// Whether the vault waits for approval to join a sync group.
    package var isAwaitingJoin: Bool { currentEpochs[1] == Self.awaitingJoin }

    /// Drops the roots and the `whenUnlocked` keys; `afterFirstUnlock` keys stay.
    package mutating func lock() {
        roots = nil
        epochRoots = [:]
        for slot in Slot.all where slot.level == .whenUnlocked { classKeys[slot.index] = nil }
        for slot in PurposeSlot.all where slot.slot.level == .whenUnlocked { purposeKeys[slot.index] = nil }
        for slot in epochKeys.keys { epochKeys[slot]?.lock() }
    }

    /// Drops every key.
    package mutating func clear() {
        roots = nil
        classKeys = [SecureBytes?](repeating: nil, count: Slot.count)
        purposeKeys = [SecureBytes?](repeating: nil, count: PurposeSlot.count)
        epochKeys = [:]
        epochRoots = [:]
    }

    /// Every key held, with the level it belongs to (`nil` for the roots): what ``lock()`` and
    /// ``clear()`` are to destroy, listed so tests can watch them go.
    package var heldKeys: [(level: ProtectionLevel?, key: SecureBytes)] {
        let rootKeys = roots.map { [$0.device, $0.originalDevice, $0.sync] } ?? []
        return rootKeys.map { (nil, $0) } + epochRoots.values.map { (nil, $0) }
            + Slot.all.compactMap { slot in classKeys[slot.index].map { (slot.level, $0) } }
            + PurposeSlot.all.compactMap { slot in purposeKeys[slot.index].map { (slot.slot.level, $0) } }
            + epochKeys.values.flatMap { $0.all.map { (Optional($0.0), $0.1) } }
    }

    /// The epoch new records of `scope` are sealed in.
    package func currentEpoch(_ scope: KeyScope) -> KeyEpoch { currentEpochs[scope == .device ? 0 : 1] }

    /// The later epochs of `scope` whose keys are held.
    package func epochs(_ scope: KeyScope) -> [KeyEpoch] {
        epochKeys.keys.filter { $0.scope == scope }.map(\.epoch).sorted()
    }

    /// The root of `epoch` in `scope`, while unlocked.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when locked, `.keyUnavailable` when the
    ///   epoch is not held.
    package func root(_ scope: KeyScope, epoch: KeyEpoch) throws(CofferError) -> SecureBytes {
        guard let roots else {
            throw CofferError(.interactionNotAllowed, "the vault is locked; unlock it with its passphrase first")
        }
        if epoch.isOriginal { return roots.root(scope) }
        guard let root = epochRoots[EpochSlot(scope: scope, epoch: epoch)] else {
            throw Self.unavailable(epoch, scope)
        }
        return root
    }

    /// The working key for `purpose` in `scope` at `level`: for a sealing purpose, that of the
    /// current epoch (what new records are sealed with).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory.
    package func key(
        _ purpose: KeyPurpose,
        _ scope: KeyScope,
        _ level: ProtectionLevel
    ) throws(CofferError) -> SecureBytes {
        try Self.refuseSealedToClassKey(level)
        let current = currentEpochs[scope == .device ? 0 : 1]
        if !current.isOriginal && purpose.isSealing { return try key(purpose, scope, level, epoch: current) }
        guard let key = purposeKeys[PurposeSlot(purpose: purpose, slot: Slot(scope: scope, level: level)).index] else {
            throw lockedError(level)
        }
        return key
    }

    /// The working key for `purpose` in `scope` at `level` in `epoch` (naming purposes have one key
    /// for every epoch).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when that level's keys are not in memory,
    ///   `.keyUnavailable` when this vault does not hold the epoch.
    package func key(
        _ purpose: KeyPurpose,
        _ scope: KeyScope,
        _ level: ProtectionLevel,
        epoch: KeyEpoch
    ) throws(CofferError) -> SecureBytes {
        try Self.refuseSealedToClassKey(level)
        guard !epoch.isOriginal, purpose.isSealing else {
            guard let key = purposeKeys[PurposeSlot(purpose: purpose, slot: Slot(scope: scope, level: level)).index]
            else {
                throw lockedError(level)
            }
            return key
        }
        guard let keys = epochKeys[EpochSlot(scope: scope, epoch: epoch)] else { throw Self.unavailable(epoch, scope) }
        guard let key = keys.purposeKeys[purpose]?[level] else { throw lockedError(level) }
        return key
    }

    /// The class key for `scope` and `level` of the original epoch.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when the vault is locked and the key is of a
    ///   level that is not available then.
    package func classKey(_ scope: KeyScope, _ level: ProtectionLevel) throws(CofferError) -> SecureBytes {
        try Self.refuseSealedToClassKey(level)
        guard let key = classKeys[Slot(scope: scope, level: level).index] else { throw lockedError(level) }
        return key
    }

    /// The private half of the `completeUnlessOpen` class key pair of `scope` in `epoch`, derived from
    /// that epoch's root, so it exists only while the vault is unlocked (``lock()`` drops the roots).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while locked, `.keyUnavailable` for an epoch
    ///   not held.
    package func writeClassPrivateKey(_ scope: KeyScope, epoch: KeyEpoch) throws(CofferError) -> X25519PrivateKey {
        let root = try root(scope, epoch: epoch)
        do {
            return try X25519PrivateKey(
                secret: try HKDF.deriveKey(from: root, label: ProtectionLevel.completeUnlessOpen.label)
            )
        } catch {
            throw CofferError(.internalError, "deriving the write class key failed: \(error)", underlying: error)
        }
    }

    /// `completeUnlessOpen` has no symmetric keys in the ring: its records are opened with keys agreed
    /// per write (``WriteKeys``). Asking for one is a programming error, refused rather than answered
    /// with another level's key.
    private static func refuseSealedToClassKey(_ level: ProtectionLevel) throws(CofferError) {
        guard !level.isSealedToClassKey else {
            throw CofferError(
                .internalError,
                "completeUnlessOpen records are sealed with keys agreed per write, not with the key ring's keys"
            )
        }
    }

    private static func unavailable(_ epoch: KeyEpoch, _ scope: KeyScope) -> CofferError {
        if epoch == awaitingJoin {
            return CofferError(
                .keyUnavailable,
                "this vault is waiting for approval to join a sync group, so it cannot hold syncable records yet; once a member approves its join request (\(InterfaceName.approve)), import a bundle from that member (\(InterfaceName.importBundle)) or pull from the group's remote. Device-bound records work now"
            )
        }
        return CofferError(
            .keyUnavailable,
            scope == .sync
                ? "the record was sealed in key epoch \(epoch) of the sync group, which this device does not hold: it was revoked before that epoch began, or has not received the epoch yet (import a newer bundle from a member)"
                : "the record was sealed under device key generation \(epoch), which this vault does not hold; the vault is damaged"
        )
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
