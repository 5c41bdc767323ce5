package import Coffer
import Foundation

/// The read-only file system `coffer mount` shows, with no FUSE in it: paths in, attributes, listings
/// and bytes out, so that it is tested like any other code.
///
/// ```
/// snapshots/NAME/TIME/…   each snapshot by name (escaped: `/` as %2F) and time (UTC, to the second)
/// snapshots/NAME/latest   a symbolic link to the newest TIME
/// ids/ID/…                each snapshot by its full id
/// blobs/NAME              each blob (names escaped alike)
/// ```
///
/// A snapshot's tree is read a directory at a time (``TreeDirectory``), the directories asked for
/// kept in a cache bounded by entry count; files are read chunk by chunk through a
/// ``ContentRangeReader`` and a shared ``DecodedChunkCache`` bounded by bytes, so memory stays
/// bounded whatever is read. While the vault is locked its `whenUnlocked` blobs are not shown, not
/// readable (even if opened before), and their chunks are dropped from the cache. Safe to use from
/// several threads.
package final class VaultView: Sendable {
    /// One open file: the reader of its content.
    package final class OpenFile: Sendable {
        /// How the file is named in the view, for messages.
        package let path: String
        /// Whether its content never changes while mounted (a snapshot's file; a blob can be replaced).
        package let isImmutable: Bool
        fileprivate let reader: ContentRangeReader

        fileprivate init(path: String, isImmutable: Bool, reader: ContentRangeReader) {
            self.path = path
            self.isImmutable = isImmutable
            self.reader = reader
        }
    }

    /// One name in a directory listing.
    package struct Listed: Sendable, Equatable {
        /// The name's bytes.
        package let name: [UInt8]
        /// What `stat` shows of it.
        package let attributes: NodeAttributes
    }

    private struct DirectoryKey: Hashable, Sendable {
        let snapshot: [UInt8]
        let path: [UInt8]
    }

    private enum TreeNode {
        /// The snapshot's top directory (the backed-up one), its listing not read yet.
        case top
        case child(TreeDirectory.Child)
    }

    private enum Node {
        case top, snapshots, ids, blobs
        case name(SnapshotIndex.Name)
        case latest(target: [UInt8])
        case tree(SnapshotRecord, TreeNode)
        case blob(BlobManifest)
    }

    private let vault: Vault
    private let chunks: DecodedChunkCache
    private let directories: BoundedCache<DirectoryKey, TreeDirectory>
    private let owner: (uid: UInt32, gid: UInt32)
    private let mountedAt: NodeAttributes.Timestamp
    /// The snapshots, read again when older than a second (others may back up meanwhile).
    private let snapshotIndex = Locked<(index: SnapshotIndex, read: ContinuousClock.Instant)?>(nil)
    private let sawLocked = Locked(false)
    /// Each snapshot's root entry once read (`nil` for versions 1 and 2), by id: one small entry each.
    private let rootEntries = Locked<[[UInt8]: TreeEntry?]>([:])
    private let report: @Sendable (String) -> Void

    /// A view of `vault`, which must stay open while the view is used.
    ///
    /// - Parameters:
    ///   - chunkCacheBytes: Plaintext of opened chunks kept for reads to come.
    ///   - directoryCacheEntries: Entries of snapshot directories kept for lookups and listings.
    ///   - owner: Who owns the directories the view makes up.
    ///   - report: Told of each failure that is not a plain "no such path" (a damaged chunk), since
    ///     the kernel passes on only an error number.
    package init(
        vault: Vault,
        chunkCacheBytes: Int = 16 << 20,
        directoryCacheEntries: Int = 100_000,
        owner: (uid: UInt32, gid: UInt32),
        report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.vault = vault
        chunks = DecodedChunkCache(budget: chunkCacheBytes)
        directories = BoundedCache(budget: directoryCacheEntries)
        self.owner = owner
        mountedAt = NodeAttributes.Timestamp(Date())
        self.report = report
    }

    /// The plaintext bytes of opened chunks held now.
    package var cachedChunkBytes: Int { chunks.heldBytes }

    // MARK: Operations

    /// What `stat` shows of `path` (`/`-separated bytes, relative to the mount point).
    package func attributes(of path: [UInt8]) throws(MountError) -> NodeAttributes {
        try attributes(of: try resolve(path))
    }

    /// What is directly in the directory at `path`, by name.
    package func list(_ path: [UInt8]) throws(MountError) -> [Listed] {
        let virtual = NodeAttributes.virtualDirectory(owner: owner, time: mountedAt)
        switch try resolve(path) {
        case .top:
            return ["blobs", "ids", "snapshots"].map { Listed(name: Array($0.utf8), attributes: virtual) }
        case .snapshots:
            var listed: [Listed] = []
            for (component, name) in try snapshots().names {
                listed.append(Listed(name: component, attributes: try attributes(of: .name(name))))
            }
            return listed
        case .name(let name):
            var listed: [Listed] = []
            for (time, record) in name.times {
                listed.append(Listed(name: time, attributes: try attributesOfTop(of: record)))
            }
            if let latest = name.latest {
                listed.append(
                    Listed(name: Array("latest".utf8), attributes: try attributes(of: .latest(target: latest)))
                )
            }
            return listed
        case .ids:
            var listed: [Listed] = []
            for record in try snapshots().records {
                listed.append(Listed(name: Array(record.info.id.utf8), attributes: try attributesOfTop(of: record)))
            }
            return listed
        case .blobs:
            let manifests = try failing("listing the blobs") { () throws(CofferError) in
                try vault.blobs.readableManifests()
            }
            return manifests.map { Listed(name: MountNames.component(for: $0.name), attributes: attributes(of: $0)) }
        case .tree(let record, .top):
            return Self.listing(try top(of: record))
        case .tree(let record, .child(let child)):
            guard child.entry.kind == .directory else { throw .notDirectory }
            return Self.listing(try self.directory(child, of: record))
        case .latest, .blob:
            throw .notDirectory
        }
    }

    /// The target of the symbolic link at `path`.
    package func linkTarget(of path: [UInt8]) throws(MountError) -> [UInt8] {
        switch try resolve(path) {
        case .latest(let target):
            return target
        case .tree(_, .child(let child)) where child.entry.kind == .symlink:
            return child.entry.linkTarget ?? []
        default:
            throw .notSymlink
        }
    }

    /// The extended attributes recorded for `path` (none for what the view makes up and for blobs).
    package func extendedAttributes(of path: [UInt8]) throws(MountError) -> [(name: [UInt8], value: [UInt8])] {
        switch try resolve(path) {
        case .tree(_, .child(let child)):
            return child.entry.attributes.map { ($0.name, $0.value) }
        case .tree(let record, .top):
            return (try rootEntry(of: record)?.attributes ?? []).map { ($0.name, $0.value) }
        default:
            return []
        }
    }

    /// Opens the file at `path` for reading.
    package func open(_ path: [UInt8]) throws(MountError) -> OpenFile {
        let shown = "/" + EntryPath.display(path)
        switch try resolve(path) {
        case .tree(let record, .child(let child)) where child.entry.kind == .file:
            return try openContent(shown, isImmutable: true) { () throws(CofferError) in
                try FileContent(child.entry, scope: record.scope, level: record.level, write: record.write)
            }
        case .blob(let manifest):
            return try openContent(shown, isImmutable: false) { manifest }
        case .top, .snapshots, .ids, .blobs, .name, .tree(_, .top):
            throw .isDirectory
        case .tree(_, .child(let child)) where child.entry.kind == .directory:
            throw .isDirectory
        case .latest, .tree:
            // Symbolic links are followed by the kernel; FIFOs, sockets and devices are not opened here.
            throw .notFound
        }
    }

    private func openContent(
        _ shown: String,
        isImmutable: Bool,
        _ content: () throws(CofferError) -> some StoredContent
    ) throws(MountError) -> OpenFile {
        try failing("opening \(shown)") { () throws(CofferError) in
            let reader = try ContentRangeReader(
                try content(),
                environment: vault.environment,
                store: ContentStore(schema: vault.schema),
                cache: chunks
            )
            return OpenFile(path: shown, isImmutable: isImmutable, reader: reader)
        }
    }

    /// Reads bytes of `file` from `offset` into `buffer`; fewer than it holds only at the end.
    package func read(
        _ file: OpenFile,
        at offset: UInt64,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(MountError)
        -> Int
    {
        noteLockState()
        return try failing("reading \(file.path)") { () throws(CofferError) in
            try file.reader.read(at: offset, into: buffer, keys: try vault.keyRing())
        }
    }

    // MARK: Resolving paths

    private func resolve(_ path: [UInt8]) throws(MountError) -> Node {
        noteLockState()
        let parts = path.split(separator: UInt8(ascii: "/")).map { Array($0) }
        guard let first = parts.first else { return .top }
        switch String(decoding: first, as: UTF8.self) {
        case "snapshots":
            guard parts.count > 1 else { return .snapshots }
            guard let name = try snapshots().name(parts[1]) else { throw .notFound }
            guard parts.count > 2 else { return .name(name) }
            if parts[2] == Array("latest".utf8), let latest = name.latest {
                guard parts.count == 3 else { throw .notDirectory }
                return .latest(target: latest)
            }
            guard let record = name.snapshot(at: parts[2]) else { throw .notFound }
            return .tree(record, try treeNode(parts.dropFirst(3), in: record))
        case "ids":
            guard parts.count > 1 else { return .ids }
            let id = String(decoding: parts[1], as: UTF8.self)
            guard let record = try snapshots().snapshot(id: id) else { throw .notFound }
            return .tree(record, try treeNode(parts.dropFirst(2), in: record))
        case "blobs":
            guard parts.count > 1 else { return .blobs }
            guard parts.count == 2 else { throw .notDirectory }
            guard let name = MountNames.name(fromComponent: parts[1]) else { throw .notFound }
            do {
                return .blob(try vault.blobs.reader().manifest(of: name))
            } catch  where error.code == .itemNotFound || error.code == .interactionNotAllowed {
                throw .notFound
            } catch {
                throw failure(error, while: "looking up blob '\(name)'")
            }
        default:
            throw .notFound
        }
    }

    private func treeNode(_ names: ArraySlice<[UInt8]>, in record: SnapshotRecord) throws(MountError) -> TreeNode {
        var node = TreeNode.top
        for (index, name) in names.enumerated() {
            let current: TreeDirectory
            switch node {
            case .top:
                current = try top(of: record)
            case .child(let child):
                guard child.entry.kind == .directory else { throw .notDirectory }
                current = try directory(child, of: record)
            }
            guard let child = current.child(named: name) else { throw .notFound }
            node = .child(child)
            if index == names.count - 1 { break }
        }
        return node
    }

    // MARK: Reading the vault

    private func snapshots() throws(MountError) -> SnapshotIndex {
        let now = ContinuousClock.now
        if let held = snapshotIndex.withLock({ $0 }), now - held.read < .seconds(1) { return held.index }
        let records = try failing("listing the snapshots") { () throws(CofferError) in
            let snapshots = vault.snapshots
            return try snapshots.snapshotStore(try vault.keyRing()).all(cipher: try snapshots.makeCipher())
        }
        let index = SnapshotIndex(records)
        snapshotIndex.withLock { $0 = (index, now) }
        return index
    }

    private func top(of record: SnapshotRecord) throws(MountError) -> TreeDirectory {
        try cachedDirectory(DirectoryKey(snapshot: record.id, path: []), of: record) { store throws(CofferError) in
            try TreeDirectory.top(of: record, store: store)
        }
    }

    private func directory(_ child: TreeDirectory.Child, of record: SnapshotRecord) throws(MountError) -> TreeDirectory
    {
        try cachedDirectory(DirectoryKey(snapshot: record.id, path: child.entry.path), of: record) {
            store throws(CofferError) in
            try TreeDirectory.read(child, of: record, store: store)
        }
    }

    private func cachedDirectory(
        _ key: DirectoryKey,
        of record: SnapshotRecord,
        read: (SnapshotStore) throws(CofferError) -> TreeDirectory
    ) throws(MountError) -> TreeDirectory {
        if let held = directories.value(for: key) { return held }
        let directory = try failing(Self.readingTree(of: record)) { () throws(CofferError) in
            try read(vault.snapshots.snapshotStore(try vault.keyRing()))
        }
        directories.insert(directory, for: key, cost: directory.children.count + 1)
        return directory
    }

    /// What a failed read of `record`'s tree was doing, naming the snapshot (the error itself may
    /// not: a damaged chunk is reported as the chunk's problem).
    private static func readingTree(of record: SnapshotRecord) -> String {
        "reading the tree of snapshot \(record.info.shortID) ('\(record.name)')"
    }

    // MARK: Attributes

    private func attributes(of node: Node) throws(MountError) -> NodeAttributes {
        let virtual = NodeAttributes.virtualDirectory(owner: owner, time: mountedAt)
        switch node {
        case .top, .snapshots, .ids, .blobs:
            return virtual
        case .name(let name):
            var attributes = virtual
            if let newest = name.newestCreated {
                attributes.modified = NodeAttributes.Timestamp(
                    seconds: newest / 1000,
                    nanoseconds: UInt32(newest % 1000) * 1_000_000
                )
                attributes.changed = attributes.modified
            }
            return attributes
        case .latest(let target):
            var attributes = virtual
            attributes.kind = .symlink
            attributes.mode = NodeAttributes.symlinkType | 0o777
            attributes.size = UInt64(target.count)
            return attributes
        case .tree(let record, .top):
            guard let entry = try rootEntry(of: record) else {
                var attributes = virtual
                attributes.modified = NodeAttributes.Timestamp(record.info.created)
                attributes.changed = attributes.modified
                return attributes
            }
            return Self.attributes(of: entry)
        case .tree(_, .child(let child)):
            return Self.attributes(of: child.entry)
        case .blob(let manifest):
            return attributes(of: manifest)
        }
    }

    private func attributesOfTop(of record: SnapshotRecord) throws(MountError) -> NodeAttributes {
        try attributes(of: .tree(record, .top))
    }

    /// The snapshot's root entry (its first), read alone and kept: listing `ids/` or a name's
    /// directory `stat`s every snapshot's top, which must not read every tree.
    private func rootEntry(of record: SnapshotRecord) throws(MountError) -> TreeEntry? {
        if let held = rootEntries.withLock({ $0[record.id] }) { return held }
        let entry = try failing(Self.readingTree(of: record)) { () throws(CofferError) in
            try TreeDirectory.rootEntry(of: record, store: vault.snapshots.snapshotStore(try vault.keyRing()))
        }
        rootEntries.withLock { $0[record.id] = entry }
        return entry
    }

    private static func listing(_ directory: TreeDirectory) -> [Listed] {
        directory.children.map { Listed(name: $0.name, attributes: attributes(of: $0.entry)) }
    }

    private static func attributes(of entry: TreeEntry) -> NodeAttributes {
        let modified = NodeAttributes.Timestamp(seconds: entry.modifiedSeconds, nanoseconds: entry.modifiedNanoseconds)
        let kind: NodeAttributes.Kind =
            switch entry.kind {
            case .file: .file
            case .directory: .directory
            case .symlink: .symlink
            case .other: .other
            }
        let size: UInt64 =
            switch entry.kind {
            case .file: entry.size
            case .symlink: UInt64(entry.linkTarget?.count ?? 0)
            case .directory, .other: 0
            }
        return NodeAttributes(
            kind: kind,
            mode: entry.mode,
            size: size,
            linkCount: entry.kind == .directory ? 1 : max(entry.linkCount, 1),
            uid: entry.uid,
            gid: entry.gid,
            modified: modified,
            changed: entry.changedSeconds.map {
                NodeAttributes.Timestamp(seconds: $0, nanoseconds: entry.changedNanoseconds)
            }
                ?? modified,
            allocatedBytes: entry.kind == .file ? (entry.allocatedBytes ?? entry.size) : 0
        )
    }

    private func attributes(of manifest: BlobManifest) -> NodeAttributes {
        let modified = NodeAttributes.Timestamp(
            seconds: manifest.modified / 1000,
            nanoseconds: UInt32(manifest.modified % 1000) * 1_000_000
        )
        return NodeAttributes(
            kind: .file,
            mode: NodeAttributes.fileType | 0o444,
            size: manifest.size,
            linkCount: 1,
            uid: owner.uid,
            gid: owner.gid,
            modified: modified,
            changed: modified,
            allocatedBytes: manifest.size
        )
    }

    // MARK: Locking and failures

    /// Drops the `whenUnlocked` chunks from the cache the first time the vault is seen locked.
    private func noteLockState() {
        let locked = vault.isLocked
        let newlyLocked = sawLocked.withLock { (saw: inout Bool) -> Bool in
            defer { saw = locked }
            return locked && !saw
        }
        if newlyLocked { chunks.removeAll(level: .whenUnlocked) }
    }

    private func failing<Result>(
        _ action: String,
        _ body: () throws(CofferError) -> Result
    ) throws(MountError) -> Result {
        do {
            return try body()
        } catch {
            throw failure(error, while: action)
        }
    }

    private func failure(_ error: CofferError, while action: String) -> MountError {
        switch error.code {
        case .itemNotFound: return .notFound
        case .interactionNotAllowed: return .locked
        default:
            let message = "\(action) failed: \(error.message)"
            report(message)
            return .failed(message)
        }
    }
}
