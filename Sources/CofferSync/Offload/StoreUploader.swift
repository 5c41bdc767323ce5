/// Uploads a backup's parts to the store a vault offloads to (``ContentUploader``): pushes, then
/// drops the local copies of what the store now holds down to the cache budget less the room the
/// next part needs, keeping only what reads cached (the backup's own content goes once uploaded).
final class StoreUploader: ContentUploader {
    private let vault: @Sendable () -> Vault?
    private let remote: S3Remote
    /// The cache budget (``OffloadSettings/keep``).
    private let keep: UInt64

    init(vault: Vault, remote: S3Remote, keep: UInt64) {
        self.vault = { [weak vault] in vault }
        self.remote = remote
        self.keep = keep
    }

    var location: String { remote.location.description }

    var partSize: UInt64 { min(max(keep / 4, 64 << 20), 1 << 30) }

    func upload(headroom: UInt64) throws(CofferError) -> [String] {
        guard let vault = vault() else { throw CofferError(.closed, "the vault was closed") }
        let notices = try vault.push(to: remote, progress: nil, beforeHead: {}, keepingPushed: false).notices
        _ = try vault.dropOffloadableChunks(
            remote: remote.identity,
            keep: keep > headroom ? keep - headroom : 0,
            readOnly: true
        )
        return notices
    }
}
