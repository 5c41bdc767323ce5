public import Foundation

/// The asynchronous forms of the object-store sync operations. Each runs its synchronous twin on a
/// global dispatch queue, so network, file and LMDB I/O never occupy a thread of Swift's cooperative
/// pool.
extension Vault {
    /// Uploads this vault's changes to `remote`; see ``push(to:progress:)-4qpe7``.
    @discardableResult
    public func push(to remote: S3Remote, progress: SyncProgress? = nil) async throws(CofferError) -> PushSummary {
        try await offload { () throws(CofferError) in try self.push(to: remote, progress: progress) }
    }

    /// Applies the other devices' new bundles from `remote`; see ``pull(from:progress:)-1vcpy``.
    @discardableResult
    public func pull(from remote: S3Remote, progress: SyncProgress? = nil) async throws(CofferError) -> PullSummary {
        try await offload { () throws(CofferError) in try self.pull(from: remote, progress: progress) }
    }

    /// Replaces `remote`'s history with a checkpoint; see ``compact(remote:progress:)-1cnf4``.
    @discardableResult
    public func compact(remote: S3Remote, progress: SyncProgress? = nil) async throws(CofferError) -> CompactSummary {
        try await offload { () throws(CofferError) in try self.compact(remote: remote, progress: progress) }
    }

    /// Creates a vault that joins the sync group pushing to `remote`; see
    /// ``join(remote:at:passphrase:configuration:content:progress:)-3lqih``.
    public static func join(
        remote: S3Remote,
        at directory: URL,
        passphrase: Passphrase,
        configuration: Configuration = Configuration(),
        content: JoinedContent = .whole,
        progress: SyncProgress? = nil
    ) async throws(CofferError) -> (vault: Vault, summary: PullSummary) {
        let joined = try await offload { () throws(CofferError) in
            let (vault, summary) = try Vault.join(
                remote: remote,
                at: directory,
                passphrase: passphrase,
                configuration: configuration,
                content: content,
                progress: progress
            )
            return RemoteJoinResult(vault: vault, summary: summary)
        }
        return (joined.vault, joined.summary)
    }

    private struct RemoteJoinResult: Sendable {
        package let vault: Vault
        package let summary: PullSummary
    }
}

extension Vault {
    /// Keeps content in `remote` and at most `keep` bytes of it here; see
    /// ``offloadContent(to:keep:progress:)-4e8mf``.
    @discardableResult
    public func offloadContent(
        to remote: S3Remote,
        keep: UInt64 = 0,
        progress: SyncProgress? = nil
    ) async throws(CofferError) -> OffloadSummary {
        try await offload { () throws(CofferError) in
            try self.offloadContent(to: remote, keep: keep, progress: progress)
        }
    }
}
