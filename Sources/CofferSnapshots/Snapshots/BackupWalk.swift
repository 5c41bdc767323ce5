import Foundation

/// What a backup and its dry run settle before walking, checked once for both: the sources, the
/// snapshot's name and host, the exclude rules and limits, and the vault's own directory, which is
/// never backed up.
struct BackupWalk {
    let sources: BackupSources
    let name: String
    let hostname: String
    private let rules: PathSelection
    private let limits: WalkLimits
    private let vaultDirectory: FileIdentity

    /// The walk `options` make of `paths` for the vault behind `snapshots`.
    ///
    /// - Throws: ``CofferError`` `.param` for paths, a name, a host name or options that cannot be,
    ///   or a root that is the vault's own directory.
    init(_ snapshots: Snapshots, paths: [URL], options: BackupOptions) throws(CofferError) {
        sources = try BackupSources(paths)
        try snapshots.vault.checkOpen()
        rules = try PathSelection(excluding: options.excluding, excludingIgnoringCase: options.excludingIgnoringCase)
        limits = try options.walkLimits()
        hostname = try options.checkedHostname()
        vaultDirectory = try snapshots.vault.ownDirectoryIdentity()
        if FileIdentity(path: sources.root) == vaultDirectory {
            throw CofferError(.param, "\(sources.root) is the vault's own directory; back up another directory")
        }
        name = options.name ?? sources.defaultName
        guard !name.isEmpty, name.utf8.count <= 1024 else {
            throw CofferError(.param, "a snapshot name must be 1 to 1024 bytes long")
        }
    }

    /// This host's latest snapshot of the name, read as a stream in step with the walk.
    func previous(_ store: SnapshotStore, cipher: AESGCM, sealedToClassKey: Bool) throws(CofferError) -> TreeStream {
        // A completeUnlessOpen backup reads no earlier snapshot: its writer may hold no key to read
        // one, and its chunks are keyed by its own write.
        guard !sealedToClassKey else { return TreeStream(store: store, record: nil) }
        return TreeStream(store: store, record: try store.previous(named: name, host: hostname, cipher: cipher))
    }

    /// The walker, telling what it cannot read, the vault's directory, and what the options leave out.
    func walker(
        report: @escaping ([UInt8], String) -> Void,
        exclude: @escaping ([UInt8]) -> Void,
        leftOut: @escaping ([UInt8]) -> Void
    ) -> TreeWalker {
        TreeWalker(
            root: Array(sources.root.utf8),
            excluded: [vaultDirectory],
            rules: rules,
            limits: limits,
            targets: sources.targets,
            report: report,
            exclude: exclude,
            leftOut: leftOut
        )
    }
}
