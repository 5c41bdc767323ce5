public import Foundation
internal import Glibc

/// A Coffer vault: one LMDB environment in a directory, its keys wrapped under a passphrase.
///
/// A vault is created unlocked; opened, it starts locked and ``unlock(passphrase:)-2ddnl`` brings its keys
/// into memory. ``lock()`` drops the keys of `whenUnlocked` data; ``close()`` drops every key and
/// closes the files. `Vault` is `Sendable`: share one instance between threads and tasks.
///
/// ```swift
/// let vault = try Vault.create(at: URL(fileURLWithPath: "/tmp/demo"), passphrase: "correct horse")
/// let recovery = try vault.recoveryKey()   // write recovery.text down
/// vault.close()
///
/// let again = try Vault.open(at: URL(fileURLWithPath: "/tmp/demo"))
/// try again.unlock(passphrase: "correct horse")
/// ```
public final class Vault: Sendable {
    /// The vault's directory.
    public let directory: URL
    /// The options the vault was opened with.
    public let configuration: Configuration

    package let environment: Environment
    package let schema: Schema
    /// The vault's identity; only a re-enrolment (``adoptDeviceID(_:)``) changes it, its device id.
    package var identity: VaultIdentity { identityBox.withLock { $0 } }
    private let identityBox: Locked<VaultIdentity>
    private let state: Locked<State>
    private let autoLock: AutoLock?
    /// What the tiers keep per open vault (``VaultAttachment``).
    let attachments = VaultAttachments()
    /// The streams of ``lockStates()``, told of each change under the state lock.
    let lockObservers: LockStateObservers

    private struct State: Sendable {
        var keys = KeyRing()
        var isClosed = false
        /// The sync group: fixed at creation, except for a vault that joins one by approval.
        var syncGroupID: UUID
    }

    /// A vault over an environment just created or opened (``create(at:passphrase:configuration:)``,
    /// ``open(at:configuration:)``), with `keys` unlocked or not.
    init(
        directory: URL,
        configuration: Configuration,
        environment: Environment,
        schema: Schema,
        identity: VaultIdentity,
        keys: KeyRing
    ) {
        self.directory = directory
        self.configuration = configuration
        self.environment = environment
        self.schema = schema
        self.identityBox = Locked(identity)
        self.state = Locked(State(keys: keys, syncGroupID: identity.syncGroupID))
        self.autoLock = configuration.autoLockInterval.map(AutoLock.init(interval:))
        self.lockObservers = LockStateObservers(keys.isUnlocked ? .unlocked : .locked)
        if keys.isUnlocked { startAutoLock() }
    }

    deinit {
        autoLock?.stop()
        schema.offloadedChunks?.finish()
        environment.close()
    }

    // MARK: Identity

    /// The vault's random id, fixed at creation.
    public var id: UUID { identity.vaultID }
    /// This machine's id for the vault, fixed at creation; it tells sync peers apart.
    public var deviceID: UUID { identity.deviceID }
    /// Takes `deviceID` as this machine's id for the vault, once a re-enrolment as a new device of its
    /// sync group has stored it (meta `device-id`, with the new device keys) and committed.
    package func adoptDeviceID(_ deviceID: UUID) {
        identityBox.withLock {
            $0 = VaultIdentity(
                formatVersion: $0.formatVersion,
                vaultID: $0.vaultID,
                deviceID: deviceID,
                syncGroupID: $0.syncGroupID,
                createdAt: $0.createdAt
            )
        }
    }
    /// The id of the sync group the vault belongs to; vaults of one group share its group keys. A
    /// vault waiting for approval to join a group has a placeholder id until it joins.
    public var syncGroupID: UUID { state.withLock { $0.syncGroupID } }
    /// The on-disk format version of the vault.
    public var formatVersion: Int { Int(identity.formatVersion) }
    /// When the vault was created.
    public var createdAt: Date { identity.createdAt }

    /// Whether the vault is locked (its passphrase-protected keys are not in memory).
    public var isLocked: Bool { state.withLock { !$0.keys.isUnlocked } }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: Lock and unlock

    /// Unlocks the vault with its passphrase: derives the key-encryption key (scrypt, deliberately
    /// slow) and opens the wrapped roots. Unlocking an unlocked vault checks the passphrase again.
    ///
    /// - Throws: ``CofferError`` `.authFailed` if the passphrase is wrong (nothing changes), `.closed`
    ///   after ``close()``, `.decode` if the key records are damaged.
    public func unlock(passphrase: Passphrase) throws(CofferError) {
        try checkOpen()
        let record = try readMeta(MetaKey.kdf)
        let kdf = try KDFRecord(decoding: record)
        let kek = try kdf.keyEncryptionKey(for: passphrase)
        guard let roots = try unwrapRoots(under: kek, by: .passphrase) else {
            throw CofferError(.authFailed, "the passphrase is wrong; the vault stays locked")
        }
        try installRoots(roots)
        // Best effort: a vault on read-only media still unlocks.
        try? refreshJoinBlock(kdf: kdf, kek: kek)
    }

    /// Locks the vault: the roots and the keys of `whenUnlocked` data are dropped and wiped; keys of
    /// `afterFirstUnlock` data stay until ``close()``. Locking a locked vault does nothing.
    public func lock() {
        lock(as: .locked)
    }

    /// Locks the vault and reports `reported` (``LockState/locked`` or ``LockState/autoLocked``) to
    /// ``lockStates()`` if it was unlocked.
    private func lock(as reported: LockState) {
        autoLock?.stop()
        state.withLock { state in
            let wasUnlocked = state.keys.isUnlocked
            state.keys.lock()
            if wasUnlocked, !state.isClosed { lockObservers.publish(reported) }
        }
        // Tiers may hold what they derived from whenUnlocked keys (pooled OpenSSL contexts).
        for attachment in attachments.all { attachment.vaultDidLock() }
    }

    /// Closes the vault: drops and wipes every key and closes the files once operations in progress
    /// end. Later calls fail with ``CofferError/Code/closed``. Closing twice is harmless.
    public func close() {
        autoLock?.stop()
        for attachment in attachments.all { attachment.vaultWillClose() }
        schema.offloadedChunks?.finish()
        state.withLock {
            $0.keys.clear()
            $0.isClosed = true
            lockObservers.publish(.closed)
        }
        environment.close()
    }

    // MARK: Internals shared by the vault's extensions

    package func checkOpen() throws(CofferError) {
        if isClosed { throw CofferError(.closed, "the vault is closed; open it again") }
    }

    /// The current roots, or `.interactionNotAllowed` when locked.
    package func unlockedRoots() throws(CofferError) -> RootKeys {
        try checkOpen()
        guard let roots = state.withLock({ $0.keys.roots }) else {
            throw CofferError(.interactionNotAllowed, "the vault is locked; unlock it with its passphrase first")
        }
        return roots
    }

    /// The class key for `scope` and `level`, or `.interactionNotAllowed` when it is not in memory.
    package func classKey(_ scope: KeyScope, _ level: ProtectionLevel) throws(CofferError) -> SecureBytes {
        try checkOpen()
        let keys = state.withLock { $0.keys }
        return try keys.classKey(scope, level)
    }

    package func installRoots(_ roots: RootKeys) throws(CofferError) {
        let epochs = try storedEpochs(deviceRoot: roots.device)
        try state.withLock { (state) throws(CofferError) in
            guard !state.isClosed else { throw CofferError(.closed, "the vault is closed; open it again") }
            try state.keys.unlock(with: roots)
            lockObservers.publish(.unlocked)
            if let epochs {
                try state.keys.install(epochs, for: .sync)
            } else {
                state.keys.awaitJoin()
            }
        }
        startAutoLock()
        // Best effort: a vault on read-only media still unlocks.
        try? publishWriteKeys(allowingWriteOnlyClients: nil)
        try? schema.ensureJournal(in: environment)
        try? schema.ensureChunkPacks(in: environment)
    }

    /// Drops what the tiers derived from the keys (pooled contexts), after the keys they were made
    /// from were replaced.
    package func dropDerivedContexts() {
        for attachment in attachments.all { attachment.vaultDidLock() }
    }

    /// Installs the sync group's epochs after a change to them (a revocation, a rotation, an import
    /// that brought a new epoch, a join), and the group id when it changed.
    package func installGroupKeys(_ epochs: EpochRoots, group: UUID) throws(CofferError) {
        try state.withLock { (state) throws(CofferError) in
            guard !state.isClosed else { throw CofferError(.closed, "the vault is closed; open it again") }
            try state.keys.install(epochs, for: .sync)
            state.syncGroupID = group
        }
        try? publishWriteKeys(allowingWriteOnlyClients: nil)
    }

    private func startAutoLock() {
        autoLock?.start(action: { [weak self] in self?.lock(as: .autoLocked) })
    }

    /// One key in memory now, without copying the ring: for a single read that needs one or two keys
    /// (a password read), where copying the whole ring costs more than the lookup. Records activity
    /// for auto-lock.
    ///
    /// - Throws: ``CofferError`` `.closed`, or `.interactionNotAllowed` when the key is not in memory.
    package func key(
        _ purpose: KeyPurpose,
        _ scope: KeyScope,
        _ level: ProtectionLevel
    ) throws(CofferError) -> SecureBytes {
        try withKeys { (keys) throws(CofferError) in try keys.key(purpose, scope, level) }
    }

    /// ``key(_:_:_:)`` in `epoch`, for opening a record sealed in it.
    package func key(
        _ purpose: KeyPurpose,
        _ scope: KeyScope,
        _ level: ProtectionLevel,
        epoch: KeyEpoch
    ) throws(CofferError) -> SecureBytes {
        try withKeys { (keys) throws(CofferError) in try keys.key(purpose, scope, level, epoch: epoch) }
    }

    /// Runs `body` with the keys in memory, under the state lock, unless the vault is closed.
    /// Records activity for auto-lock.
    private func withKeys<R: Sendable>(_ body: (KeyRing) throws(CofferError) -> R) throws(CofferError) -> R {
        autoLock?.touch()
        return try state.withLock { (state) throws(CofferError) -> R in
            guard !state.isClosed else { throw CofferError(.closed, "the vault is closed; open it again") }
            return try body(state.keys)
        }
    }

    /// The keys in memory now, for one operation: a snapshot, so a concurrent `lock()` never takes a
    /// key away mid-operation. Records activity for auto-lock.
    package func keyRing() throws(CofferError) -> KeyRing {
        try withKeys { $0 }
    }

    /// Writes `entries` to the `meta` table in one transaction: all of them or none.
    package static func writeMeta(
        _ entries: [(String, [UInt8])],
        to environment: Environment,
        schema: Schema,
        while action: String
    ) throws(CofferError) {
        try storage(action) {
            try environment.write { txn in
                for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
            }
        }
    }

    /// A meta entry, or `nil` when the vault has none of that name.
    package func readMetaIfPresent(_ name: String) throws(CofferError) -> [UInt8]? {
        try storage("reading the vault's keys") {
            try environment.read { txn in try txn.get(schema.meta, key: Array(name.utf8)) }
        }
    }

    package func readMeta(_ name: String) throws(CofferError) -> [UInt8] {
        let value = try storage("reading the vault's keys") {
            try environment.read { txn in try txn.get(schema.meta, key: Array(name.utf8)) }
        }
        guard let value else { throw CofferError(.decode, "the vault is damaged: meta \"\(name)\" is missing") }
        return value
    }

    /// Copies of the `meta` entries named `names` that exist, read in one transaction (so that
    /// entries written together are seen together).
    package func readMetaEntries(_ names: [String]) throws(CofferError) -> [String: [UInt8]] {
        let schema = schema
        return try storage("reading the vault's keys") {
            try environment.read { txn in
                var entries: [String: [UInt8]] = [:]
                for name in names { entries[name] = try txn.get(schema.meta, key: Array(name.utf8)) }
                return entries
            }
        }
    }

    /// Opens the wrapped roots under `kek`, with the device root's generations; `nil` if the device
    /// root does not authenticate (the wrong passphrase or recovery key). Everything is read in one
    /// transaction, so a rekey ending meanwhile is seen whole or not at all.
    package func unwrapRoots(under kek: SecureBytes, by unlocker: MetaKey.Unlocker) throws(CofferError) -> RootKeys? {
        let deviceName = MetaKey.wrappedRoot(.device, by: unlocker)
        let syncName = MetaKey.wrappedRoot(.sync, by: unlocker)
        let meta = try readMetaEntries([deviceName, syncName, GroupKeys.metaKey] + DeviceGenerations.Meta.all)
        guard let wrappedDevice = meta[deviceName] else {
            throw CofferError(.decode, "the vault is damaged: meta \"\(deviceName)\" is missing")
        }
        guard let device = try KeyWrap.unwrap(wrappedDevice, under: kek, vaultID: id, name: deviceName) else {
            return nil
        }
        let generations = try DeviceGenerations(meta: meta, root: device, vaultID: id)
        guard let wrappedSync = meta[syncName] else {
            // A vault that joined by approval keeps the group's keys under the device root only; one
            // still waiting for approval has none yet (a placeholder stands in, never used to seal).
            let stored = try meta[GroupKeys.metaKey].map { (sealed) throws(CofferError) in
                try GroupKeys.store.open(sealed, under: device, vaultID: id)
            }
            return RootKeys(device: device, generations: generations, sync: stored?[.original] ?? .random(count: 32))
        }
        guard let sync = try KeyWrap.unwrap(wrappedSync, under: kek, vaultID: id, name: syncName) else {
            throw CofferError(
                .decode,
                "the vault is damaged: meta \"\(syncName)\" does not open with a key that opens \"\(deviceName)\""
            )
        }
        return RootKeys(device: device, generations: generations, sync: sync)
    }
}
