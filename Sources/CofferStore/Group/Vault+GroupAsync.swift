public import Foundation

/// The asynchronous forms of the sync group's operations. Each runs its synchronous twin on a global
/// dispatch queue, so LMDB I/O and the signatures never occupy a thread of Swift's cooperative pool.
extension Vault {
    /// The members of the sync group; see ``members()-3bf8v``.
    public func members() async throws(CofferError) -> [GroupMember] {
        try await offload { () throws(CofferError) in try self.members() }
    }

    /// Approves a device's join request; see ``approve(_:)-3q91o``.
    @discardableResult
    public func approve(_ request: JoinRequest) async throws(CofferError) -> GroupMember {
        try await offload { () throws(CofferError) in try self.approve(request) }
    }

    /// Revokes a device, and the devices that came in beside an earlier revocation of it; see
    /// ``revoke(device:)-6ww9w``.
    @discardableResult
    public func revoke(device: UUID) async throws(CofferError) -> [UUID] {
        try await offload { () throws(CofferError) in try self.revoke(device: device) }
    }

    /// Starts a new key epoch; see ``rotateGroupKey()-2v8mz``.
    public func rotateGroupKey() async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.rotateGroupKey() }
    }

    /// Leaves the sync group and founds a new one with this device alone; see ``startNewGroup()-4fuyt``.
    @discardableResult
    public func startNewGroup() async throws(CofferError) -> GroupReference {
        try await offload { () throws(CofferError) in try self.startNewGroup() }
    }

    /// Sets how devices may join; see ``setJoinPolicy(_:passphrase:)-6bana``.
    public func setJoinPolicy(_ policy: GroupJoinPolicy, passphrase: Passphrase? = nil) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.setJoinPolicy(policy, passphrase: passphrase) }
    }

    /// Creates a vault that asks to join a sync group by approval; see
    /// ``requestJoin(at:passphrase:name:group:configuration:)-51kop``.
    public static func requestJoin(
        at directory: URL,
        passphrase: Passphrase,
        name: String? = nil,
        group: GroupReference? = nil,
        configuration: Configuration = Configuration()
    ) async throws(CofferError) -> (vault: Vault, request: JoinRequest) {
        let made = try await offload { () throws(CofferError) in
            let (vault, request) = try Vault.requestJoin(
                at: directory,
                passphrase: passphrase,
                name: name,
                group: group,
                configuration: configuration
            )
            return Requested(vault: vault, request: request)
        }
        return (made.vault, made.request)
    }

    private struct Requested: Sendable {
        let vault: Vault
        let request: JoinRequest
    }

    /// How devices may join the group; see ``joinPolicy()-8l2f7``.
    public func joinPolicy() async throws(CofferError) -> GroupJoinPolicy {
        try await offload { () throws(CofferError) in try self.joinPolicy() }
    }

    /// The group's id and fingerprint; see ``groupReference()-4zjb9``.
    public func groupReference() async throws(CofferError) -> GroupReference {
        try await offload { () throws(CofferError) in try self.groupReference() }
    }

    /// The join request this vault waits on; see ``pendingJoinRequest()-wiii``.
    public func pendingJoinRequest() async throws(CofferError) -> JoinRequest? {
        try await offload { () throws(CofferError) in try self.pendingJoinRequest() }
    }

    /// Whether the sync group is frozen; see ``syncGroupIsFrozen()-7333l``.
    public func syncGroupIsFrozen() async throws(CofferError) -> Bool {
        try await offload { () throws(CofferError) in try self.syncGroupIsFrozen() }
    }
}
