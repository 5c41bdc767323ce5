public import Foundation

/// The asynchronous forms of the vault's own operations. Each runs its synchronous twin on a global
/// dispatch queue, so scrypt (create, unlock, changing the passphrase) and LMDB's blocking I/O never
/// occupy a thread of Swift's cooperative pool. In an `async` function Swift picks these; the two
/// forms have the same semantics and throw the same errors.
extension Vault {
    /// Creates a vault and returns it unlocked; see ``create(at:passphrase:configuration:)-1qlwi``.
    public static func create(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration()
    ) async throws(CofferError) -> Vault {
        try await offload { () throws(CofferError) in
            try Vault.create(at: directory, passphrase: passphrase, configuration: configuration)
        }
    }

    /// Opens a vault, locked; see ``open(at:configuration:)-yw4k``.
    public static func open(
        at directory: URL,
        configuration: Configuration = Configuration()
    ) async throws(CofferError) -> Vault {
        try await offload { () throws(CofferError) in try Vault.open(at: directory, configuration: configuration) }
    }

    /// Unlocks the vault with its passphrase; see ``unlock(passphrase:)-2ddnl``.
    public func unlock(passphrase: Passphrase) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.unlock(passphrase: passphrase) }
    }

    /// Unlocks the vault with its recovery key; see ``unlock(recoveryKey:)-8q4ym``.
    public func unlock(recoveryKey: RecoveryKey) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.unlock(recoveryKey: recoveryKey) }
    }

    /// Changes the passphrase; see ``changePassphrase(to:)-1oil5``.
    public func changePassphrase(to newPassphrase: Passphrase) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.changePassphrase(to: newPassphrase) }
    }

    /// The vault's recovery key; see ``recoveryKey()-7z7u5``.
    public func recoveryKey() async throws(CofferError) -> RecoveryKey {
        try await offload { () throws(CofferError) in try self.recoveryKey() }
    }

    /// A summary of the vault; see ``info()-26bs2``.
    public func info() async throws(CofferError) -> VaultInfo {
        try await offload { () throws(CofferError) in try self.info() }
    }

    /// This device's identity; see ``deviceIdentity()-8dcfr``.
    public func deviceIdentity() async throws(CofferError) -> DeviceIdentity {
        try await offload { () throws(CofferError) in try self.deviceIdentity() }
    }

    /// Lets write-only clients add to this vault, or stops them; see ``allowWriteOnlyClients(_:)-8qwu``.
    public func allowWriteOnlyClients(_ allowed: Bool) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.allowWriteOnlyClients(allowed) }
    }

    /// The position of the latest change; see ``currentChangePosition()-8yup9``.
    public func currentChangePosition() async throws(CofferError) -> ChangePosition {
        try await offload { () throws(CofferError) in try self.currentChangePosition() }
    }

    /// Gives the space of deleted data back to the file system; see ``compactDataFile(at:)-8n6q4``.
    public static func compactDataFile(at directory: URL) async throws(CofferError) -> DataFileCompaction {
        try await offload { () throws(CofferError) in try Vault.compactDataFile(at: directory) }
    }

    /// Repairs a damaged meta page; see ``repairDataFile(at:acceptingLoss:)-411d9``.
    public static func repairDataFile(
        at directory: URL,
        acceptingLoss: Bool = false
    ) async throws(CofferError) -> String {
        try await offload { () throws(CofferError) in
            try Vault.repairDataFile(at: directory, acceptingLoss: acceptingLoss)
        }
    }
}
