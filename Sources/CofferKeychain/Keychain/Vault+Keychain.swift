extension Vault {
    /// The keychain tier, limited to the configuration's access groups and using its authentication
    /// handler.
    public var keychain: Keychain {
        Keychain(
            vault: self,
            accessGroups: configuration.accessGroups,
            authenticationHandler: configuration.authenticationHandler
        )
    }

    /// A keychain handle limited to `accessGroups` (a handle for one part of an app, say).
    ///
    /// - Throws: ``KeychainError`` `.missingEntitlement` for a group outside the configuration's, and
    ///   `.param` for an empty list.
    public func keychain(accessGroups: [String]) throws(KeychainError) -> Keychain {
        guard !accessGroups.isEmpty else {
            throw KeychainError(.param, "a keychain handle needs at least one access group")
        }
        if let granted = configuration.accessGroups, let outside = accessGroups.first(where: { !granted.contains($0) })
        {
            throw KeychainError(
                .missingEntitlement,
                "access group '\(outside)' is not among this vault's granted groups"
            )
        }
        return Keychain(
            vault: self,
            accessGroups: accessGroups,
            authenticationHandler: configuration.authenticationHandler
        )
    }
}
