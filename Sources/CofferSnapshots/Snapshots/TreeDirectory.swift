import Foundation

/// One directory of a snapshot's tree, read on its own: what is directly in it, each child with
/// where its own subtree lies in the tree stream, so that listing a child later reads that range and
/// nothing else.
///
/// The tree is one stream in walk order (depth first, names in byte order, docs/FORMAT.md), so a
/// directory's entry and everything under it are one contiguous range, and a child's range runs
/// from its entry to the next child's. Listing the top reads the whole tree once; each directory
/// below reads only its subtree. A mounted view (`coffer mount`) browses a snapshot of a million
/// entries this way, holding only the directories it was asked for.
package struct TreeDirectory: Sendable {
    /// One path directly in the directory.
    package struct Child: Sendable {
        /// Its last component.
        package let name: [UInt8]
        package let entry: TreeEntry
        /// Where its entry and everything under it lie in the tree stream.
        package let subtree: Range<UInt64>
    }

    /// The directory's own entry; `nil` for the top of a version 1 or 2 tree, which has none.
    package let entry: TreeEntry?
    /// What is directly in it, in byte order of the names.
    package let children: [Child]

    /// The child named `name`, if any (binary search).
    package func child(named name: [UInt8]) -> Child? {
        var low = 0
        var high = children.count
        while low < high {
            let middle = (low + high) / 2
            let candidate = children[middle].name
            if candidate == name { return children[middle] }
            if candidate.lexicographicallyPrecedes(name) { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// The top of `record`'s tree.
    package static func top(of record: SnapshotRecord, store: SnapshotStore) throws(CofferError) -> TreeDirectory {
        try read([], subtree: 0..<record.size, of: record, store: store)
    }

    /// The backed-up directory's own entry (the tree's first, from version 3 on), read alone: its
    /// length prefix, then its bytes, so a snapshot's top can be `stat`ed without reading the tree.
    /// `nil` for versions 1 and 2, which have none.
    package static func rootEntry(of record: SnapshotRecord, store: SnapshotStore) throws(CofferError) -> TreeEntry? {
        guard record.formatVersion >= 3, record.size >= 4 else { return nil }
        let reader = ContentReader(environment: store.environment, store: store.contentStore, keys: store.keys)
        do throws(CofferError) {
            var prefix = DataSink()
            try reader.stream(record, range: 0..<4, to: &prefix, progress: nil)
            let length = prefix.data.reduce(0) { $0 << 8 | UInt64($1) }
            guard length <= 64 << 20, 4 + length <= record.size else {
                throw CofferError(.decode, "the tree's first entry declares \(length) bytes")
            }
            var body = DataSink()
            try reader.stream(record, range: 4..<(4 + length), to: &body, progress: nil)
            let entry = try TreeEntry.decode(Array(body.data), version: record.formatVersion)
            guard entry.isRoot else { throw CofferError(.decode, "the tree does not start with its root entry") }
            return entry
        } catch  where error.code == .decode {
            throw record.damaged(error)
        }
    }

    /// The directory `child` (of a directory already read).
    package static func read(
        _ child: Child,
        of record: SnapshotRecord,
        store: SnapshotStore
    ) throws(CofferError)
        -> TreeDirectory
    {
        try read(child.entry.path, subtree: child.subtree, of: record, store: store)
    }

    /// Reads the directory at `path`, whose subtree is `subtree` of the tree stream.
    private static func read(
        _ path: [UInt8],
        subtree: Range<UInt64>,
        of record: SnapshotRecord,
        store: SnapshotStore
    ) throws(CofferError) -> TreeDirectory {
        var parser = TreeEntryParser(version: record.formatVersion, startOffset: subtree.lowerBound)
        var own: TreeEntry?
        var children: [Child] = []
        // The last child seen, whose subtree ends where the next child starts.
        var open: (name: [UInt8], entry: TreeEntry, start: UInt64)?
        var sorted = true
        func close(at end: UInt64) {
            guard let current = open else { return }
            if let last = children.last, !last.name.lexicographicallyPrecedes(current.name) { sorted = false }
            children.append(Child(name: current.name, entry: current.entry, subtree: current.start..<end))
            open = nil
        }
        let reader = ContentReader(environment: store.environment, store: store.contentStore, keys: store.keys)
        do {
            var sink = ClosureSink { (bytes) throws(CofferError) in
                try parser.feed(bytes) { (entry, offset) throws(CofferError) in
                    if entry.path == path, own == nil, children.isEmpty, open == nil {
                        own = entry
                        return
                    }
                    guard path.isEmpty || EntryPath.isInside(entry.path, path) else {
                        throw CofferError(
                            .decode,
                            "the tree holds '\(entry.displayPath)' inside the range of '\(EntryPath.display(path))'"
                        )
                    }
                    let rest = path.isEmpty ? entry.path : Array(entry.path.dropFirst(path.count + 1))
                    guard !rest.contains(UInt8(ascii: "/")) else { return }
                    close(at: offset)
                    open = (rest, entry, offset)
                }
            }
            try reader.stream(record, range: subtree, to: &sink, progress: nil)
            try parser.finish()
        } catch  where error.code == .decode {
            throw record.damaged(error)
        }
        close(at: subtree.upperBound)
        if !sorted { children.sort { $0.name.lexicographicallyPrecedes($1.name) } }
        return TreeDirectory(entry: own, children: children)
    }
}
