import Dispatch

/// The asynchronous forms of the keychain operations. Each runs its synchronous twin on a global
/// dispatch queue, so LMDB's blocking I/O and scrypt never occupy a thread of Swift's cooperative pool,
/// and no transaction ever spans a suspension point.
extension Keychain {
    /// Adds an item; see ``add(_:)-1xnau``.
    public func add(_ item: KeychainItem) async throws(KeychainError) {
        try await offload { () throws(KeychainError) in try self.add(item) }
    }

    /// Adds several items atomically; see ``add(contentsOf:)``.
    public func add(contentsOf items: [KeychainItem]) async throws(KeychainError) {
        try await offload { () throws(KeychainError) in try self.add(contentsOf: items) }
    }

    /// Adds or replaces an item; see ``upsert(_:)``.
    public func upsert(_ item: KeychainItem) async throws(KeychainError) {
        try await offload { () throws(KeychainError) in try self.upsert(item) }
    }

    /// Finds items; see ``find(_:)``.
    public func find(_ query: ItemQuery) async throws(KeychainError) -> [KeychainItem] {
        try await offload { () throws(KeychainError) in try self.find(query) }
    }

    /// Lists items, none being an empty array; see ``items(matching:)``.
    public func items(matching query: ItemQuery) async throws(KeychainError) -> [KeychainItem] {
        try await offload { () throws(KeychainError) in try self.items(matching: query) }
    }

    /// Updates items; see ``update(_:with:)``.
    @discardableResult
    public func update(_ query: ItemQuery, with changes: ItemUpdate) async throws(KeychainError) -> Int {
        try await offload { () throws(KeychainError) in try self.update(query, with: changes) }
    }

    /// Deletes items; see ``delete(_:)``.
    @discardableResult
    public func delete(_ query: ItemQuery) async throws(KeychainError) -> Int {
        try await offload { () throws(KeychainError) in try self.delete(query) }
    }

    /// Reads a generic password; see ``password(service:account:)``.
    public func password(service: String, account: String) async throws(KeychainError) -> String? {
        try await offload { () throws(KeychainError) in try self.password(service: service, account: account) }
    }

    /// Stores a generic password; see ``setPassword(_:service:account:accessibility:scope:)``.
    public func setPassword(
        _ password: String,
        service: String,
        account: String,
        accessibility: Accessibility? = nil,
        scope: SyncScope? = nil
    ) async throws(KeychainError) {
        try await offload { () throws(KeychainError) in
            try self.setPassword(
                password,
                service: service,
                account: account,
                accessibility: accessibility,
                scope: scope
            )
        }
    }

    /// Deletes a generic password; see ``deletePassword(service:account:)-77mj3``.
    @discardableResult
    public func deletePassword(service: String, account: String) async throws(KeychainError) -> Bool {
        try await offload { () throws(KeychainError) in try self.deletePassword(service: service, account: account) }
    }
}
