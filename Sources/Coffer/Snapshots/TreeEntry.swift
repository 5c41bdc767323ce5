import Foundation

/// One path in a snapshot's tree: a regular file (with its content's chunk list), a directory, a
/// symbolic link (with its target), or another kind of file recorded by type only.
///
/// Stored in the tree stream as `length (UInt32) ‖ body` (docs/FORMAT.md, "Snapshot trees"):
///
/// ```
/// kind (1) ‖ path (UInt16 length ‖ UTF-8) ‖ mode (UInt32) ‖ uid (UInt32) ‖ gid (UInt32)
///   ‖ mtime seconds (Int64) ‖ mtime nanoseconds (UInt32) ‖ size (UInt64) ‖ device (UInt64) ‖ inode (UInt64)
///   file:    [version 1 only: SHA-256 (32)] ‖ chunk count (UInt64) ‖ chunk list
///   symlink: target (UInt16 length ‖ bytes)
/// ```
///
/// Version 2 (the snapshot record's version) dropped the per-file SHA-256: a backup hashed every byte
/// twice, once for the chunk ids and once for it, and the second hash added no check the first does
/// not make (each chunk read is checked against its keyed id, and the list is sealed in the tree).
struct TreeEntry: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        case file = 1
        case directory = 2
        case symlink = 3
        /// A socket, FIFO or device: recorded by type (in `mode`), never read.
        case other = 4
    }

    /// A file's content.
    struct Content: Sendable, Equatable {
        /// The SHA-256 a version 1 snapshot recorded; `nil` from version 2 on.
        var digest: [UInt8]? = nil
        let chunkCount: UInt64
        let chunks: ChunkList

        /// Whether two contents are the same bytes as far as their records tell: the same chunks in
        /// the same order (chunk ids are keyed hashes of the bytes), or, in two version 1 entries, the
        /// same SHA-256. Identical bytes chunked with other sizes or in another scope compare unequal.
        func hasSameBytes(as other: Content) -> Bool {
            if let digest, let otherDigest = other.digest { return digest == otherDigest }
            return chunkCount == other.chunkCount && chunks == other.chunks
        }
    }

    let kind: Kind
    /// Relative to the backed-up directory, `/`-separated, never empty, `.`, `..` or absolute.
    let path: String
    let mode: UInt32
    let uid: UInt32
    let gid: UInt32
    let modifiedSeconds: Int64
    let modifiedNanoseconds: UInt32
    let size: UInt64
    let device: UInt64
    let inode: UInt64
    var content: Content?
    var linkTarget: [UInt8]?

    /// The entry in the current version's encoding (``SnapshotRecord/version``).
    func encoded() -> [UInt8] {
        var body = BinaryWriter()
        body.write(kind.rawValue)
        body.write(lengthPrefixed: Array(path.utf8))
        body.write(mode)
        body.write(uid)
        body.write(gid)
        body.write(modifiedSeconds)
        body.write(modifiedNanoseconds)
        body.write(size)
        body.write(device)
        body.write(inode)
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
    static func decode(_ body: [UInt8], version: UInt8) throws(CofferError) -> TreeEntry {
        var reader = BinaryReader(body, what: "a snapshot tree entry")
        guard let kind = Kind(rawValue: try reader.readUInt8()) else {
            throw CofferError(.decode, "a snapshot tree entry has an unknown kind; the snapshot is damaged")
        }
        guard let path = String(validating: try reader.readLengthPrefixed(), as: UTF8.self) else {
            throw CofferError(.decode, "a snapshot tree entry's path is not UTF-8; the snapshot is damaged")
        }
        var entry = TreeEntry(
            kind: kind,
            path: path,
            mode: try reader.readUInt32(),
            uid: try reader.readUInt32(),
            gid: try reader.readUInt32(),
            modifiedSeconds: try reader.readInt64(),
            modifiedNanoseconds: try reader.readUInt32(),
            size: try reader.readUInt64(),
            device: try reader.readUInt64(),
            inode: try reader.readUInt64()
        )
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

    /// Whether `path` is safe to create under a restore target: relative, no empty, `.` or `..`
    /// component, no NUL.
    static func isSafe(_ path: String) -> Bool {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.contains("\0") else { return false }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && $0 != "." && $0 != ".."
        }
    }
}

/// Splits a tree stream back into entries, piece by piece, so a reader holds one chunk at a time.
struct TreeEntryParser {
    /// The snapshot record's version, which says how entries are encoded.
    let version: UInt8
    private var buffer: [UInt8] = []

    init(version: UInt8) {
        self.version = version
    }

    /// Adds the next piece of the stream and returns the entries it completes.
    mutating func feed(_ bytes: some Collection<UInt8>) throws(CofferError) -> [TreeEntry] {
        buffer += bytes
        var entries: [TreeEntry] = []
        var offset = 0
        while buffer.count - offset >= 4 {
            let length = buffer[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard length <= 64 << 20 else {
                throw CofferError(.decode, "a snapshot tree entry declares \(length) bytes; the snapshot is damaged")
            }
            guard buffer.count - offset - 4 >= length else { break }
            entries.append(
                try TreeEntry.decode(Array(buffer[(offset + 4)..<(offset + 4 + length)]), version: version)
            )
            offset += 4 + length
        }
        buffer.removeFirst(offset)
        return entries
    }

    /// Fails if the stream ended inside an entry.
    func finish() throws(CofferError) {
        guard buffer.isEmpty else {
            throw CofferError(.decode, "a snapshot's tree ends inside an entry; the snapshot is damaged")
        }
    }
}
