public import Foundation
internal import Glibc

/// What ``Snapshots/dump(_:host:path:toFileDescriptor:)-vqjx`` wrote.
public struct DumpResult: Sendable, Equatable {
    /// Whether the path was a directory, written as a tar archive (else one file's content).
    public var isArchive = false
    /// Paths written (1 for a file).
    public var paths = 0
    /// Content bytes written.
    public var bytes: Int64 = 0
    /// Paths a tar archive cannot hold as they are (sockets and devices, whose numbers a snapshot
    /// does not record), left out.
    public var skipped: [String] = []
}

/// One match of ``Snapshots/find(_:matching:snapshots:modifiedAfter:modifiedBefore:visit:)-6ajst``.
public struct FoundEntry: Sendable, Hashable {
    /// The snapshot it is in.
    public let snapshot: SnapshotInfo
    /// The path there, relative to the backed-up directory.
    public let entry: SnapshotEntry
    /// The path as it was on the machine: the backed-up directory's path, then the entry's.
    public var absolutePath: String {
        entry.pathBytes.isEmpty ? snapshot.sourcePath : snapshot.sourcePath + "/" + entry.path
    }
}

extension Snapshots {
    /// The paths of one directory of a snapshot (or everything under it, `recursive`), in order,
    /// read as a stream: memory stays bounded whatever the tree's size.
    ///
    /// - Parameters:
    ///   - reference: The snapshot: an id prefix (6+ hex digits), a name (its latest on `host`), or
    ///     `latest` (the newest on `host`).
    ///   - host: Whose snapshot a name means; this machine's when `nil`.
    ///   - path: The directory, relative to the backed-up one (`docs/deep`; empty or `.` for the top)
    ///     or absolute as it was backed up (`/home/ann/docs/deep`); bytes that are not UTF-8 as
    ///     listings show them (`\xe9`). A file's path lists that file.
    ///   - recursive: Everything under the directory, not only what is directly in it; at the top,
    ///     the backed-up directory itself (as `.`) first, as ``entries(of:host:)-71285`` lists it.
    ///   - visit: Called with each path, in order.
    /// - Throws: ``CofferError`` `.itemNotFound` if the snapshot holds no such path.
    public func entries(
        of reference: String,
        host: String? = nil,
        under path: String,
        recursive: Bool = false,
        visit: (SnapshotEntry) -> Void
    ) throws(CofferError) {
        let record = try resolve(reference, host: host)
        let directory = try Self.relativePath(path, in: record)
        var found = directory.isEmpty
        var isDirectory = directory.isEmpty
        try snapshotStore(try vault.keyRing()).forEachEntry(of: record) { entry in
            if entry.path == directory, !directory.isEmpty {
                found = true
                isDirectory = entry.kind == .directory
                if !isDirectory { visit(SnapshotEntry(entry)) }
                return
            }
            // The backed-up directory itself (as `.`) heads a recursive listing of the top.
            if entry.isRoot {
                if recursive, directory.isEmpty { visit(SnapshotEntry(entry)) }
                return
            }
            guard directory.isEmpty || EntryPath.isInside(entry.path, directory) else { return }
            let rest = directory.isEmpty ? entry.path : Array(entry.path.dropFirst(directory.count + 1))
            if recursive || !rest.contains(UInt8(ascii: "/")) { visit(SnapshotEntry(entry)) }
        }
        guard found else {
            throw CofferError(
                .itemNotFound,
                "snapshot \(record.info.shortID) holds no '\(path)'; \(InterfaceName.listSnapshot(record.info.shortID)) lists its top"
            )
        }
    }

    /// Every path matching `pattern` in the snapshots `filter` passes (or the ones named), oldest
    /// snapshot first, each read as a stream (restic's `find`). A pattern without `/` matches a path's
    /// last component, one with `/` its whole path as it was backed up (a glob in Go's `filepath.Match`
    /// syntax, as restic's patterns: `*` inside one component, `[^a]` for "not `a`").
    ///
    /// - Parameters:
    ///   - pattern: The glob: a name (`*.pdf`) or, with a `/`, a whole path.
    ///   - filter: Only the snapshots it passes.
    ///   - references: Only these snapshots (ids or names, as `restore` takes them); all when empty.
    ///   - modifiedAfter: Only paths modified at or after it (restic's `--oldest`).
    ///   - modifiedBefore: Only paths modified at or before it (restic's `--newest`).
    ///   - visit: Called with each match, in order.
    /// - Returns: How many paths matched.
    @discardableResult
    public func find(
        _ pattern: String,
        matching filter: SnapshotFilter = SnapshotFilter(),
        snapshots references: [String] = [],
        modifiedAfter: Date? = nil,
        modifiedBefore: Date? = nil,
        visit: (FoundEntry) -> Void
    ) throws(CofferError) -> Int {
        try vault.checkOpen()
        let store = snapshotStore(try vault.keyRing())
        var records = try store.all(cipher: try makeCipher()).filter { filter.matches($0.info) }
        if !references.isEmpty {
            var ids = Set<[UInt8]>()
            for reference in references { ids.insert(try resolve(reference).id) }
            records = records.filter { ids.contains($0.id) }
        }
        let wholePath = pattern.contains("/")
        let compiled: GoGlob
        do {
            compiled = try GoGlob(Array(pattern.utf8))
        } catch {
            throw CofferError(.param, "'\(PrintableText.escaping(pattern))' is not a valid glob: \(error.reason)")
        }
        var matches = 0
        for record in records {
            let info = record.info
            let source = Array(record.sourcePath.utf8)
            try store.forEachEntry(of: record) { entry in
                let modified = Date(timeIntervalSince1970: Double(entry.modifiedSeconds))
                if let modifiedAfter, modified < modifiedAfter { return }
                if let modifiedBefore, modified > modifiedBefore { return }
                let subject =
                    wholePath
                    ? (entry.isRoot ? source : source + [UInt8(ascii: "/")] + entry.path)
                    : Array((entry.isRoot ? source : entry.path).split(separator: UInt8(ascii: "/")).last ?? [])
                guard compiled.matches(subject) else { return }
                matches += 1
                visit(FoundEntry(snapshot: info, entry: SnapshotEntry(entry)))
            }
        }
        return matches
    }

    /// Writes one file of a snapshot to `descriptor` as it is, or a directory as a tar archive
    /// (ustar with pax headers for what ustar cannot hold: long names, large sizes and ids, times
    /// before 1970 or past 2242; names relative to the directory's parent, hard links as links),
    /// streaming: memory stays bounded whatever it holds. Every chunk is checked as it is read.
    ///
    /// - Parameters:
    ///   - reference: The snapshot: an id prefix (6+ hex digits), a name (its latest on `host`), or
    ///     `latest` (the newest on `host`).
    ///   - host: Whose snapshot a name means; this machine's when `nil`.
    ///   - path: As ``entries(of:host:under:recursive:visit:)-55rtq`` takes it; `.` (or the backed-up
    ///     directory) dumps the whole snapshot.
    ///   - descriptor: Where to write (standard output for the CLI); it is not closed.
    /// - Throws: ``CofferError`` `.itemNotFound` if the snapshot holds no such path, `.decode` for
    ///   damaged content, `.io` if the descriptor cannot be written.
    @discardableResult
    public func dump(
        _ reference: String,
        host: String? = nil,
        path: String,
        toFileDescriptor descriptor: Int32
    ) throws(CofferError) -> DumpResult {
        let record = try resolve(reference, host: host)
        let target = try Self.relativePath(path, in: record)
        let keys = try vault.keyRing()
        let store = snapshotStore(keys)
        let reader = ContentReader(environment: vault.environment, store: store.contentStore, keys: keys)
        let context = try reader.makeContext()
        var result = DumpResult()
        var tar: TarWriter<FileDescriptorSink>?
        var found = false
        // Names in the archive start at the directory's own name ("docs/…"); the whole snapshot's
        // at its top.
        let strip = target.isEmpty ? 0 : (target.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0)
        var firstNames: [FileIdentity: [UInt8]] = [:]
        try store.forEachEntry(of: record) { (entry) throws(CofferError) in
            let isTarget = entry.path == target
            guard isTarget || target.isEmpty || EntryPath.isInside(entry.path, target) else { return }
            if isTarget {
                found = true
                guard entry.kind == .directory else {
                    try Self.stream(
                        entry,
                        record: record,
                        reader: reader,
                        to: FileDescriptorSink(descriptor: descriptor)
                    )
                    result.paths = 1
                    result.bytes = Int64(entry.size)
                    return
                }
                result.isArchive = true
                tar = TarWriter(sink: FileDescriptorSink(descriptor: descriptor))
                if target.isEmpty { return }
            }
            guard var writer = tar else { return }
            let name = Array(entry.path.dropFirst(strip))
            let kind: TarWriter<FileDescriptorSink>.Kind
            switch entry.kind {
            case .directory: kind = .directory
            case .symlink: kind = .symlink(target: entry.linkTarget ?? [])
            case .file:
                let identity = FileIdentity(device: entry.device, inode: entry.inode)
                if entry.linkCount > 1, let first = firstNames[identity] {
                    kind = .hardLink(to: first)
                } else {
                    if entry.linkCount > 1 { firstNames[identity] = name }
                    kind = .file(size: entry.size)
                }
            case .other:
                guard entry.mode & UInt32(S_IFMT) == UInt32(S_IFIFO) else {
                    result.skipped.append(entry.displayPath)
                    return
                }
                kind = .fifo
            }
            try writer.header(
                name: name,
                kind: kind,
                mode: entry.mode,
                uid: entry.uid,
                gid: entry.gid,
                modified: entry.modifiedSeconds
            )
            if case .file = kind {
                var sink = TarContentSink(writer: writer)
                try reader.streamFile(
                    entry,
                    scope: record.scope,
                    level: record.level,
                    write: record.write,
                    to: &sink,
                    context: context
                )
                writer = sink.writer
                try writer.endFile()
                result.bytes += Int64(entry.size)
            }
            result.paths += 1
            tar = writer
        }
        guard found || target.isEmpty else {
            throw CofferError(
                .itemNotFound,
                "snapshot \(record.info.shortID) holds no '\(path)'; \(InterfaceName.listSnapshot(record.info.shortID)) lists its top"
            )
        }
        if target.isEmpty, tar == nil {
            result.isArchive = true
            tar = TarWriter(sink: FileDescriptorSink(descriptor: descriptor))
        }
        if var writer = tar { try writer.finish() }
        return result
    }

    /// A file's content, checked chunk by chunk, into a descriptor.
    private static func stream(
        _ entry: TreeEntry,
        record: SnapshotRecord,
        reader: ContentReader,
        to sink: FileDescriptorSink
    ) throws(CofferError) {
        var sink = sink
        try reader.streamFile(entry, scope: record.scope, level: record.level, write: record.write, to: &sink)
    }

    /// `path` as the snapshot's relative bytes: relative (`docs/a`, `.` or empty for the top), or
    /// absolute under the backed-up directory; escaped bytes (`\xe9`) as listings show them.
    static func relativePath(_ path: String, in record: SnapshotRecord) throws(CofferError) -> [UInt8] {
        guard var bytes = PrintableText.unescaping(path) else {
            throw CofferError(
                .param,
                "'\(path)' has a backslash that is not \\\\ or \\xHH; write bytes as listings show them"
            )
        }
        let source = Array(record.sourcePath.utf8)
        if bytes.first == UInt8(ascii: "/") {
            if bytes == source || bytes == source + [UInt8(ascii: "/")] { return [] }
            guard bytes.starts(with: source + [UInt8(ascii: "/")]) else {
                throw CofferError(
                    .itemNotFound,
                    "'\(path)' is not under \(record.sourcePath), the directory snapshot \(record.info.shortID) backed up"
                )
            }
            bytes.removeFirst(source.count + 1)
        }
        while bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        if bytes == [UInt8(ascii: ".")] { return [] }
        if bytes.starts(with: [UInt8(ascii: "."), UInt8(ascii: "/")]) { bytes.removeFirst(2) }
        return bytes
    }
}

/// Feeds a file's content into a tar stream.
private struct TarContentSink: ByteSink {
    var writer: TarWriter<FileDescriptorSink>

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) { try writer.writeContent(bytes) }
}
