extension Vault {
    /// Runs `body` with a transaction whose keychain and blob writes become visible together when
    /// it returns, or not at all (``VaultTransaction``): a photo and the item describing it, written
    /// so that no reader, sync peer or crash ever sees one without the other.
    ///
    /// ```swift
    /// try vault.write { transaction in
    ///     try transaction.blobs.write("photos/cat.jpg", contentsOf: photoURL)
    ///     try transaction.keychain.set(PhotoInfo(taken: date), for: KeychainKey(service: "photos", account: "cat.jpg"))
    /// }
    /// ```
    ///
    /// The closure may throw any error (it is the app's code, as in GRDB's `write`), so this call is
    /// not typed: catch ``CofferError`` by type.
    ///
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, as it threw it (nothing is written then), or ``CofferError`` from
    ///   the calls it made and from the commit: `.duplicateItem`, `.itemNotFound` and the other
    ///   errors of the calls staged, `.diskFull`.
    @discardableResult
    public func write<Result>(_ body: (VaultTransaction) throws -> Result) throws -> Result {
        let transaction = VaultTransaction(vault: self)
        let result: Result
        do {
            result = try body(transaction)
        } catch {
            transaction.abandon(
                error as? CofferError ?? CofferError(.userCanceled, "the transaction's closure threw: \(error)")
            )
            throw error
        }
        try transaction.commit()
        return result
    }

    /// ``write(_:)-63bov``, off Swift's cooperative pool: the content a transaction streams and its
    /// commit wait for the disk.
    @discardableResult
    public func write<Result: Sendable>(
        _ body: @escaping @Sendable (VaultTransaction) throws -> Result
    ) async throws -> Result {
        let outcome = try await offload { () throws(CofferError) -> Swift.Result<Result, any Error> in
            do {
                return .success(try self.write(body))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
