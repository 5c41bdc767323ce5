public import Foundation
internal import Glibc

// Creating a vault: in a staging directory, filled, then moved into place, so that a failed or killed
// creation leaves nothing behind.
extension Vault {
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
        if let name = configuration.deviceName { try validateDeviceName(name) }
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

    /// A sync group a new vault joins with the group key (from a bundle's join block), or the join
    /// request of a vault that will join by approval.
    package struct JoinedGroup {
        package let id: UUID
        /// The group keys the new vault starts with, by epoch (the original one's is the sync root).
        package let roots: [KeyEpoch: SecureBytes]
        /// The group's membership log, as the bundle carried it (none from a version-1 bundle).
        package let log: GroupLog?
        /// The name the device joins with.
        package let name: String
        /// Whether this is a request to join by approval (no group key yet).
        package let isRequest: Bool
        /// The group a request asks to join, when it names one.
        package let requested: GroupReference?

        package init(id: UUID, roots: [KeyEpoch: SecureBytes], log: GroupLog?, name: String = Vault.defaultDeviceName) {
            self.id = id
            self.roots = roots
            self.log = log
            self.name = name
            self.isRequest = false
            self.requested = nil
        }

        private init(requestNamed name: String, group: GroupReference?) {
            id = UUID()
            roots = [:]
            log = nil
            self.name = name
            isRequest = true
            requested = group
        }

        /// A vault that asks to join a group by approval, under `name`: `group`, or whichever group
        /// approves it first when it names none.
        package static func request(name: String, group: GroupReference? = nil) -> JoinedGroup {
            JoinedGroup(requestNamed: name, group: group)
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
                formatVersion: Schema.newVaultFormatVersion,
                vaultID: UUID(),
                deviceID: UUID(),
                syncGroupID: group?.id ?? UUID(),
                createdAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
            )
            let roots = RootKeys(device: .random(count: 32), sync: group?.roots[.original] ?? .random(count: 32))
            let recovery = RecoveryKey.generate()
            let kdf = KDFRecord(parameters: configuration.kdf)
            let passphraseKEK = try kdf.keyEncryptionKey(for: passphrase)
            let recoveryKEK = try recoveryKeyEncryptionKey(recovery, vaultID: identity.vaultID)
            let deviceKeys = DeviceKeys.generate()

            var entries =
                identity.metaEntries + [
                    (MetaKey.kdf, kdf.encoded),
                    (MetaKey.recoveryEscrow, try escrow(recovery, roots: roots, vaultID: identity.vaultID)),
                ]
            entries += try deviceKeys.metaEntries(deviceRoot: roots.device, vaultID: identity.vaultID)
            var epochs = EpochRoots()
            if let group, group.isRequest {
                let request = JoinRequest(
                    identity: try deviceKeys.identity(deviceID: identity.deviceID),
                    name: group.name,
                    group: group.requested
                )
                entries.append((GroupContext.Meta.joinRequest, Array(request.text.utf8)))
            } else {
                // The founding device, or one joining with the passphrase, enters the log itself.
                var context = try GroupContext(
                    log: group?.log ?? GroupLog(group: identity.syncGroupID),
                    roots: (group?.roots ?? [:]).merging([.original: roots.sync]) { theirs, _ in theirs },
                    device: identity.deviceID,
                    deviceKeys: deviceKeys
                )
                try context.appendJoined(name: configuration.deviceName ?? group?.name ?? defaultDeviceName)
                entries += try context.metaEntries(deviceRoot: roots.device, vaultID: identity.vaultID)
                let (epoch, root) = try context.currentRoot()
                let block = try JoinBlock(
                    syncRoot: root,
                    kdf: kdf,
                    kek: passphraseKEK,
                    syncGroupID: identity.syncGroupID,
                    epoch: epoch
                )
                entries.append((JoinBlock.metaKey, block.encoded))
                epochs = try context.epochRoots()
            }
            for scope in KeyScope.allCases where scope == .device || group?.isRequest != true {
                for (unlocker, kek) in [(MetaKey.Unlocker.passphrase, passphraseKEK), (.recovery, recoveryKEK)] {
                    let name = MetaKey.wrappedRoot(scope, by: unlocker)
                    entries.append(
                        (
                            name,
                            try KeyWrap.wrap(
                                roots.wrappedRoot(scope),
                                under: kek,
                                vaultID: identity.vaultID,
                                name: name
                            )
                        )
                    )
                }
            }
            try writeMeta(entries, to: environment, schema: schema, while: "writing the vault's keys")
            var keys = KeyRing()
            try keys.unlock(with: roots)
            if group?.isRequest == true { keys.awaitJoin() } else { try keys.install(epochs, for: .sync) }
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
            try refuseIrregularFiles(in: directory)  // a FIFO there is no vault: say what it is
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
        DeadProcessLeftovers.remove(in: parent.path, prefix: prefix)
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
}
