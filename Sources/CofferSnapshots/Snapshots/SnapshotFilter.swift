/// Which snapshots a listing or a retention policy considers (restic's `--host`, `--tag`, `--path`):
/// a snapshot passes if it matches one of the hosts (when any are given), one of the names (when any
/// are given) and all the tags of one of the tag lists (when any are given; `[""]` means untagged).
public struct SnapshotFilter: Sendable, Equatable {
    /// Hosts, any of which passes; empty: every host.
    public var hosts: [String]
    /// Names, any of which passes; empty: every name.
    public var names: [String]
    /// Tag lists, any of which passes when the snapshot has all its tags; empty: any tags.
    public var tags: [[String]]

    /// A filter; with no arguments, one that passes every snapshot.
    public init(hosts: [String] = [], names: [String] = [], tags: [[String]] = []) {
        self.hosts = hosts
        self.names = names
        self.tags = tags
    }

    /// Whether `snapshot` passes.
    public func matches(_ snapshot: SnapshotInfo) -> Bool {
        (hosts.isEmpty || hosts.contains(snapshot.hostname)) && (names.isEmpty || names.contains(snapshot.name))
            && (tags.isEmpty || tags.contains { snapshot.hasAll($0) })
    }
}
