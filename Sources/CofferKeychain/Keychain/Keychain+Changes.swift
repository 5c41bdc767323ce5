import Foundation

/// A change to a keychain item that matched a query (``Keychain/changes(matching:after:pollInterval:)``).
public struct KeychainChange: Sendable, Hashable {
    /// The change as the vault's journal has it (position, operation, scope, origin, date).
    public let change: VaultChange
    /// The item's class.
    public let itemClass: ItemClass
    /// The item's attributes after a put, or before a delete (never its value).
    public let attributes: ItemAttributes
}

/// The changes to items matching a query, as an `AsyncSequence`.
public struct KeychainChanges: AsyncSequence, Sendable {
    /// A change.
    public typealias Element = KeychainChange
    /// What reading the journal throws.
    public typealias Failure = CofferError

    let changes: VaultChanges
    let query: ItemQuery
    let keychain: Keychain

    /// Reads the vault's changes and keeps the items' that match.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var changes: VaultChanges.AsyncIterator
        let query: ItemQuery
        let keychain: Keychain

        /// The next matching change; `nil` once the vault is closed or the task cancelled.
        public mutating func next() async throws(CofferError) -> KeychainChange? {
            while let change = try await changes.next() {
                guard change.record == .item, let scope = change.scope, query.scope.scopes.contains(scope),
                    !change.detail.isEmpty,
                    let (itemClass, attributes) = try? ItemChangeDescription.read(change.detail)
                else { continue }
                guard query.itemClass.map({ $0 == itemClass }) ?? true, attributes.matches(query.attributes),
                    keychain.isVisible(attributes.accessGroup)
                else { continue }
                return KeychainChange(change: change, itemClass: itemClass, attributes: attributes)
            }
            return nil
        }
    }

    /// Starts reading.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(changes: changes.makeAsyncIterator(), query: query, keychain: keychain)
    }
}

extension Keychain {
    /// The changes to items matching `query` (its class, attributes and scope; limit and values do
    /// not apply) in the access groups this handle sees, after `position` (from this call on when `nil`):
    /// made through this handle, other processes, imports and pulls. Items' attributes are read from
    /// the journal, sealed under a key held from the first unlock, so a vault not unlocked since it
    /// was opened reports no item changes. See ``Vault/changes(after:pollInterval:)``.
    ///
    /// ```swift
    /// for try await change in vault.keychain.changes(matching: .genericPassword(service: "mail", account: "ann")) {
    ///     print(change.change.operation, change.attributes.account ?? "")
    /// }
    /// ```
    public func changes(
        matching query: ItemQuery,
        after position: ChangePosition? = nil,
        pollInterval: Duration = .milliseconds(100)
    ) -> KeychainChanges {
        KeychainChanges(
            changes: vault.changes(after: position, pollInterval: pollInterval),
            query: query,
            keychain: self
        )
    }
}
