extension Blobs {
    /// The description of the blob `name` (`nil` while there is none), then the description again
    /// after every change to a blob of that name: a write, a deletion, a rename to or from it, made
    /// through this handle, other processes, imports and pulls. A description equal to the last one
    /// is not reported again. While the vault is locked and the blob's manifest needs a key the lock
    /// dropped, the observation waits, and reads it again after an unlock; it ends when the vault is
    /// closed. See ``ValueObservation``.
    ///
    /// ```swift
    /// for try await info in vault.blobs.observe("photos/cat.jpg") {
    ///     print(info.map { "\($0.size) bytes" } ?? "gone")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The blob to observe.
    ///   - pollInterval: How often the vault's journal is read for changes once caught up.
    public func observe(_ name: String, pollInterval: Duration = .milliseconds(100)) -> ValueObservation<BlobInfo?> {
        ValueObservation(
            vault: vault,
            pollInterval: pollInterval,
            // Names are sealed: a change read before the first unlock has none, and may be this blob.
            mayAffect: { change in change.record == .blob && (change.name ?? name) == name },
            read: { [self] () throws(CofferError) in
                do throws(CofferError) {
                    return try stat(name)
                } catch  where error.code == .itemNotFound {
                    return nil
                }
            }
        )
    }
}
