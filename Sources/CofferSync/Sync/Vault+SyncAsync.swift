public import Foundation

/// The asynchronous forms of the sync operations. Each runs its synchronous twin on a global dispatch
/// queue, so file and LMDB I/O never occupy a thread of Swift's cooperative pool.
extension Vault {
    /// Writes a bundle of this vault's syncable records; see ``export(to:peer:progress:)``.
    @discardableResult
    public func export(
        to url: URL,
        peer: String? = nil,
        progress: SyncProgress? = nil
    ) async throws(CofferError)
        -> ExportSummary
    {
        try await offload { () throws(CofferError) in try self.export(to: url, peer: peer, progress: progress) }
    }

    /// Imports a bundle; see ``import(from:progress:)-6f60g``.
    @discardableResult
    public func `import`(from url: URL, progress: SyncProgress? = nil) async throws(CofferError) -> ImportSummary {
        try await offload { () throws(CofferError) in try self.import(from: url, progress: progress) }
    }

    /// Creates a vault that joins the sync group of `bundle`; see
    /// ``join(bundle:at:passphrase:configuration:progress:)``.
    public static func join(
        bundle: URL,
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration(),
        progress: SyncProgress? = nil
    ) async throws(CofferError) -> (vault: Vault, summary: ImportSummary) {
        let joined = try await offload { () throws(CofferError) in
            let (vault, summary) = try Vault.join(
                bundle: bundle,
                at: directory,
                passphrase: passphrase,
                configuration: configuration,
                progress: progress
            )
            return JoinResult(vault: vault, summary: summary)
        }
        return (joined.vault, joined.summary)
    }

    private struct JoinResult: Sendable {
        package let vault: Vault
        package let summary: ImportSummary
    }

    /// The peers this vault exported to; see ``syncPeers()-59bjh``.
    public func syncPeers() async throws(CofferError) -> [SyncPeer] {
        try await offload { () throws(CofferError) in try self.syncPeers() }
    }
}
