import Foundation

/// One path in a snapshot's tree: a regular file (with its content's chunk list), a directory, a
/// symbolic link (with its target), or another kind of file recorded by type only.
///
/// Stored in the tree stream as `length (UInt32) ‖ body` (docs/FORMAT.md, "Snapshot trees"); the
/// length counts the body only. Version 3 (the snapshot record's version):
///
/// ```
/// kind (1) ‖ path (UInt16 length ‖ bytes) ‖ mode (UInt32) ‖ uid (UInt32) ‖ gid (UInt32)
///   ‖ mtime seconds (Int64) ‖ mtime nanoseconds (UInt32) ‖ ctime seconds (Int64) ‖ ctime nanoseconds (UInt32)
///   ‖ size (UInt64) ‖ device (UInt64) ‖ inode (UInt64) ‖ link count (UInt64) ‖ allocated bytes (UInt64)
///   ‖ attribute count (UInt16) ‖ each: name (UInt16 length ‖ bytes) ‖ value (UInt32 length ‖ bytes)
///   file:    chunk count (UInt64) ‖ chunk list
///   symlink: target (UInt16 length ‖ bytes)
/// ```
///
/// Paths and link targets are bytes, as Linux names are: a name that is not UTF-8 is stored and
/// restored exactly. The first entry of a version 3 tree is the backed-up directory itself, with an
/// empty path. Versions 1 and 2 had no ctime, link count, allocated size, attributes or root entry,
/// and their paths were UTF-8; version 1 also stored each file's SHA-256 before its chunk count.
/// Version 2 dropped that hash: a backup hashed every byte twice, and the second hash added no check
/// the chunk ids do not make.
package struct TreeEntry: Sendable, Equatable {
    package enum Kind: UInt8, Sendable {
        case file = 1
        case directory = 2
        case symlink = 3
        /// A socket, FIFO or device: recorded by type (in `mode`), never read.
        case other = 4
    }

    /// A file's content.
    package struct Content: Sendable, Equatable {
        /// The SHA-256 a version 1 snapshot recorded; `nil` from version 2 on.
        package var digest: [UInt8]? = nil
        package let chunkCount: UInt64
        package let chunks: ChunkList

        package init(digest: [UInt8]? = nil, chunkCount: UInt64, chunks: ChunkList) {
            self.digest = digest
            self.chunkCount = chunkCount
            self.chunks = chunks
        }

        /// Whether two contents are the same bytes as far as their records tell: the same chunks in
        /// the same order (chunk ids are keyed hashes of the bytes), or, in two version 1 entries, the
        /// same SHA-256. Identical bytes chunked with other sizes or in another scope compare unequal.
        package func hasSameBytes(as other: Content) -> Bool {
            if let digest, let otherDigest = other.digest { return digest == otherDigest }
            return chunkCount == other.chunkCount && chunks == other.chunks
        }
    }

    package let kind: Kind
    /// Relative to the backed-up directory, `/`-separated bytes; empty for the root entry, otherwise
    /// never `.`, `..` or absolute (``EntryPath/isSafe(_:)``).
    package let path: [UInt8]
    package let mode: UInt32
    package let uid: UInt32
    package let gid: UInt32
    package let modifiedSeconds: Int64
    package let modifiedNanoseconds: UInt32
    package var size: UInt64
    package let device: UInt64
    package let inode: UInt64
    /// The status change time; `nil` in entries of versions 1 and 2, which did not record it.
    package var changedSeconds: Int64? = nil
    package var changedNanoseconds: UInt32 = 0
    /// How many names the file had (`st_nlink`); 1 in entries of versions 1 and 2.
    package var linkCount: UInt64 = 1
    /// The bytes the file occupied on disk (`st_blocks` × 512): less than `size` for a sparse file.
    package var allocatedBytes: UInt64? = nil
    /// Extended attributes (ACLs and file capabilities among them), in name order.
    package var attributes: [ExtendedAttribute] = []
    package var content: Content?
    package var linkTarget: [UInt8]?

    package init(
        kind: Kind,
        path: [UInt8],
        mode: UInt32,
        uid: UInt32,
        gid: UInt32,
        modifiedSeconds: Int64,
        modifiedNanoseconds: UInt32,
        size: UInt64,
        device: UInt64,
        inode: UInt64,
        changedSeconds: Int64? = nil,
        changedNanoseconds: UInt32 = 0,
        linkCount: UInt64 = 1,
        allocatedBytes: UInt64? = nil,
        attributes: [ExtendedAttribute] = [],
        content: Content? = nil,
        linkTarget: [UInt8]? = nil
    ) {
        self.kind = kind
        self.path = path
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
        self.size = size
        self.device = device
        self.inode = inode
        self.changedSeconds = changedSeconds
        self.changedNanoseconds = changedNanoseconds
        self.linkCount = linkCount
        self.allocatedBytes = allocatedBytes
        self.attributes = attributes
        self.content = content
        self.linkTarget = linkTarget
    }

    /// The path as text for people: ``EntryPath/display(_:)``.
    package var displayPath: String { EntryPath.display(path) }

    /// Whether this is the backed-up directory itself (the first entry from version 3 on).
    package var isRoot: Bool { path.isEmpty }

    /// Whether the file was sparse when backed up: it occupied less space than its size.
    package var isSparse: Bool { kind == .file && (allocatedBytes.map { $0 < size } ?? false) }

    /// The entry in the current version's encoding (``SnapshotRecord/version``).
    package func encoded() -> [UInt8] {
        var body = BinaryWriter()
        body.write(kind.rawValue)
        body.write(lengthPrefixed: path)
        body.write(mode)
        body.write(uid)
        body.write(gid)
        body.write(modifiedSeconds)
        body.write(modifiedNanoseconds)
        body.write(changedSeconds ?? 0)
        body.write(changedNanoseconds)
        body.write(size)
        body.write(device)
        body.write(inode)
        body.write(linkCount)
        body.write(allocatedBytes ?? size)
        body.write(UInt16(attributes.count))
        for attribute in attributes {
            body.write(lengthPrefixed: attribute.name)
            body.write(UInt32(attribute.value.count))
            body.write(raw: attribute.value)
        }
        if kind == .file, let content {
            body.write(content.chunkCount)
            content.chunks.encode(into: &body)
        }
        if kind == .symlink { body.write(lengthPrefixed: linkTarget ?? []) }
        var framed = BinaryWriter()
        framed.write(UInt32(body.bytes.count))
        framed.write(raw: body.bytes)
        return framed.bytes
    }

    /// Reads an entry encoded by a snapshot of record version `version`.
    package static func decode(_ body: [UInt8], version: UInt8) throws(CofferError) -> TreeEntry {
        var reader = BinaryReader(body, what: "a snapshot tree entry")
        guard let kind = Kind(rawValue: try reader.readUInt8()) else {
            throw CofferError(.decode, "a snapshot tree entry has an unknown kind; the snapshot is damaged")
        }
        let path = try reader.readLengthPrefixed()
        if version < 3, String(validating: path, as: UTF8.self) == nil {
            throw CofferError(.decode, "a snapshot tree entry's path is not UTF-8; the snapshot is damaged")
        }
        let mode = try reader.readUInt32()
        let uid = try reader.readUInt32()
        let gid = try reader.readUInt32()
        let modifiedSeconds = try reader.readInt64()
        let modifiedNanoseconds = try reader.readUInt32()
        let changed = version >= 3 ? (seconds: try reader.readInt64(), nanoseconds: try reader.readUInt32()) : nil
        var entry = TreeEntry(
            kind: kind,
            path: path,
            mode: mode,
            uid: uid,
            gid: gid,
            modifiedSeconds: modifiedSeconds,
            modifiedNanoseconds: modifiedNanoseconds,
            size: try reader.readUInt64(),
            device: try reader.readUInt64(),
            inode: try reader.readUInt64()
        )
        if let changed {
            entry.changedSeconds = changed.seconds
            entry.changedNanoseconds = changed.nanoseconds
            entry.linkCount = try reader.readUInt64()
            entry.allocatedBytes = try reader.readUInt64()
            for _ in 0..<Int(try reader.readUInt16()) {
                let name = try reader.readLengthPrefixed()
                let value = try reader.readBytes(Int(try reader.readUInt32()))
                entry.attributes.append(ExtendedAttribute(name: name, value: value))
            }
        }
        switch kind {
        case .file:
            entry.content = Content(
                digest: version == 1 ? try reader.readBytes(32) : nil,
                chunkCount: try reader.readUInt64(),
                chunks: try ChunkList.decode(from: &reader)
            )
        case .symlink:
            entry.linkTarget = try reader.readLengthPrefixed()
        case .directory, .other:
            break
        }
        try reader.finish()
        return entry
    }
}

/// Splits a tree stream back into entries, piece by piece, so a reader holds one chunk at a time.
package struct TreeEntryParser {
    /// The snapshot record's version, which says how entries are encoded.
    package let version: UInt8
    private var buffer: [UInt8] = []
    /// Where `buffer` starts, counted from the first byte fed (plus `startOffset`).
    private var bufferStart: UInt64

    /// A parser of a stream whose first byte fed sits at `startOffset` in the tree (0 for a whole
    /// tree; a directory's subtree starts at its entry).
    package init(version: UInt8, startOffset: UInt64 = 0) {
        self.version = version
        bufferStart = startOffset
    }

    /// Adds the next piece of the stream and returns the entries it completes.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(CofferError) -> [TreeEntry] {
        var entries: [TreeEntry] = []
        try feed(bytes) { (entry, _) in entries.append(entry) }
        return entries
    }

    /// Adds the next piece of the stream and calls `body` with each entry it completes and the
    /// entry's offset in the tree (of its length prefix).
    package mutating func feed(
        _ bytes: some Collection<UInt8>,
        each body: (TreeEntry, _ offset: UInt64) throws(CofferError) -> Void
    ) throws(CofferError) {
        buffer += bytes
        var offset = 0
        while buffer.count - offset >= 4 {
            let length = buffer[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard length <= 64 << 20 else {
                throw CofferError(.decode, "a snapshot tree entry declares \(length) bytes; the snapshot is damaged")
            }
            guard buffer.count - offset - 4 >= length else { break }
            let entry = try TreeEntry.decode(Array(buffer[(offset + 4)..<(offset + 4 + length)]), version: version)
            try body(entry, bufferStart + UInt64(offset))
            offset += 4 + length
        }
        buffer.removeFirst(offset)
        bufferStart += UInt64(offset)
    }

    /// Fails if the stream ended inside an entry.
    package func finish() throws(CofferError) {
        guard buffer.isEmpty else {
            throw CofferError(.decode, "a snapshot's tree ends inside an entry; the snapshot is damaged")
        }
    }
}
