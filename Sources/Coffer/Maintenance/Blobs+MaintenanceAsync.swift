/// The asynchronous forms of the vault-wide maintenance. Each runs its synchronous twin on a global
/// dispatch queue, so reading every chunk and LMDB's blocking I/O never occupy a thread of Swift's
/// cooperative pool. In an `async` function Swift picks these; the two forms have the same semantics
/// and throw the same errors.
extension Blobs {
    /// Frees what no blob will use after crashes; see ``collectGarbage()-5m133``.
    public func collectGarbage() async throws(CofferError) -> GarbageCollectionReport {
        try await offload { () throws(CofferError) in try self.collectGarbage() }
    }

    /// Checks the blob tier; see ``verify(readingData:)-53rte``.
    public func verify(readingData: Bool = false) async throws(CofferError) -> VerificationReport {
        try await offload { () throws(CofferError) in try self.verify(readingData: readingData) }
    }

    /// Checks the blob tier, reporting how much content it has read; see
    /// ``verify(readingData:progress:)-5bwx3``.
    public func verify(
        readingData: Bool,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(CofferError) -> VerificationReport {
        try await offload { () throws(CofferError) in try self.verify(readingData: readingData, progress: progress) }
    }

    /// Checks the structure, then reads only the chunks of `subset`; see
    /// ``verify(readingDataSubset:)-3zhpn``.
    public func verify(readingDataSubset subset: DataSubset) async throws(CofferError) -> VerificationReport {
        try await offload { () throws(CofferError) in try self.verify(readingDataSubset: subset) }
    }

    /// Checks as ``verify(readingDataSubset:)-3zhpn`` does, reporting how much it has read; see
    /// ``verify(readingDataSubset:progress:)-71p3z``.
    public func verify(
        readingDataSubset subset: DataSubset,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(CofferError) -> VerificationReport {
        try await offload { () throws(CofferError) in try self.verify(readingDataSubset: subset, progress: progress) }
    }

    /// Counts and sizes of what the blob tier holds; see ``statistics()-8jzhe``.
    public func statistics() async throws(CofferError) -> BlobStatistics {
        try await offload { () throws(CofferError) in try self.statistics() }
    }
}
