import Foundation

extension Keychain {
    /// Updates every item matching `query` (`SecItemUpdate`), atomically: all of them or none.
    ///
    /// Changing the protection class or the scope seals the item again under the new key (and, for a
    /// scope change, moves it to the other scope's id), and re-indexes it.
    ///
    /// - Returns: How many items were updated.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.duplicateItem` when the
    ///   change would give two items the same primary key, plus the errors of ``add(_:)-1xnau``.
    @discardableResult
    public func update(_ query: ItemQuery, with changes: ItemUpdate) throws(KeychainError) -> Int {
        let apply = try stagedUpdate(query, with: changes)
        return try storage("updating keychain items") { try vault.environment.write { txn in try apply(txn) } }
    }

    /// `update(_:with:)` with its checks made now, and its body run in a write transaction
    /// (its own, or a ``VaultTransaction``'s).
    package func stagedUpdate(
        _ query: ItemQuery,
        with changes: ItemUpdate
    ) throws(KeychainError) -> (Transaction) throws -> Int {
        if let group = changes.attributes.accessGroup { try checkEntitled(group) }
        let session = try KeychainSession(self)
        return { [self] txn in
            let loaded = try matches(query, session: session, in: txn)
            guard !loaded.isEmpty else {
                throw KeychainError(.itemNotFound, "no keychain item matches the query (\(query.summary))")
            }
            let oldIDs = Set(loaded.map(\.id))
            var newIDs = Set<[UInt8]>()
            for old in loaded {
                let updated = changes.applied(to: old.item)
                let prepared = try prepare(updated, session: session, created: old.item.creationDate ?? Date())
                let collides =
                    try !oldIDs.contains(prepared.id) && txn.contains(vault.schema.items, key: prepared.id)
                guard newIDs.insert(prepared.id).inserted, !collides else {
                    throw KeychainError(
                        .duplicateItem,
                        "the update would give two items the same primary key "
                            + "(\(updated.itemClass.primaryKeyDescription(prepared.item.attributes))); nothing was changed"
                    )
                }
                try removeRecord(old, session: session, in: txn, logging: prepared.id != old.id)
                try store(prepared, session: session, in: txn)
            }
            return loaded.count
        }
    }

    /// Deletes every item matching `query` (`SecItemDelete`), atomically.
    ///
    /// - Returns: How many items were deleted.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.interactionNotAllowed` when a
    ///   matching item's protection class is locked.
    @discardableResult
    public func delete(_ query: ItemQuery) throws(KeychainError) -> Int {
        let apply = try stagedDelete(query)
        return try deletion("deleting keychain items", in: vault.environment) { txn in try apply(txn) }
    }

    /// `delete(_:)` run by the returned body in a write transaction (its own, or a
    /// ``VaultTransaction``'s).
    package func stagedDelete(_ query: ItemQuery) throws(KeychainError) -> (Transaction) throws -> Int {
        let session = try KeychainSession(self)
        return { [self] txn in
            let loaded = try matches(query, session: session, in: txn)
            guard !loaded.isEmpty else {
                throw KeychainError(.itemNotFound, "no keychain item matches the query (\(query.summary))")
            }
            for item in loaded { try removeRecord(item, session: session, in: txn, logging: true) }
            return loaded.count
        }
    }
}
