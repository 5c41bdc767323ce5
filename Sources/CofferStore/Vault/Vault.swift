public import Foundation
internal import Glibc

/// A Coffer vault: one LMDB environment in a directory, its keys wrapped under a passphrase.
///
/// A vault is created unlocked; opened, it starts locked and ``unlock(passphrase:)`` brings its keys
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
    package let identity: VaultIdentity
    private let state: Locked<State>
    private let autoLock: AutoLock?
    /// What the tiers keep per open vault (``VaultAttachment``).
    let attachments = VaultAttachments()

    private struct State: Sendable {
        package var keys = KeyRing()
        package var isClosed = false
    }

    private init(
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
        self.identity = identity
        self.state = Locked(State(keys: keys))
        self.autoLock = configuration.autoLockInterval.map(AutoLock.init(interval:))
        if keys.isUnlocked { startAutoLock() }
    }

    deinit {
        autoLock?.stop()
        environment.close()
    }

    // MARK: Identity

    /// The vault's random id, fixed at creation.
    public var id: UUID { identity.vaultID }
    /// This machine's id for the vault, fixed at creation; it tells sync peers apart.
    public var deviceID: UUID { identity.deviceID }
    /// The id of the sync group the vault belongs to; vaults of one group share the sync root.
    public var syncGroupID: UUID { identity.syncGroupID }
    /// The on-disk format version of the vault.
    public var formatVersion: Int { Int(identity.formatVersion) }
    /// When the vault was created.
    public var createdAt: Date { identity.createdAt }

    /// Whether the vault is locked (its passphrase-protected keys are not in memory).
    public var isLocked: Bool { state.withLock { !$0.keys.isUnlocked } }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: Create and open

    /// Creates a vault in `directory`, which must be absent or empty, and returns it unlocked.
    ///
    /// Creation makes two random 256-bit roots (the device root, which never leaves this machine, and
    /// the sync root, shared with sync peers) and a recovery key, and stores the roots wrapped under a
    /// key derived from `passphrase` with scrypt, and again under the recovery key. The directory gets
    /// mode 0700 and the files mode 0600. If anything fails, nothing is left behind.
    ///
    /// - Parameters:
    ///   - directory: Where the vault lives; created (with parents) if missing.
    ///   - passphrase: The passphrase; must not be empty.
    ///   - configuration: KDF cost and storage options.
    /// - Returns: The new vault, unlocked.
    /// - Throws: ``CofferError`` `.param` for an empty passphrase or bad KDF parameters, `.vaultExists`
    ///   if `directory` holds a vault or other files, `.io` if it cannot be created.
    public static func create(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration()
    ) throws(CofferError) -> Vault {
        try create(at: directory, passphrase: passphrase, configuration: configuration, joining: nil)
    }

    /// Creates a vault, in a new sync group or in `group`; if anything fails, nothing is left behind.
    package static func create(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration,
        joining group: JoinedGroup?
    ) throws(CofferError) -> Vault {
        try createAtomically(at: directory, passphrase: passphrase, configuration: configuration, joining: group) {
            _ throws(CofferError) in
        }.vault
    }

    /// Creates a vault and fills it (`fill`: an import, for a vault joining a group) in a staging
    /// directory beside `directory`, then renames it into place: a vault directory exists only once
    /// complete, so a creation killed at any moment leaves no half-made vault (only the hidden
    /// staging directory, which the next creation there removes).
    package static func createAtomically<Filled>(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration,
        joining group: JoinedGroup?,
        fill: (Vault) throws(CofferError) -> Filled
    ) throws(CofferError) -> (vault: Vault, filled: Filled) {
        guard !passphrase.isEmpty else {
            throw CofferError(.param, "the passphrase is empty; choose a passphrase to protect the vault")
        }
        try configuration.kdf.validate()
        try checkEmptyTarget(directory)
        let staging = try makeStagingDirectory(for: directory)
        do throws(CofferError) {
            let building = try createContents(
                in: staging,
                passphrase: passphrase,
                configuration: configuration,
                joining: group
            )
            let filled: Filled
            let roots: RootKeys
            do throws(CofferError) {
                filled = try fill(building)
                roots = try building.unlockedRoots()
            } catch {
                building.close()
                throw error
            }
            building.close()
            try moveIntoPlace(staging, directory)
            let vault = try open(at: directory, configuration: configuration)
            try vault.installRoots(roots)
            return (vault, filled)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// A sync group a new vault joins: its id and its sync root (from a bundle's join block).
    package struct JoinedGroup {
        package let id: UUID
        package let syncRoot: SecureBytes

        package init(id: UUID, syncRoot: SecureBytes) {
            self.id = id
            self.syncRoot = syncRoot
        }
    }

    private static func createContents(
        in directory: URL,
        passphrase: Passphrase,
        configuration: Configuration,
        joining group: JoinedGroup?
    ) throws(CofferError) -> Vault {
        var options = Environment.Options(createIfMissing: true, initialMapSize: configuration.initialMapSize)
        options.createIfMissing = true
        let environment = try storage("creating the vault") { try Environment(directory: directory, options: options) }
        do {
            let schema = try storage("creating the vault's tables") {
                try Schema(environment: environment, create: true)
            }
            let identity = VaultIdentity(
                formatVersion: Schema.formatVersion,
                vaultID: UUID(),
                deviceID: UUID(),
                syncGroupID: group?.id ?? UUID(),
                createdAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
            )
            let roots = group.map { RootKeys(device: .random(count: 32), sync: $0.syncRoot) } ?? RootKeys.generate()
            let recovery = RecoveryKey.generate()
            let kdf = KDFRecord(parameters: configuration.kdf)
            let passphraseKEK = try kdf.keyEncryptionKey(for: passphrase)
            let recoveryKEK = try recoveryKeyEncryptionKey(recovery, vaultID: identity.vaultID)

            var entries: [(String, [UInt8])] = [
                (MetaKey.format, withUnsafeBytes(of: identity.formatVersion.bigEndian) { Array($0) }),
                (MetaKey.vaultID, identity.vaultID.bytes),
                (MetaKey.deviceID, identity.deviceID.bytes),
                (MetaKey.syncGroupID, identity.syncGroupID.bytes),
                (
                    MetaKey.createdAt,
                    withUnsafeBytes(of: Int64(identity.createdAt.timeIntervalSince1970 * 1000).bigEndian) { Array($0) }
                ),
                (MetaKey.kdf, kdf.encoded),
                (MetaKey.recoveryEscrow, try escrow(recovery, roots: roots, vaultID: identity.vaultID)),
                (
                    JoinBlock.metaKey,
                    try JoinBlock(syncRoot: roots.sync, kdf: kdf, kek: passphraseKEK, syncGroupID: identity.syncGroupID)
                        .encoded
                ),
            ]
            for scope in KeyScope.allCases {
                for (unlocker, kek) in [(MetaKey.Unlocker.passphrase, passphraseKEK), (.recovery, recoveryKEK)] {
                    let name = MetaKey.wrappedRoot(scope, by: unlocker)
                    entries.append(
                        (name, try KeyWrap.wrap(roots.root(scope), under: kek, vaultID: identity.vaultID, name: name))
                    )
                }
            }
            try writeMeta(entries, to: environment, schema: schema, while: "writing the vault's keys")
            var keys = KeyRing()
            try keys.unlock(with: roots)
            return Vault(
                directory: directory,
                configuration: configuration,
                environment: environment,
                schema: schema,
                identity: identity,
                keys: keys
            )
        } catch {
            environment.close()
            throw error
        }
    }

    /// The name part that marks a staging directory (``createAtomically(at:passphrase:configuration:joining:fill:)``).
    private static let stagingMarker = ".coffer-creating-"

    /// Refuses a target that is a file, a vault or a directory with files in it (staging directories
    /// of creations that were killed aside, which go).
    private static func checkEmptyTarget(_ directory: URL) throws(CofferError) {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: directory.path, isDirectory: &isDirectory) else { return }
        guard isDirectory.boolValue else {
            throw CofferError(.vaultExists, "\(directory.path) is a file; choose a new directory for the vault")
        }
        removeDeadStaging(in: directory, prefix: stagingMarker)
        let contents = (try? files.contentsOfDirectory(atPath: directory.path)) ?? []
        if contents.contains("data.mdb") {
            throw CofferError(
                .vaultExists,
                "a vault already exists at \(directory.path); open it, or choose another directory"
            )
        }
        guard contents.isEmpty else {
            throw CofferError(.vaultExists, "\(directory.path) is not empty; a vault needs an empty or new directory")
        }
    }

    /// Removes the staging directories in `parent` named `prefix` ‖ pid ‖ … whose process is gone.
    private static func removeDeadStaging(in parent: URL, prefix: String) {
        let files = FileManager.default
        for name in (try? files.contentsOfDirectory(atPath: parent.path)) ?? [] where name.hasPrefix(prefix) {
            let pid = Int32(name.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
            if pid > 0, kill(pid, 0) != 0, errno == ESRCH {
                try? files.removeItem(at: parent.appendingPathComponent(name))
            }
        }
    }

    /// A new, empty, mode 0700 directory to build a vault in: inside `directory` when it exists (an
    /// empty directory, perhaps in a parent this user may not write), else beside it (creating its
    /// parents). Staging directories left by creations that were killed are removed first.
    private static func makeStagingDirectory(for directory: URL) throws(CofferError) -> URL {
        let files = FileManager.default
        let inside = files.fileExists(atPath: directory.path)
        let parent = inside ? directory : directory.deletingLastPathComponent()
        let prefix = inside ? stagingMarker : ".\(directory.lastPathComponent)\(stagingMarker)"
        if !inside {
            do {
                try files.createDirectory(at: parent, withIntermediateDirectories: true)
            } catch {
                throw CofferError(.io, "cannot create \(parent.path) for the vault: \(error.localizedDescription)")
            }
            removeDeadStaging(in: parent, prefix: prefix)
        }
        let staging = parent.appendingPathComponent(prefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        if case .failure(let error) = nothingOrErrno({ mkdir(staging.path, 0o700) }) {
            if error.isNoSpace {
                throw CofferError.wrapping(LMDBError(.noSpace, operation: "mkdir"), while: "creating the vault")
            }
            throw CofferError(.io, "cannot create the new vault in \(parent.path): \(error)")
        }
        chmod(staging.path, 0o700)  // whatever the umask
        return staging
    }

    /// Puts a finished staging directory in place as `directory`: renamed onto it when beside it; when
    /// inside it, its files moved up, `data.mdb` last (a directory without it is no vault), and the
    /// directory's mode set to 0700. The renames are flushed to disk.
    private static func moveIntoPlace(_ staging: URL, _ directory: URL) throws(CofferError) {
        func fail(_ what: String) -> CofferError {
            let error = Errno.current
            return CofferError(
                error.code == ENOTEMPTY || error.code == EEXIST ? .vaultExists : .io,
                "cannot move the new vault into \(directory.path) (\(what)): \(error)"
            )
        }
        let flushed: URL
        if staging.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path {
            for name in ["lock.mdb", SpaceReserve.fileName, "data.mdb"] {
                let source = staging.appendingPathComponent(name).path
                if name == SpaceReserve.fileName, access(source, F_OK) != 0 { continue }  // no room for one
                guard rename(source, directory.appendingPathComponent(name).path) == 0 else { throw fail(name) }
            }
            rmdir(staging.path)
            guard chmod(directory.path, 0o700) == 0 else { throw fail("setting its mode") }
            flushed = directory
        } else {
            guard rename(staging.path, directory.path) == 0 else { throw fail("renaming the directory") }
            flushed = directory.deletingLastPathComponent()
        }
        let descriptor = Glibc.open(flushed.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            Glibc.close(descriptor)
        }
    }

    /// Opens the vault in `directory`, locked. Nothing in the directory is changed, whatever the outcome.
    ///
    /// Reader slots left by crashed processes are cleared.
    ///
    /// - Throws: ``CofferError`` `.vaultNotFound` if there is no such directory, `.notAVault` if it
    ///   holds no vault or something else, `.unsupportedFormat` for a vault of a newer format, `.decode`
    ///   for a damaged one.
    public static func open(
        at directory: URL,
        configuration: Configuration = Configuration()
    ) throws(CofferError) -> Vault {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            throw CofferError(
                .vaultNotFound,
                "there is no vault at \(directory.path); create one with `coffer init` (or Vault.create)"
            )
        }
        guard isDirectory.boolValue else {
            throw CofferError(.notAVault, "\(directory.path) is a file, not a vault directory")
        }
        try refuseDamagedDataFile(in: directory)
        let environment: Environment
        do {
            environment = try Environment(
                directory: directory,
                options: Environment.Options(initialMapSize: configuration.initialMapSize)
            )
        } catch {
            switch error.code {
            case .noSuchFile:
                throw CofferError(
                    .notAVault,
                    "\(directory.path) is not a Coffer vault (it has no data.mdb); create one with `coffer init`",
                    underlying: error
                )
            case .invalid, .versionMismatch:
                throw CofferError(
                    .notAVault,
                    "\(directory.path) is not a Coffer vault (data.mdb is not a database Coffer can read)",
                    underlying: error
                )
            case .permissionDenied, .readOnlyFileSystem:
                throw CofferError(
                    .io,
                    "cannot open the vault at \(directory.path) for writing (\(error.code)): Coffer writes to its "
                        + "data.mdb and lock.mdb even to read (readers are recorded in lock.mdb); give this user "
                        + "write access to the directory and both files, or copy the vault somewhere writable",
                    underlying: error
                )
            default:
                throw CofferError.wrapping(error, while: "opening \(directory.path)")
            }
        }
        do {
            let (schema, identity) = try readIdentity(environment)
            return Vault(
                directory: directory,
                configuration: configuration,
                environment: environment,
                schema: schema,
                identity: identity,
                keys: KeyRing()
            )
        } catch {
            environment.closeAndRemoveCreatedFiles()
            throw error
        }
    }

    private static func readIdentity(_ environment: Environment) throws(CofferError) -> (Schema, VaultIdentity) {
        let notAVault = CofferError(
            .notAVault,
            "\(environment.directory.path) is an LMDB database but not a Coffer vault"
        )
        do {
            _ = try environment.openTables(["meta"], create: false)
        } catch LMDBError.Code.notFound {
            throw notAVault
        } catch {
            throw CofferError.wrapping(error, while: "opening the vault")
        }
        let schema: Schema
        do {
            schema = try Schema(environment: environment, create: false)
        } catch let error as LMDBError where error.code == .notFound {
            throw CofferError(
                .decode,
                "the vault is damaged: a table is missing (\(error.operation))",
                underlying: error
            )
        } catch {
            throw CofferError.wrapping(error, while: "opening the vault's tables")
        }
        let entries: [String: [UInt8]] = try storage("reading the vault's identity") {
            try environment.read { txn in
                var entries: [String: [UInt8]] = [:]
                for name in [MetaKey.format, MetaKey.vaultID, MetaKey.deviceID, MetaKey.syncGroupID, MetaKey.createdAt]
                {
                    entries[name] = try txn.get(schema.meta, key: Array(name.utf8))
                }
                return entries
            }
        }
        guard let formatBytes = entries[MetaKey.format] else { throw notAVault }
        guard formatBytes.count == 4 else {
            throw CofferError(.decode, "the vault is damaged: its format version record is \(formatBytes.count) bytes")
        }
        let version = formatBytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard version <= Schema.formatVersion else {
            throw CofferError(
                .unsupportedFormat,
                "the vault at \(environment.directory.path) has format version \(version), newer than this Coffer reads (\(Schema.formatVersion)); upgrade Coffer"
            )
        }
        guard version >= 1 else { throw CofferError(.decode, "the vault is damaged: format version \(version)") }
        func field(_ name: String) throws(CofferError) -> [UInt8] {
            guard let value = entries[name] else {
                throw CofferError(.decode, "the vault is damaged: meta \"\(name)\" is missing")
            }
            return value
        }
        var created = BinaryReader(try field(MetaKey.createdAt), what: "meta \"\(MetaKey.createdAt)\"")
        let milliseconds = try created.readInt64()
        try created.finish()
        let identity = VaultIdentity(
            formatVersion: version,
            vaultID: try UUID(storedBytes: try field(MetaKey.vaultID), what: MetaKey.vaultID),
            deviceID: try UUID(storedBytes: try field(MetaKey.deviceID), what: MetaKey.deviceID),
            syncGroupID: try UUID(storedBytes: try field(MetaKey.syncGroupID), what: MetaKey.syncGroupID),
            createdAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        )
        return (schema, identity)
    }

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
    }

    /// Locks the vault: the roots and the keys of `whenUnlocked` data are dropped and wiped; keys of
    /// `afterFirstUnlock` data stay until ``close()``. Locking a locked vault does nothing.
    public func lock() {
        autoLock?.stop()
        state.withLock { $0.keys.lock() }
        // Tiers may hold what they derived from whenUnlocked keys (pooled OpenSSL contexts).
        for attachment in attachments.all { attachment.vaultDidLock() }
    }

    /// Closes the vault: drops and wipes every key and closes the files once operations in progress
    /// end. Later calls fail with ``CofferError/Code/closed``. Closing twice is harmless.
    public func close() {
        autoLock?.stop()
        for attachment in attachments.all { attachment.vaultWillClose() }
        state.withLock {
            $0.keys.clear()
            $0.isClosed = true
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
        try state.withLock { (state) throws(CofferError) in
            guard !state.isClosed else { throw CofferError(.closed, "the vault is closed; open it again") }
            try state.keys.unlock(with: roots)
        }
        startAutoLock()
    }

    private func startAutoLock() {
        autoLock?.start(action: { [weak self] in self?.lock() })
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

    package func readMeta(_ name: String) throws(CofferError) -> [UInt8] {
        let value = try storage("reading the vault's keys") {
            try environment.read { txn in try txn.get(schema.meta, key: Array(name.utf8)) }
        }
        guard let value else { throw CofferError(.decode, "the vault is damaged: meta \"\(name)\" is missing") }
        return value
    }

    /// Opens both wrapped roots under `kek`; `nil` if the first does not authenticate (the wrong
    /// passphrase or recovery key).
    package func unwrapRoots(under kek: SecureBytes, by unlocker: MetaKey.Unlocker) throws(CofferError) -> RootKeys? {
        let deviceName = MetaKey.wrappedRoot(.device, by: unlocker)
        let syncName = MetaKey.wrappedRoot(.sync, by: unlocker)
        guard let device = try KeyWrap.unwrap(try readMeta(deviceName), under: kek, vaultID: id, name: deviceName)
        else {
            return nil
        }
        guard let sync = try KeyWrap.unwrap(try readMeta(syncName), under: kek, vaultID: id, name: syncName) else {
            throw CofferError(
                .decode,
                "the vault is damaged: meta \"\(syncName)\" does not open with a key that opens \"\(deviceName)\""
            )
        }
        return RootKeys(device: device, sync: sync)
    }
}
