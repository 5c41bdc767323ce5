/// The asynchronous form of the object store's one call of its own, run off Swift's cooperative
/// pool as the vault's are.
extension S3Remote {
    /// Creates the bucket unless it exists; see the synchronous `createBucketIfMissing()`.
    public func createBucketIfMissing() async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.createBucketIfMissing() }
    }
}
