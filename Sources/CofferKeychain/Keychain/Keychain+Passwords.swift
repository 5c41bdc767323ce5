package import Foundation

extension Keychain {
    /// The generic password stored for `service` and `account`, or `nil` if there is none (in the
    /// spirit of SSKeychain's `passwordForService:account:`).
    ///
    /// - Throws: ``KeychainError`` for anything but "not found": a locked vault, a refused
    ///   authentication, a tampered record, a value that is not UTF-8 (`.decode`).
    public func password(service: String, account: String) throws(KeychainError) -> String? {
        switch try directPassword(service: service, account: account) {
        case .found(let text):
            guard let text else { throw Self.notText(service: service, account: account) }
            return text
        case .absent:
            return nil
        case .useQuery:
            break
        }
        guard let value = try genericPasswordValue(service: service, account: account) else { return nil }
        guard let text = String(validating: value, as: UTF8.self) else {
            throw Self.notText(service: service, account: account)
        }
        return text
    }

    /// The value of the generic password for `service` and `account`, found by query, or `nil` if
    /// there is none.
    func genericPasswordValue(service: String, account: String) throws(KeychainError) -> Data? {
        var query = ItemQuery.genericPassword(service: service, account: account)
        query.returnsValue = true
        do {
            guard let found = try find(query).first else { return nil }
            return found.value ?? Data()
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    /// `bytes` as a string, or `nil` if they are not UTF-8.
    ///
    /// `String(validating:as:)` is generic and, called here, looks up type metadata on every call (a
    /// tenth of a password read); `String(decoding:as:)` takes a specialised path but repairs invalid
    /// input, so the result is compared with the input: equal exactly when the input was valid.
    package static func text(utf8 bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var text = String(decoding: bytes, as: UTF8.self)
        let unchanged = text.withUTF8 { decoded in
            decoded.count == bytes.count
                && (bytes.isEmpty || memcmp(decoded.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return unchanged ? text : nil
    }

    private static func notText(service: String, account: String) -> KeychainError {
        KeychainError(.decode, "the item for service '\(service)', account '\(account)' does not hold UTF-8 text")
    }

    /// What a direct read found.
    private enum DirectRead {
        /// The value as text, or `nil` if it is not UTF-8.
        case found(String?)
        case absent
        /// The direct path does not apply (no single access group, or user presence to ask).
        case useQuery
    }

    /// Reads a generic password by its id, skipping the query engine: possible when the handle has a
    /// single access group, so service, account and group are the whole primary key. Device-bound
    /// first, as ``find(_:)`` orders them.
    ///
    /// It takes contexts from the pool and the two keys it needs one by one instead of opening a
    /// ``KeychainSession``: allocating a session and copying the whole key ring cost a quarter of a
    /// read.
    private func directPassword(service: String, account: String) throws(KeychainError) -> DirectRead {
        guard let groups = accessGroups, groups.count == 1 else { return .useQuery }
        let vault = vault
        let pool = contextPool
        let contexts = try pool.take()
        defer { pool.give(contexts) }
        return try storage("reading a keychain item") {
            try vault.environment.read { txn -> DirectRead in
                for scope in SyncScope.allCases {
                    let index = try contexts.index(scope) { () throws(CofferError) in
                        try vault.key(.index, scope.keyScope, .afterFirstUnlock)
                    }
                    let read = try index.withGenericPasswordID(
                        service: service,
                        account: account,
                        group: groups[0]
                    ) { id in
                        txn.noteScatteredTouch(.reused)
                        return try txn.withValue(vault.schema.items, key: id) { stored -> DirectRead in
                            let header = try ItemRecord.Header(stored: stored)
                            guard !header.requiresUserPresence else { return .useQuery }
                            let key = try KeychainSession.itemKey(header.accessibility) { () throws(CofferError) in
                                try vault.key(
                                    .item,
                                    header.scope.keyScope,
                                    header.accessibility.level,
                                    epoch: header.epoch
                                )
                            }
                            return .found(
                                try ItemRecord.withValue(
                                    of: stored,
                                    header: header,
                                    id: id,
                                    key: key,
                                    cipher: contexts.cipher
                                ) {
                                    Self.text(utf8: $0.bindMemory(to: UInt8.self))
                                }
                            )
                        }
                    }
                    if let read { return read }
                }
                return .absent
            }
        }
    }

    /// Stores `password` as the generic password for `service` and `account`, replacing any there
    /// (an atomic upsert). Replacing keeps what the item was (its scope, protection class and user
    /// presence) unless a new scope or class is given: a syncable password stays syncable.
    ///
    /// - Parameters:
    ///   - password: The password, stored as UTF-8.
    ///   - service: The service (a generic password's first primary-key attribute).
    ///   - account: The account name.
    ///   - accessibility: The protection class; `nil` keeps the replaced item's, or
    ///     ``Accessibility/whenUnlocked`` for a new one.
    ///   - scope: Whether the password stays on this machine or syncs; `nil` keeps the replaced
    ///     item's, or ``SyncScope/deviceBound`` for a new one. Naming the other scope moves the item.
    public func setPassword(
        _ password: String,
        service: String,
        account: String,
        accessibility: Accessibility? = nil,
        scope: SyncScope? = nil
    ) throws(KeychainError) {
        let apply = try stagedValueUpdate(Data(password.utf8), service: service, account: account, accessibility, scope)
        try storage("saving a keychain item") { try vault.environment.write { txn in _ = try apply(txn) } }
    }

    /// A value update (``setPassword(_:service:account:accessibility:scope:)-2mz03``, a typed
    /// value's `set`) checked now, with the body that stores it in a write transaction (its own, or
    /// a `VaultTransaction`'s): the generic password for `service` and `account`, keeping what the
    /// item it replaces had of whatever `accessibility` and `scope` leave unnamed.
    package func stagedValueUpdate(
        _ value: Data,
        service: String,
        account: String,
        _ accessibility: Accessibility?,
        _ scope: SyncScope?
    ) throws(KeychainError) -> (Transaction) throws -> KeychainItem {
        try stagedSave(
            Self.genericPassword(value, service: service, account: account, accessibility, scope),
            keeping: Self.kept(accessibility: accessibility, scope: scope)
        )
    }

    /// The generic password a value update stores (before it takes what it keeps from the item it
    /// replaces): `accessibility` and `scope`, or for a new item ``Accessibility/whenUnlocked`` and
    /// ``SyncScope/deviceBound``.
    private static func genericPassword(
        _ value: Data,
        service: String,
        account: String,
        _ accessibility: Accessibility?,
        _ scope: SyncScope?
    ) -> KeychainItem {
        var item = KeychainItem(
            .genericPassword,
            value: value,
            accessibility: accessibility ?? .whenUnlocked,
            scope: scope ?? .deviceBound
        )
        item.attributes.service = service
        item.attributes.account = account
        return item
    }

    /// What a value update that names `accessibility` and `scope` (or not) keeps of the item it
    /// replaces.
    private static func kept(accessibility: Accessibility?, scope: SyncScope?) -> KeptProperties {
        var kept: KeptProperties = .userPresence
        if accessibility == nil { kept.insert(.accessibility) }
        if scope == nil { kept.insert(.scope) }
        return kept
    }

    /// Deletes the generic password for `service` and `account`; returns whether there was one.
    @discardableResult
    public func deletePassword(service: String, account: String) throws(KeychainError) -> Bool {
        do {
            return try delete(.genericPassword(service: service, account: account)) > 0
        } catch  where error.code == .itemNotFound {
            return false
        }
    }
}
