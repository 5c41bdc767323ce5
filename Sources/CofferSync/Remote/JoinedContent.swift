/// What a vault joining through an object store keeps of the group's content
/// (``Vault/join(remote:at:passphrase:configuration:content:progress:)-3lqih``).
public enum JoinedContent: Sendable, Equatable, Hashable {
    /// Everything: the vault holds every chunk the group pushed, as any vault that joins from a bundle.
    case whole
    /// The records, their chunk lists and snapshot trees, and at most `keep` bytes of content, the
    /// rest read from the store on demand: the vault is offloaded to the store from the start
    /// (``Vault/offloadContent(to:keep:progress:)-4e8mf``).
    case thin(keep: UInt64)
}
