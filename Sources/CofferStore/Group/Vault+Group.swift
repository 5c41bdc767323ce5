public import Foundation

/// A device of the sync group, as the group's membership log records it (``Vault/members()-3bf8v``).
public struct GroupMember: Sendable, Hashable, Codable {
    /// The device's id.
    public let deviceID: UUID
    /// The name it joined with (its host name, unless another was given).
    public let name: String
    /// Its public keys and fingerprint.
    public let identity: DeviceIdentity
    /// When it was added, by the clock of the device that added it.
    public let added: Date
    /// The device that added it: itself, for a device that joined with the group key (the first
    /// device, a passphrase join, a vault made before membership logs).
    public let addedBy: UUID
    /// When it was revoked, if it was.
    public let revoked: Date?
    /// The device that revoked it.
    public let revokedBy: UUID?
    /// When this vault last imported a bundle the device made.
    public let lastSeen: Date?
    /// Whether this is this vault's own device.
    public let isThisDevice: Bool

    /// Whether the device is a member now.
    public var isActive: Bool { revoked == nil }
}

/// The sync group's membership: who is in it, how devices join, and the key epochs that shut
/// revoked devices out (docs/ARCHITECTURE.md, "Device trust"; docs/FORMAT.md, "Membership log").
///
/// Every change is an entry in the group's membership log, signed by a member and chained by hash,
/// carried in every bundle and merged by every device. Revoking a device, or rotating the group key,
/// starts a key epoch: a fresh group key sealed to each remaining member. Records written from then
/// on are sealed under it; a revoked device keeps only what it already had.
extension Vault {
    /// The members of the sync group, revoked ones included, in the order they were added; none for
    /// a vault waiting for approval to join a group (``pendingJoinRequest()-wiii``).
    ///
    /// - Throws: ``CofferError`` `.closed`, `.decode` for a damaged log.
    public func members() throws(CofferError) -> [GroupMember] {
        try checkOpen()
        if try pendingJoinRequest() != nil { return [] }
        guard let stored = try readMetaIfPresent(GroupContext.Meta.log) else {
            // No log yet (a vault made before them, never exported since): this device alone.
            return [
                GroupMember(
                    deviceID: deviceID,
                    name: Self.defaultDeviceName,
                    identity: try deviceIdentity(),
                    added: createdAt,
                    addedBy: deviceID,
                    revoked: nil,
                    revokedBy: nil,
                    lastSeen: nil,
                    isThisDevice: true
                )
            ]
        }
        let state = try storedGroupState(try GroupLog(group: syncGroupID, decoding: stored))
        let seen = try lastSeenTimes()
        return try state.members.map { (record) throws(CofferError) in
            GroupMember(
                deviceID: record.device,
                name: record.name,
                identity: try DeviceIdentity(
                    deviceID: record.device,
                    encryptionKey: record.keys.agreement,
                    signingKey: record.keys.signing
                ),
                added: record.added,
                addedBy: record.addedBy,
                revoked: record.revoked,
                revokedBy: record.revokedBy,
                lastSeen: seen[record.device],
                isThisDevice: record.device == deviceID
            )
        }
    }

    /// How devices may join the group now.
    public func joinPolicy() throws(CofferError) -> GroupJoinPolicy {
        try checkOpen()
        guard let stored = try readMetaIfPresent(GroupContext.Meta.log) else { return .passphrase }
        return try storedGroupState(try GroupLog(group: syncGroupID, decoding: stored)).policy
    }

    /// What `log`, the stored membership log, means to this device: with join proofs checked under
    /// the keys it trusts while it is unlocked (a join proven with another key has no effect), left
    /// unchecked while it is locked.
    package func storedGroupState(_ log: GroupLog) throws(CofferError) -> GroupState {
        guard let roots = try? unlockedRoots() else { return try log.state(roots: { _ in nil }) }
        let (schema, vaultID) = (schema, id)
        let stored = try storage("reading the sync group's keys") {
            try environment.read { txn in
                try Self.storedGroupKeys(in: txn, schema: schema, roots: roots, vaultID: vaultID)
            }
        }
        return try log.state(
            roots: HeldGroupKeys(roots: stored.roots, legacy: stored.legacy, group: log.group).trustedRoot
        )
    }

    /// This vault's sync group as a join request names it: its id and the fingerprint of its founding
    /// entries, for a device asking to join to compare (founding the membership log first if this
    /// vault has none yet).
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while locked, `.notTrusted` while this vault
    ///   waits for approval.
    public func groupReference() throws(CofferError) -> GroupReference {
        if let stored = try readMetaIfPresent(GroupContext.Meta.log) {
            return try GroupReference(log: try GroupLog(group: syncGroupID, decoding: stored))
        }
        let log = try changeGroup("founding the membership log") { (context, _, _) in context.log }
        return try GroupReference(log: log)
    }

    /// How many entries the sync group's membership log holds here (none before the first export).
    package func membershipLogEntryCount() throws(CofferError) -> Int {
        guard let stored = try readMetaIfPresent(GroupContext.Meta.log) else { return 0 }
        return try GroupLog(group: syncGroupID, decoding: stored).entries.count
    }

    /// Sets how devices may join: `.approval` stops passphrase joins (bundles then carry no
    /// passphrase-wrapped group key); `.passphrase` allows them again, with a join block wrapped
    /// under `passphrase`, which must be this vault's.
    ///
    /// - Throws: ``CofferError`` `.param` when `.passphrase` is asked without a passphrase,
    ///   `.authFailed` for a wrong one, `.interactionNotAllowed` while locked, `.notTrusted` when this
    ///   device is not an active member.
    public func setJoinPolicy(_ policy: GroupJoinPolicy, passphrase: Passphrase? = nil) throws(CofferError) {
        var kek: (KDFRecord, SecureBytes)?
        if policy == .passphrase {
            guard let passphrase else {
                throw CofferError(
                    .param,
                    "allowing passphrase joins needs this vault's passphrase, to wrap the group key for joining devices"
                )
            }
            let kdf = try KDFRecord(decoding: try readMeta(MetaKey.kdf))
            let key = try kdf.keyEncryptionKey(for: passphrase)
            guard try unwrapRoots(under: key, by: .passphrase) != nil else {
                throw CofferError(.authFailed, "the passphrase is wrong; the join policy was not changed")
            }
            kek = (kdf, key)
        }
        let group = syncGroupID
        try changeGroup("setting the join policy") { (context, txn, schema) throws in
            try Self.requireActiveMember(context)
            if try context.state().policy != policy { try context.append(.policy(policy)) }
            if let (kdf, key) = kek {
                let (epoch, root) = try context.currentRoot()
                let block = try JoinBlock(syncRoot: root, kdf: kdf, kek: key, syncGroupID: group, epoch: epoch)
                try txn.put(schema.meta, key: Array(JoinBlock.metaKey.utf8), value: block.encoded)
            } else {
                try txn.delete(schema.meta, key: Array(JoinBlock.metaKey.utf8))
            }
        }
    }

    /// Adds the device that made `request` to the group: appends it to the membership log and seals
    /// the current group key to its X25519 key. Compare ``JoinRequest/identity``'s fingerprint with
    /// the one the other device shows before approving. The device joins when it imports any bundle
    /// of the group made after this (or pulls from the group's remote).
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when this device is not an active member, `.param`
    ///   when the device is already in the group (or was revoked from it), `.interactionNotAllowed`
    ///   while locked.
    @discardableResult
    public func approve(_ request: JoinRequest) throws(CofferError) -> GroupMember {
        try changeGroup("approving a device") { (context, _, _) throws in
            try Self.requireActiveMember(context)
            if let asked = request.group {
                let mine = try GroupReference(log: context.log)
                guard asked == mine else {
                    throw CofferError(
                        .param,
                        "the request asks to join sync group \(asked.description), not this device's group \(mine.description); it was not approved and nothing was changed. Ask for a request made with a bundle of this group"
                    )
                }
            }
            let state = try context.state()
            if let existing = state.member(request.identity.deviceID) {
                throw CofferError(
                    .param,
                    existing.isActive
                        ? "device \(request.identity.deviceID.uuidString) (\(existing.name)) is already a member of the group"
                        : "device \(request.identity.deviceID.uuidString) (\(existing.name)) was revoked from the group; a revoked device cannot join again: make a new vault on it and approve that"
                )
            }
            let (epoch, root) = try context.currentRoot()
            let keys = request.publicKeys
            try context.append(
                .added(
                    device: request.identity.deviceID,
                    keys: keys,
                    name: request.name,
                    epoch: epoch,
                    box: try GroupKeys.box(root, epoch: epoch, to: keys, group: context.log.group)
                )
            )
        }
        guard let member = try members().first(where: { $0.deviceID == request.identity.deviceID }) else {
            throw CofferError(.internalError, "the approved device is missing from the membership log")
        }
        return member
    }

    /// Revokes `device`: appends the revocation, stops passphrase joins (the revoked device may know
    /// a member's passphrase; allow them again with ``setJoinPolicy(_:passphrase:)-6bana`` once passphrases
    /// are changed), and starts a new key epoch sealed to the remaining members only. Records written
    /// from then on are sealed under the new epoch; bundles the revoked device makes afterwards are
    /// refused by every member that has the revocation (what a member took from it before it heard
    /// of the revocation stays, and travels on, so every member ends with the same records).
    ///
    /// Devices that came in at the same time as a revocation of `device` the log already holds (one
    /// another member made, even one without effect) are revoked with it: those that joined with the
    /// passphrase while that revocation was closing passphrase joins, those `device` approved in
    /// entries that revocation did not know, and the devices those admitted in turn. (A stolen
    /// device's copy can take in made-up devices and then close the door after them, voiding the
    /// first revocation; a member that then revokes the device itself shuts them out too.)
    ///
    /// - Returns: Every device revoked: `device` first, then those that came in beside an earlier
    ///   revocation of it, in the order they were admitted.
    /// - Throws: ``CofferError`` `.param` for this device itself or a device that is not an active
    ///   member, `.notTrusted` when this device is not one, `.interactionNotAllowed` while locked.
    @discardableResult
    public func revoke(device: UUID) throws(CofferError) -> [UUID] {
        guard device != deviceID else {
            throw CofferError(.param, "a device cannot revoke itself; revoke it from another member of the group")
        }
        return try changeGroup("revoking a device") { (context, txn, schema) throws in
            try Self.requireActiveMember(context)
            guard let member = try context.state().member(device), member.isActive else {
                // Revoked already: by whom, since a device made up from a stolen device's files may
                // have revoked it first (red team round 36, F1).
                if let revoker = try context.state().member(device)?.revokedBy,
                    let by = try context.state().member(revoker), revoker != deviceID
                {
                    let advice =
                        by.isActive
                        ? ", which is an active member. If you do not know that device, revoke it too (\(InterfaceName.revoke(revoker.uuidString)))"
                        : ", which is out of the group too"
                    throw CofferError(
                        .param,
                        "device \(device.uuidString) was revoked already, by device \(revoker.uuidString) (\(by.name))\(advice); \(InterfaceName.members) lists the devices"
                    )
                }
                throw CofferError(
                    .param,
                    "device \(device.uuidString) is not an active member of the group; \(InterfaceName.members) lists them"
                )
            }
            let state = try context.state()
            let companions = try GroupGraph(context.log.entries, group: context.log.group).admittedBesideRevocations(
                of: device,
                active: Set(state.members.filter(\.isActive).map(\.device)),
                except: deviceID
            )
            let clock = max(try HybridClock.reading(in: txn, schema: schema), HybridClock.wallStamp())
            for revoked in [device] + companions { try context.append(.revoked(device: revoked, clock: clock)) }
            if try context.state().policy == .passphrase { try context.append(.policy(.approval)) }
            try context.startEpoch()
            try txn.delete(schema.meta, key: Array(JoinBlock.metaKey.utf8))
            return [device] + companions
        }
    }

    /// Starts a new key epoch without revoking anyone (hygiene, or after a suspected leak): a fresh
    /// group key sealed to every member. Older records stay readable under their epoch's key.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` when this device is not an active member or the group
    ///   is frozen (``syncGroupIsFrozen()-7333l``), `.interactionNotAllowed` while locked.
    public func rotateGroupKey() throws(CofferError) {
        try changeGroup("rotating the group key") { (context, txn, schema) throws in
            try Self.requireActiveMember(context)
            // A frozen group seals nothing, so a new key would only go to whoever froze it.
            guard try !Self.groupIsFrozen(context, in: txn, schema: schema) else {
                throw CofferError(
                    .notTrusted,
                    "the sync group is frozen (its membership log is full, or a member's log would overflow it), so no new key was started: nothing is sealed for the group any more, and a new key would go to every member, whoever froze it included. \(GroupLog.frozenExplanation)"
                )
            }
            try context.startEpoch()
            // The join block wraps the previous epoch's key; the next unlock with the passphrase
            // writes a new one (until then this vault's bundles carry none).
            try txn.delete(schema.meta, key: Array(JoinBlock.metaKey.utf8))
        }
    }

    // MARK: Internals

    /// Writes the join block (meta `sync-join`) for the current epoch under the passphrase key `kek`
    /// while the group accepts passphrase joins, or removes it when it does not. Without `force`,
    /// only a missing or stale block is written.
    package func refreshJoinBlock(kdf: KDFRecord, kek: SecureBytes, force: Bool = false) throws(CofferError) {
        guard let change = try joinBlockChange(kdf: kdf, kek: kek, force: force) else { return }
        let schema = schema
        try storage(change.action) {
            try environment.write { txn in try change.apply(in: txn, schema: schema) }
        }
    }

    /// What ``refreshJoinBlock(kdf:kek:force:)`` would change, or `nil` for nothing: for a caller that
    /// commits it in its own transaction, with the change that calls for it (a new passphrase and its
    /// join block are one commit, so no failure can leave them apart).
    package func joinBlockChange(
        kdf: KDFRecord,
        kek: SecureBytes,
        force: Bool = false
    ) throws(CofferError)
        -> JoinBlock.Change?
    {
        let keys = try keyRing()
        guard !keys.isAwaitingJoin else { return nil }
        let policy = try joinPolicy()
        let epoch = keys.currentEpoch(.sync)
        let stored = try readMetaIfPresent(JoinBlock.metaKey).flatMap { try? JoinBlock(decoding: $0) }
        if policy == .approval { return stored == nil ? nil : .remove }
        guard force || stored?.epoch != epoch else { return nil }
        return .write(
            try JoinBlock(
                syncRoot: try keys.root(.sync, epoch: epoch),
                kdf: kdf,
                kek: kek,
                syncGroupID: syncGroupID,
                epoch: epoch
            )
        )
    }

    /// This machine's name in the group unless another is given: its host name.
    package static var defaultDeviceName: String { ProcessInfo.processInfo.hostName }

    private static func requireActiveMember(_ context: GroupContext) throws(CofferError) {
        guard let me = try context.state().member(context.device) else {
            throw CofferError(
                .notTrusted,
                "this device is not a member of its sync group's log; it cannot change the group"
            )
        }
        guard me.isActive else {
            throw CofferError(
                .notTrusted,
                "this device was revoked from the sync group by device \(me.revokedBy?.uuidString ?? "?"); it cannot change the group"
            )
        }
    }

    /// Runs `body` on the group in one write transaction, starting the membership log first for a
    /// vault without one (a vault made before logs existed: it joins its own log with the sync root,
    /// and its format becomes 2), stores what changed, and installs the new epochs in the key ring.
    @discardableResult
    package func changeGroup<R>(
        _ action: String,
        _ body: (inout GroupContext, Transaction, Schema) throws -> R
    ) throws(CofferError) -> R {
        let roots = try unlockedRoots()
        let deviceKeys = try self.deviceKeys()
        let (schema, vaultID, group) = (schema, id, syncGroupID)
        let (result, context) = try storage(action) {
            try environment.write { txn -> (R, GroupContext) in
                var context = try groupContext(in: txn, roots: roots, deviceKeys: deviceKeys)
                let result = try body(&context, txn, schema)
                try context.shareKeysTheLogLacks()
                if context.changed {
                    try context.store(in: txn, schema: schema, roots: roots, vaultID: vaultID)
                    try Self.markFormat(in: txn, schema: schema)
                }
                return (result, context)
            }
        }
        try installGroupKeys(try context.epochRoots(), group: group)
        return result
    }

    /// ``loadGroup(in:schema:roots:deviceKeys:device:group:vaultID:)`` for this vault.
    package func groupContext(in txn: Transaction, roots: RootKeys, deviceKeys: DeviceKeys) throws -> GroupContext {
        try Self.loadGroup(
            in: txn,
            schema: schema,
            roots: roots,
            deviceKeys: deviceKeys,
            device: deviceID,
            group: syncGroupID,
            vaultID: id
        )
    }

    /// The group keys this vault holds (meta `group-keys`, the sync root as the original epoch's) and
    /// the epochs it trusts though their ids commit to nothing (meta `group-epochs-legacy`; `nil` in a
    /// vault an older Coffer wrote).
    static func storedGroupKeys(
        in txn: Transaction,
        schema: Schema,
        roots: RootKeys,
        vaultID: UUID
    ) throws -> (roots: [KeyEpoch: SecureBytes], legacy: Set<KeyEpoch>?) {
        var keys: [KeyEpoch: SecureBytes] = [.original: roots.sync]
        if let sealed = try txn.get(schema.meta, key: Array(GroupKeys.metaKey.utf8)) {
            keys.merge(try GroupKeys.store.open(sealed, under: roots.device, vaultID: vaultID)) { mine, _ in mine }
        }
        let legacy = try txn.get(schema.meta, key: Array(GroupKeys.legacyMetaKey.utf8)).map {
            (bytes) throws(CofferError) -> Set<KeyEpoch> in
            guard bytes.count % 8 == 0 else {
                throw CofferError(.decode, "meta \"\(GroupKeys.legacyMetaKey)\" is malformed; the vault is damaged")
            }
            return Set(
                stride(from: 0, to: bytes.count, by: 8).map { start in
                    KeyEpoch(id: bytes[start..<(start + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                }
            )
        }
        return (keys, legacy)
    }

    /// The group as stored, or a new log this device founds (with the sync root as the original
    /// epoch's key) when there is none.
    package static func loadGroup(
        in txn: Transaction,
        schema: Schema,
        roots: RootKeys,
        deviceKeys: DeviceKeys,
        device: UUID,
        group: UUID,
        vaultID: UUID
    ) throws -> GroupContext {
        if try txn.get(schema.meta, key: Array(GroupContext.Meta.joinRequest.utf8)) != nil {
            throw CofferError(
                .notTrusted,
                "this vault is waiting for approval to join a sync group; import a bundle from the member who approved it first"
            )
        }
        let (keys, legacy) = try storedGroupKeys(in: txn, schema: schema, roots: roots, vaultID: vaultID)
        guard let stored = try txn.get(schema.meta, key: Array(GroupContext.Meta.log.utf8)) else {
            var context = try GroupContext(
                log: GroupLog(group: group),
                roots: keys,
                legacy: legacy,
                device: device,
                deviceKeys: deviceKeys
            )
            try context.appendJoined(name: defaultDeviceName)
            return context
        }
        let memberEpoch = try txn.get(schema.meta, key: Array(GroupContext.Meta.memberEpoch.utf8)).map {
            (bytes) throws(CofferError) in
            var reader = BinaryReader(bytes, what: "meta \"\(GroupContext.Meta.memberEpoch)\"")
            let id = try reader.readUInt64()
            try reader.finish()
            return KeyEpoch(id: id)
        }
        return try GroupContext(
            log: try GroupLog(group: group, decoding: stored),
            roots: keys,
            legacy: legacy,
            device: device,
            deviceKeys: deviceKeys,
            memberEpoch: memberEpoch
        )
    }

    /// Raises meta `format` to `version` (by default 2, the version that has membership logs and key
    /// epochs) unless it is there already.
    package static func markFormat(in txn: Transaction, schema: Schema, atLeast version: UInt32 = 2) throws {
        let key = Array(MetaKey.format.utf8)
        let stored = try txn.get(schema.meta, key: key)
        let current = stored.map { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } } ?? 0
        guard current < version else { return }
        try txn.put(schema.meta, key: key, value: withUnsafeBytes(of: version.bigEndian) { Array($0) })
    }

    /// The later epochs this vault holds and the current one, for the key ring; `nil` for a vault
    /// waiting for approval to join a group.
    package func storedEpochs(deviceRoot: SecureBytes) throws(CofferError) -> EpochRoots? {
        guard try readMetaIfPresent(GroupContext.Meta.joinRequest) == nil else { return nil }
        let roots = try storedEpochRoots(deviceRoot: deviceRoot) ?? [:]
        let current = try readMetaIfPresent(GroupContext.Meta.epoch).map { (bytes) throws(CofferError) in
            var reader = BinaryReader(bytes, what: "meta \"\(GroupContext.Meta.epoch)\"")
            let id = try reader.readUInt64()
            try reader.finish()
            return KeyEpoch(id: id)
        }
        return EpochRoots(roots: roots.filter { !$0.key.isOriginal }, current: current ?? .original)
    }

    /// Every group key in meta `group-keys`, or `nil` when there is none.
    package func storedEpochRoots(deviceRoot: SecureBytes) throws(CofferError) -> [KeyEpoch: SecureBytes]? {
        guard let sealed = try readMetaIfPresent(GroupKeys.metaKey) else { return nil }
        return try GroupKeys.store.open(sealed, under: deviceRoot, vaultID: id)
    }

    /// When each device's latest bundle was imported here (meta `seen <device id>`).
    private func lastSeenTimes() throws(CofferError) -> [UUID: Date] {
        let schema = schema
        return try storage("reading when devices were last seen") {
            try environment.read { txn in
                var seen: [UUID: Date] = [:]
                let prefix = Array(Self.seenPrefix.utf8)
                try txn.forEach(in: schema.meta, prefix: prefix) { key, value in
                    if key.count == prefix.count + 16, value.count == 8,
                        let device = try? UUID(storedBytes: Array(key.dropFirst(prefix.count)), what: "a device id")
                    {
                        var reader = BinaryReader(Array(value), what: "a last-seen time")
                        let milliseconds = (try? reader.readInt64()) ?? 0
                        seen[device] = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                    }
                    return true
                }
                return seen
            }
        }
    }

    /// The prefix of meta `seen <device id (16)>` → `Int64` ms: when that device's latest bundle was
    /// imported.
    package static let seenPrefix = "seen "
}
