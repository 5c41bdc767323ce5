extension Keychain {
    /// The items matching `query`, then the items again after every change that may alter them, as
    /// ``find(_:)-n57e`` returns them (an empty array when none match): made through this handle, other
    /// processes, imports and pulls. A result equal to the last one is not reported again. While the
    /// vault is locked and the items need a key the lock dropped, the observation waits, and reads
    /// them again after an unlock; it ends when the vault is closed. See ``ValueObservation``.
    ///
    /// With `query.returnsValue` set, items that require user presence ask the authentication handler
    /// at every read: observe such items without their values.
    ///
    /// ```swift
    /// var query = ItemQuery(.genericPassword)
    /// query.attributes.service = "mail"
    /// for try await items in vault.keychain.observe(query) {
    ///     show(items.compactMap(\.attributes.account))
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - query: The items to observe, as for ``find(_:)-n57e``.
    ///   - pollInterval: How often the vault's journal is read for changes once caught up.
    public func observe(
        _ query: ItemQuery,
        pollInterval: Duration = .milliseconds(100)
    ) -> ValueObservation<[KeychainItem]> {
        let scopes = query.scope.scopes
        return ValueObservation(
            vault: vault,
            pollInterval: pollInterval,
            mayAffect: { [self] change in
                guard change.record == .item, change.scope.map(scopes.contains) ?? true else { return false }
                // Attributes are not compared: an update can take an item out of the query's results.
                guard !change.detail.isEmpty,
                    let (itemClass, attributes) = try? ItemChangeDescription.read(change.detail)
                else { return true }
                return (query.itemClass.map { $0 == itemClass } ?? true) && isVisible(attributes.accessGroup)
            },
            read: { [self] () throws(CofferError) in
                do throws(CofferError) {
                    return try find(query)
                } catch  where error.code == .itemNotFound {
                    return []
                }
            }
        )
    }
}
