import Foundation

extension Keychain {
    /// Finds items (`SecItemCopyMatching`): every item of the query's class whose attributes match the
    /// query's, in a fixed order (class, access group, then the primary-key attributes, then scope).
    ///
    /// Values are returned only when `query.returnsValue` is set; items that require user presence then
    /// ask the authentication handler first.
    ///
    /// - Returns: The matching items; one at most with `limit: .one`.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.interactionNotAllowed` when
    ///   a matching item's protection class is locked (or presence is required and there is no
    ///   handler), `.userCanceled` or `.authFailed` when the handler refuses, `.missingEntitlement` for
    ///   a query naming an access group this handle was not granted, `.decode` for a tampered record.
    public func find(_ query: ItemQuery) throws(KeychainError) -> [KeychainItem] {
        let items = try items(matching: query)
        guard !items.isEmpty else {
            throw KeychainError(.itemNotFound, "no keychain item matches the query (\(query.summary))")
        }
        return items
    }

    /// The items matching `query`, as ``find(_:)-n57e`` finds them, but an empty array when nothing
    /// matches: for listings, where "none" is an answer and not an error.
    ///
    /// - Throws: ``KeychainError`` as ``find(_:)-n57e`` does, except `.itemNotFound`.
    public func items(matching query: ItemQuery) throws(KeychainError) -> [KeychainItem] {
        let session = try KeychainSession(self)
        let matches = try storage("finding keychain items") {
            try vault.environment.read { txn in try self.matches(query, session: session, in: txn) }
        }
        var items = matches.map(\.item)
        if query.limit == .one { items = Array(items.prefix(1)) }
        guard !items.isEmpty else { return [] }
        if query.returnsValue {
            try confirmPresence(for: items)
        } else {
            for index in items.indices { items[index].value = nil }
        }
        return items
    }

    /// Every stored item matching `query` that this handle may see, in the keychain's order.
    package func matches(_ query: ItemQuery, session: KeychainSession, in txn: Transaction) throws -> [LoadedItem] {
        if let group = query.attributes.accessGroup { try checkEntitled(group) }
        let scopes = query.scope.scopes
        // Items in no group store none; a query for the empty group means them.
        let wantedGroup = query.attributes.accessGroup
        var results: [LoadedItem] = []
        for id in try candidateIDs(query, session: session, in: txn) {
            let record = try loadRecord(id: id, session: session, in: txn) { header in
                (query.itemClass == nil || header.itemClass == query.itemClass) && scopes.contains(header.scope)
            }
            guard let found = record, let loaded = found else { continue }
            let group = loaded.item.attributes.accessGroup
            guard isVisible(group), wantedGroup == nil || (group ?? "") == wantedGroup,
                loaded.item.attributes.matches(query.attributes, ignoring: .accessGroup)
            else { continue }
            results.append(loaded)
        }
        guard results.count > 1 else { return results }
        // Each key is built once, not once per comparison.
        return results.map { ($0.item.sortKey, $0) }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            .map(\.1)
    }

    /// The ids of the records that can match `query`, from the narrowest lookup available: the exact
    /// id when the whole primary key is known; else the records listed under the most selective indexed
    /// attribute the query names, kept only if their entries for the query's other indexed attributes
    /// (and class) exist too, checked by point lookups; else every record.
    private func candidateIDs(_ query: ItemQuery, session: KeychainSession, in txn: Transaction) throws -> [[UInt8]] {
        let schema = vault.schema
        let group = query.attributes.accessGroup ?? (accessGroups?.count == 1 ? accessGroups![0] : nil)
        // In order of selectivity; items in no group have no group entry, so the empty group cannot narrow.
        var conditions: [(tag: UInt8, value: [UInt8])] = ItemIndex.indexedAttributes.compactMap { name in
            guard let value = query.attributes[name], value != .text("") || name != .accessGroup else { return nil }
            return (name.code, value.encoded)
        }
        // The class narrows only a query with nothing else indexed: otherwise each candidate's class
        // is checked on its record's clear header (before anything is opened), which is one lookup
        // and no keyed hash where the class's index entry would be both.
        if let itemClass = query.itemClass, conditions.isEmpty {
            conditions.append((ItemIndex.classTag, [itemClass.code]))
        }
        guard let first = conditions.first else {
            var ids: [[UInt8]] = []
            try txn.forEach(in: schema.items) { key, _ in
                ids.append(Array(key))
                return true
            }
            return ids
        }
        var ids: [[UInt8]] = []
        for scope in query.scope.scopes {
            let index = try session.index(scope)
            if let itemClass = query.itemClass, let group,
                itemClass.primaryKeyAttributes.allSatisfy({ query.attributes[$0] != nil })
            {
                ids.append(try index.id(of: itemClass, attributes: query.attributes, group: group))
                continue
            }
            let others = try conditions.dropFirst().map { try index.prefix(tag: $0.tag, value: $0.value) }
            // Each lookup lands at a random place in a large tree (Environment.noteScatteredTouch).
            txn.noteScatteredTouch(.reused)
            try txn.forEach(in: schema.itemIndex, prefix: try index.prefix(tag: first.tag, value: first.value)) {
                key,
                _ in
                let id = Array(key.dropFirst(ItemIndex.prefixSize))
                if try others.allSatisfy({
                    txn.noteScatteredTouch(.reused)
                    return try txn.contains(schema.itemIndex, key: $0 + id)
                }) {
                    ids.append(id)
                }
                return true
            }
        }
        return ids
    }

    /// Asks the authentication handler before values of protected items are returned.
    private func confirmPresence(for items: [KeychainItem]) throws(KeychainError) {
        let protected = items.filter(\.requiresUserPresence)
        guard !protected.isEmpty else { return }
        guard let authenticationHandler else {
            throw KeychainError(
                .interactionNotAllowed,
                "reading \(protected.count == 1 ? "this item" : "these items") requires user presence, and no "
                    + "authentication handler is set (Vault.Configuration.authenticationHandler)"
            )
        }
        let names = protected.prefix(3).map { $0.itemClass.primaryKeyDescription($0.attributes) }
        let reason =
            "read \(protected.count) item\(protected.count == 1 ? "" : "s") that require\(protected.count == 1 ? "s" : "") user presence ("
            + names.joined(separator: "; ") + (protected.count > 3 ? "; …" : "") + ")"
        switch authenticationHandler(AuthenticationRequest(reason: reason, itemCount: protected.count, vault: vault)) {
        case .granted: return
        case .canceled: throw KeychainError(.userCanceled, "authentication was canceled; nothing was revealed")
        case .failed: throw KeychainError(.authFailed, "authentication failed; nothing was revealed")
        }
    }
}

extension KeychainItem {
    /// The keychain's order: class, access group, primary-key attributes, scope.
    package var sortKey: [String] {
        [String(itemClass.code)]
            + ([.accessGroup] + itemClass.primaryKeyAttributes).map { attributes[$0]?.description ?? "" }
            + [scope.rawValue]
    }
}

extension ItemQuery {
    /// `generic passwords with service 'mail'`, for messages.
    package var summary: String {
        let kind = itemClass.map { $0 == .identity ? "identities" : "\($0.spokenName)s" } ?? "items"
        if itemClass == nil, attributes.setAttributes.isEmpty, scope == .any { return "any item" }
        let conditions = attributes.setAttributes.map { "\($0.name.rawValue) '\($0.value)'" }
        let scopeText = scope == .any ? "" : " (\(scope.rawValue) only)"
        return (conditions.isEmpty ? kind : "\(kind) with " + conditions.joined(separator: ", ")) + scopeText
    }
}

extension ItemClass {
    /// The class in words, for messages: `generic password`.
    package var spokenName: String {
        switch self {
        case .genericPassword: "generic password"
        case .internetPassword: "internet password"
        case .key: "key"
        case .certificate: "certificate"
        case .identity: "identity"
        }
    }
}
