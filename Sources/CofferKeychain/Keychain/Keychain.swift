package import Foundation

/// The keychain tier of a vault: small secrets with attributes and queries, after Apple's Keychain
/// Services (`SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate`, `SecItemDelete`).
///
/// A handle sees only the access groups it was granted (``accessGroups``). Every operation is atomic:
/// one LMDB transaction. `Keychain` is `Sendable`; use it from any thread, or through the `async`
/// forms from any task.
///
/// ```swift
/// let keychain = vault.keychain
/// try keychain.setPassword("s3cret", service: "mail", account: "ann")
/// let password = try keychain.password(service: "mail", account: "ann")   // "s3cret"
///
/// var query = ItemQuery(.genericPassword)
/// query.attributes.service = "mail"
/// for item in try keychain.find(query) { print(item.attributes.account ?? "") }
/// ```
public final class Keychain: Sendable {
    package let vault: Vault
    /// The access groups this handle may use; `nil` when it may use every group.
    public let accessGroups: [String]?
    package let authenticationHandler: AuthenticationHandler?
    /// The vault's pooled OpenSSL contexts, looked up once per handle.
    package let contextPool: KeychainContextPool

    package init(vault: Vault, accessGroups: [String]?, authenticationHandler: AuthenticationHandler?) {
        self.vault = vault
        contextPool = vault.keychainContexts
        self.accessGroups = accessGroups
        self.authenticationHandler = authenticationHandler
    }

    /// The group new items join when they name none: the first granted group, or none (the empty
    /// group) for an unrestricted handle.
    public var defaultAccessGroup: String { accessGroups?.first ?? "" }

    // MARK: Add

    /// Adds an item (`SecItemAdd`).
    ///
    /// - Throws: ``KeychainError`` `.duplicateItem` if an item with the same primary key exists,
    ///   `.param` for a value over 16 KiB or a syncable `…ThisDeviceOnly` item, `.missingEntitlement`
    ///   for an access group this handle was not granted, `.interactionNotAllowed` if the item's
    ///   protection class is locked.
    public func add(_ item: KeychainItem) throws(KeychainError) {
        try add(contentsOf: [item])
    }

    /// Adds several items in one transaction: all of them, or (on any error) none.
    ///
    /// - Throws: As ``add(_:)-1xnau``; `.duplicateItem` also when two of `items` share a primary key.
    public func add(contentsOf items: [KeychainItem]) throws(KeychainError) {
        let apply = try stagedAdd(contentsOf: items)
        try storage("adding keychain items") { try vault.environment.write { txn in try apply(txn) } }
    }

    /// `add(contentsOf:)` checked and sealed now, stored by the returned body in a write
    /// transaction (its own, or a ``VaultTransaction``'s).
    package func stagedAdd(contentsOf items: [KeychainItem]) throws(KeychainError) -> (Transaction) throws -> Void {
        let session = try KeychainSession(self)
        let now = Date()
        var prepared: [PreparedItem] = []
        // The id each item would have in the other scope: a primary key names one item, whatever
        // its scope.
        var otherScopeIDs: [[UInt8]] = []
        for item in items {
            let ready = try prepare(item, session: session, created: now)
            prepared.append(ready)
            otherScopeIDs.append(try session.index(ready.item.scope.other).id(of: ready.item))
        }
        let schema = vault.schema
        return { [self] txn in
            for (position, item) in prepared.enumerated() {
                let key = item.item.itemClass.primaryKeyDescription(item.item.attributes)
                if try txn.get(schema.items, key: otherScopeIDs[position]) != nil
                    || prepared[..<position].contains(where: { $0.id == otherScopeIDs[position] })
                {
                    throw KeychainError(
                        .duplicateItem,
                        "an item with the same primary key (\(key)) already exists, \(item.item.scope.other == .syncable ? "syncable" : "device-bound"); update it (setPassword keeps its scope), or use upsert to replace it with this one; nothing was added"
                    )
                }
                // One descent per item: the put itself finds an existing id (stored before, or
                // earlier in this batch), and the transaction is abandoned with the error.
                guard try store(item, session: session, in: txn, replacing: false) else {
                    let inBatch = prepared[..<position].contains { $0.id == item.id }
                    throw KeychainError(
                        .duplicateItem,
                        inBatch
                            ? "two items to add share a primary key (\(key)); nothing was added"
                            : "an item with the same primary key (\(key)) already exists; update it, or use upsert"
                    )
                }
            }
        }
    }

    /// Adds the item, or replaces the item with the same primary key (class, primary-key attributes
    /// and access group) in either scope, atomically. The stored item has exactly `item`'s scope and
    /// protection: replacing a syncable item with a device-bound one moves it (the other devices of
    /// the group delete their copy), and the reverse starts syncing it. To change a value and keep
    /// what the item was, use ``setPassword(_:service:account:accessibility:scope:)-2mz03`` or
    /// ``update(_:with:)-2bwpa``. A replaced item keeps its creation date.
    ///
    /// - Throws: As ``add(_:)-1xnau``, except `.duplicateItem`.
    public func upsert(_ item: KeychainItem) throws(KeychainError) {
        try save(item, keeping: [])
    }

    /// What ``save(_:keeping:)`` takes from an item it replaces rather than from the new one.
    package struct KeptProperties: OptionSet, Sendable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }
        /// The scope (device-bound or syncable).
        package static let scope = KeptProperties(rawValue: 1)
        /// The accessibility class.
        package static let accessibility = KeptProperties(rawValue: 2)
        /// Whether reading asks for user presence.
        package static let userPresence = KeptProperties(rawValue: 4)
    }

    /// Adds `item`, or replaces the item with the same primary key, taking the properties in
    /// `keeping` from the item replaced. With the scope kept, that is the item reads find
    /// (device-bound first, should an import have left one in each scope), and only it. With a
    /// scope named, it is the item of that scope, and the item of the other scope is removed too (a
    /// move: a syncable one's removal is logged, so the other devices delete it). One transaction.
    /// Returns the item stored, without its value.
    @discardableResult
    package func save(_ item: KeychainItem, keeping: KeptProperties) throws(KeychainError) -> KeychainItem {
        let apply = try stagedSave(item, keeping: keeping)
        return try storage("saving a keychain item") { try vault.environment.write { txn in try apply(txn) } }
    }

    /// ``save(_:keeping:)`` with its checks made now, and its body run in a write transaction (its
    /// own, or a ``VaultTransaction``'s).
    package func stagedSave(
        _ item: KeychainItem,
        keeping: KeptProperties
    ) throws(KeychainError) -> (Transaction) throws -> KeychainItem {
        let session = try KeychainSession(self)
        let item = try withAccessGroup(item)
        var ids: [SyncScope: [UInt8]] = [:]
        for scope in SyncScope.allCases { ids[scope] = try session.index(scope).id(of: item) }
        let candidate = item
        return { [self] txn in
            var existing: [LoadedItem] = []
            for scope in SyncScope.allCases {
                if let id = ids[scope], let loaded = try loadRecord(id: id, session: session, in: txn) {
                    existing.append(loaded)
                }
            }
            // Kept scope: the item reads find (device-bound first), and only that one; a named
            // scope: the item of that scope, or else the other, which moves.
            let replaced =
                keeping.contains(.scope)
                ? existing.first : existing.first { $0.item.scope == candidate.scope } ?? existing.first
            var final = candidate
            if let replaced = replaced?.item {
                if keeping.contains(.scope) { final.scope = replaced.scope }
                if keeping.contains(.accessibility) { final.accessibility = replaced.accessibility }
                if keeping.contains(.userPresence) { final.requiresUserPresence = replaced.requiresUserPresence }
            }
            try final.validate()
            for old in keeping.contains(.scope) ? Array(replaced.map { [$0] } ?? []) : existing {
                try removeRecord(old, session: session, in: txn, logging: old.item.scope != final.scope)
            }
            let created = replaced?.item.creationDate ?? Date()
            let resolved = ResolvedItem(item: final, id: ids[final.scope] ?? [])
            let prepared = try seal(resolved, created: created, session: session)
            try store(prepared, session: session, in: txn)
            var stored = prepared.item
            stored.value = nil
            return stored
        }
    }

    // MARK: Shared by the operations

    /// An item ready to store: access group resolved, dates set, id computed, record sealed.
    package struct PreparedItem {
        package let item: KeychainItem
        package let id: [UInt8]
        package let record: [UInt8]

        package init(item: KeychainItem, id: [UInt8], record: [UInt8]) {
            self.item = item
            self.id = id
            self.record = record
        }
    }

    /// An item read back from storage.
    package struct LoadedItem {
        package let id: [UInt8]
        package let item: KeychainItem

        package init(id: [UInt8], item: KeychainItem) {
            self.id = id
            self.item = item
        }
    }

    /// An item checked for storage, its access group resolved and its id computed; not yet sealed.
    package struct ResolvedItem {
        package let item: KeychainItem
        package let id: [UInt8]

        package init(item: KeychainItem, id: [UInt8]) {
            self.item = item
            self.id = id
        }
    }

    package func resolve(_ item: KeychainItem, session: KeychainSession) throws(KeychainError) -> ResolvedItem {
        try vault.checkOpen()
        try item.validate()
        let item = try withAccessGroup(item)
        return ResolvedItem(item: item, id: try session.index(item.scope).id(of: item))
    }

    /// `item` with its access group resolved (the default one when it names none), once this handle
    /// may use it and the vault is open.
    private func withAccessGroup(_ item: KeychainItem) throws(KeychainError) -> KeychainItem {
        try vault.checkOpen()
        var item = item
        let group = item.attributes.accessGroup ?? defaultAccessGroup
        try checkEntitled(group)
        item.attributes.accessGroup = group.isEmpty ? nil : group
        return item
    }

    package func seal(
        _ resolved: ResolvedItem,
        created: Date,
        session: KeychainSession
    ) throws(KeychainError) -> PreparedItem {
        var item = resolved.item
        item.creationDate = created
        item.modificationDate = Date()
        let (key, epoch) = try session.sealingKey(item.scope, item.accessibility)
        return PreparedItem(
            item: item,
            id: resolved.id,
            record: try ItemRecord.seal(item, id: resolved.id, key: key, epoch: epoch, cipher: session.cipher)
        )
    }

    package func prepare(
        _ item: KeychainItem,
        session: KeychainSession,
        created: Date
    ) throws(KeychainError) -> PreparedItem {
        try seal(try resolve(item, session: session), created: created, session: session)
    }

    /// Writes a prepared item, its index entries and, if it is syncable and `logging` is set, a
    /// change-log entry (an import logs the item's own version instead).
    ///
    /// - Parameter replacing: Whether a record already stored under the item's id is overwritten;
    ///   if not, such a record is left alone, nothing is written, and the call returns `false`.
    @discardableResult
    package func store(
        _ prepared: PreparedItem,
        session: KeychainSession,
        in txn: Transaction,
        logging: Bool = true,
        replacing: Bool = true
    ) throws -> Bool {
        let schema = vault.schema
        // An item's id and its index entries land at random places in large trees: in a vault of a
        // million items each would map pages nobody reads again, while a smaller vault's lookups
        // read the same tree pages again and again (MappedPageBudget.reused).
        txn.noteScatteredTouch(.reused)
        guard try txn.put(schema.items, key: prepared.id, value: prepared.record, overwrite: replacing) else {
            return false
        }
        for entry in try session.index(prepared.item.scope).entries(for: prepared.item, id: prepared.id) {
            txn.noteScatteredTouch(.reused)
            try txn.put(schema.itemIndex, key: entry, value: [UInt8]())
        }
        if logging {
            try ChangeLog.record(
                .itemPut,
                recordID: prepared.id,
                scope: prepared.item.scope,
                description: ItemChangeDescription.describe(prepared.item),
                keys: session.keys,
                cipher: session.cipher,
                in: txn,
                schema: schema
            )
        }
        return true
    }

    /// Removes an item's record and index entries; logs the delete of a syncable item if asked.
    package func removeRecord(_ loaded: LoadedItem, session: KeychainSession, in txn: Transaction, logging: Bool) throws
    {
        let schema = vault.schema
        txn.noteScatteredTouch(.reused)
        try txn.delete(schema.items, key: loaded.id)
        for entry in try session.index(loaded.item.scope).entries(for: loaded.item, id: loaded.id) {
            txn.noteScatteredTouch(.reused)
            try txn.delete(schema.itemIndex, key: entry)
        }
        if logging {
            try ChangeLog.record(
                .itemDelete,
                recordID: loaded.id,
                scope: loaded.item.scope,
                description: ItemChangeDescription.describe(loaded.item),
                keys: session.keys,
                cipher: session.cipher,
                in: txn,
                schema: schema
            )
        }
    }

    /// Reads and opens the record stored under `id`, or `nil` if there is none.
    package func loadRecord(id: [UInt8], session: KeychainSession, in txn: Transaction) throws -> LoadedItem? {
        try loadRecord(id: id, session: session, in: txn) { _ in true } ?? nil
    }

    /// Opens the record stored under `id` straight from the map, if `wanted` accepts its clear header;
    /// `nil` if there is no such record, `.some(nil)` if `wanted` declined it.
    package func loadRecord(
        id: [UInt8],
        session: KeychainSession,
        in txn: Transaction,
        where wanted: (ItemRecord.Header) -> Bool
    ) throws -> LoadedItem?? {
        txn.noteScatteredTouch(.reused)
        return try txn.withValue(vault.schema.items, key: id) { stored -> LoadedItem? in
            let header = try ItemRecord.Header(stored: stored)
            guard wanted(header) else { return nil }
            let key = try session.itemKey(header)
            return LoadedItem(
                id: id,
                item: try ItemRecord.open(stored, id: id, header: header, key: key, cipher: session.cipher)
            )
        }
    }

    /// Whether this handle may see items of `group`.
    package func isVisible(_ group: String?) -> Bool {
        guard let accessGroups else { return true }
        return accessGroups.contains(group ?? "")
    }

    package func checkEntitled(_ group: String) throws(KeychainError) {
        guard isVisible(group) else {
            throw KeychainError(
                .missingEntitlement,
                "this keychain handle was not granted access group '\(group)' (it has: "
                    + "\((accessGroups ?? []).map { "'\($0)'" }.joined(separator: ", ")))"
            )
        }
    }
}

/// The keys and crypto contexts of one keychain operation: a snapshot of the vault's keys (so a
/// concurrent lock never pulls one out mid-operation) and contexts that are not shared between threads
/// while the operation runs. Contexts come from the vault's pool and go back to it afterwards.
package final class KeychainSession {
    package let keys: KeyRing
    private let contexts: KeychainContexts
    private let pool: KeychainContextPool

    package var cipher: AESGCM { contexts.cipher }

    package init(_ keychain: Keychain) throws(KeychainError) {
        keys = try keychain.vault.keyRing()
        pool = keychain.contextPool
        contexts = try pool.take()
    }

    deinit { pool.give(contexts) }

    /// The index (ids and blind index) of `scope`.
    package func index(_ scope: SyncScope) throws(KeychainError) -> ItemIndex {
        let keys = keys
        return try contexts.index(scope) { () throws(CofferError) in
            try keys.key(.index, scope.keyScope, .afterFirstUnlock)
        }
    }

    /// The key that seals new records of `scope` and `accessibility`, and the epoch it belongs to.
    package func sealingKey(
        _ scope: SyncScope,
        _ accessibility: Accessibility
    ) throws(KeychainError) -> (key: SecureBytes, epoch: KeyEpoch) {
        let epoch = keys.currentEpoch(scope.keyScope)
        let key = try Self.itemKey(accessibility) { () throws(CofferError) in
            try keys.key(.item, scope.keyScope, accessibility.level, epoch: epoch)
        }
        return (key, epoch)
    }

    /// The key that opens a record with this header.
    package func itemKey(_ header: ItemRecord.Header) throws(KeychainError) -> SecureBytes {
        try Self.itemKey(header.accessibility) { () throws(CofferError) in
            try keys.key(.item, header.scope.keyScope, header.accessibility.level, epoch: header.epoch)
        }
    }

    /// The item key `lookup` finds, with the error a locked vault gives named for `accessibility`.
    package static func itemKey(
        _ accessibility: Accessibility,
        _ lookup: () throws(CofferError) -> SecureBytes
    ) throws(KeychainError) -> SecureBytes {
        do {
            return try lookup()
        } catch {
            guard error.code == .interactionNotAllowed else { throw error }
            throw KeychainError(
                .interactionNotAllowed,
                "the item is protected \(accessibility.rawValue) and the vault is locked; unlock it first",
                underlying: error
            )
        }
    }
}

extension ItemClass {
    /// `service "mail", account "ann"`, for messages.
    package func primaryKeyDescription(_ attributes: ItemAttributes) -> String {
        ([.accessGroup] + primaryKeyAttributes).compactMap { name in
            attributes[name].map { "\(name.rawValue) '\($0)'" }
        }.joined(separator: ", ")
    }
}
