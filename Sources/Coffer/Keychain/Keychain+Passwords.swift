import Foundation

extension Keychain {
    /// The generic password stored for `service` and `account`, or `nil` if there is none (in the
    /// spirit of SSKeychain's `passwordForService:account:`).
    ///
    /// - Throws: ``KeychainError`` for anything but "not found": a locked vault, a refused
    ///   authentication, a tampered record, a value that is not UTF-8 (`.decode`).
    public func password(service: String, account: String) throws(KeychainError) -> String? {
        var query = ItemQuery.genericPassword(service: service, account: account)
        query.returnsValue = true
        let item: KeychainItem
        do {
            guard let found = try find(query).first else { return nil }
            item = found
        } catch  where error.code == .itemNotFound {
            return nil
        }
        guard let value = item.value, let text = String(data: value, encoding: .utf8) else {
            throw KeychainError(
                .decode,
                "the item for service '\(service)', account '\(account)' does not hold UTF-8 text"
            )
        }
        return text
    }

    /// Stores `password` as the generic password for `service` and `account`, replacing any there
    /// (an atomic upsert).
    ///
    /// - Parameters:
    ///   - accessibility: The protection class for a new or replaced item.
    ///   - scope: Whether the password stays on this machine or syncs.
    public func setPassword(
        _ password: String,
        service: String,
        account: String,
        accessibility: Accessibility = .whenUnlocked,
        scope: SyncScope = .deviceBound
    ) throws(KeychainError) {
        var item = KeychainItem(
            .genericPassword,
            value: Data(password.utf8),
            accessibility: accessibility,
            scope: scope
        )
        item.attributes.service = service
        item.attributes.account = account
        try upsert(item)
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
