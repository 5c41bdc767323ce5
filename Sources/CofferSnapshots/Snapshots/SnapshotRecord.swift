public import Foundation

/// What a backup found and stored, kept with the snapshot.
public struct SnapshotStatistics: Sendable, Hashable, Codable {
    /// Regular files in the tree.
    public var files = 0
    /// Directories (the backed-up directory itself not counted).
    public var directories = 0
    /// Symbolic links.
    public var symlinks = 0
    /// Sockets, FIFOs and devices, recorded by type only.
    public var otherFiles = 0
    /// The total size of the regular files.
    public var bytes: Int64 = 0
    /// Files not in the previous snapshot of the same name.
    public var newFiles = 0
    /// Files whose size, modification time or inode changed since then (read again).
    public var changedFiles = 0
    /// Files unchanged since then (not read at all).
    public var unchangedFiles = 0
    /// What the snapshot added to the vault: the sealed size of the chunks it stored new.
    public var bytesAdded: Int64 = 0

    /// Empty statistics.
    public init() {}
}

/// A snapshot as ``Snapshots/list()-7mhmw`` describes it.
public struct SnapshotInfo: Sendable, Hashable {
    /// The snapshot's id: 32 hexadecimal digits; any unique prefix of 6 or more names it (``shortID`` shows 8).
    public let id: String
    /// The name backups of the same tree share (the directory's absolute path unless given).
    public let name: String
    /// The directory that was backed up.
    public let sourcePath: String
    /// The machine it was taken on.
    public let hostname: String
    /// When it was taken.
    public let created: Date
    /// Whether it travels to sync peers.
    public let scope: SyncScope
    /// When it can be read: ``ProtectionLevel/afterFirstUnlock``, or ``ProtectionLevel/completeUnlessOpen``
    /// for a backup sealed to the class key (``BackupOptions/protection``).
    public var protection: ProtectionLevel = .afterFirstUnlock
    /// What the backup found and stored.
    public let statistics: SnapshotStatistics
    /// The tags it was given (`backup --tag`), sorted; retention policies and listings select by them.
    public let tags: [String]
    /// The paths it backed up, absolute and sorted: ``sourcePath`` alone for a directory's snapshot,
    /// else the paths under it that ``Snapshots/backup(paths:options:progress:)-17xcp`` was given.
    public let paths: [String]
    /// Whether a writer that held none of the vault's keys may have made it (a write-only client): a
    /// `completeUnlessOpen` snapshot without the owner's mark. Its ``name``, ``hostname`` and
    /// ``created`` are only what that writer claimed. It never counts toward retention, is never a
    /// name's latest or a backup's parent, until the owner adopts it (``Snapshots/adopt(_:)-6vae9``).
    public var isWriteOnly = false

    /// The first 8 digits of the id, as listings show it.
    public var shortID: String { String(id.prefix(8)) }
}

/// A snapshot's record in the `snapshots` table (docs/FORMAT.md, "Snapshots"):
///
/// ```
/// key:    snapshot id (16 random bytes)
/// value:  header (3): version (4; 1 to 3 are still read) ‖ scope ‖ level
///         sealed: nonce ‖ AES-256-GCM(manifest key of scope and level, body) ‖ tag
///                 associated data = "coffer/v1/snapshot" ‖ 0x00 ‖ snapshot id ‖ header
/// body:   name ‖ source path ‖ hostname (UInt16 length ‖ UTF-8 each) ‖ created (Int64 ms)
///         ‖ statistics (9 × UInt64) ‖ tree size (UInt64) ‖ tree SHA-256 (32) ‖ tree chunk count (UInt64)
///         ‖ tree chunk list ‖ version 4: tag count (UInt16) ‖ tags (UInt16 length ‖ UTF-8 each)
///         ‖ path count (UInt16) ‖ paths (UInt16 length ‖ UTF-8 each)
/// ```
///
/// The tree (every entry, in path order) is a stream of chunks like a blob's content, so an unchanged
/// tree's chunks are shared between snapshots. The version says how the tree's entries are encoded
/// (``TreeEntry``): version 1 stored a SHA-256 of each file's content, version 2 does not, version 3
/// stores names as bytes and adds status change times, link counts, sparseness, extended attributes
/// and a root entry; version 4 encodes its tree as version 3 does and adds the snapshot's tags and
/// the paths it backed up; version 5 is version 4 with the owner's mark, which only a writer holding
/// the vault's keys can make: a `completeUnlessOpen` record without a valid mark was made, or may
/// have been, by a write-only client (``SnapshotInfo/isWriteOnly``); version 6 is a part of a backup in
/// progress (``BackupPart``): version 5 with the part's block before the mark.
package struct SnapshotRecord: Sendable, StoredContent {
    /// The version new snapshots are written with.
    package static let version: UInt8 = 4
    /// The versions this Coffer reads.
    package static let readableVersions: ClosedRange<UInt8> = 1...6
    /// The first version with tags.
    package static let taggedVersion: UInt8 = 4
    /// The version of a record that carries the owner's mark.
    package static let markedVersion: UInt8 = 5
    /// The version of a backup's part (``BackupPart``): version 5 with the part's block before the mark.
    package static let partVersion: UInt8 = 6
    /// The label of the owner's mark, and of the key it is made with.
    package static let markLabel = "coffer/v1/snapshot-owner"

    package let id: [UInt8]
    package var name: String
    package var sourcePath: String
    package var hostname: String
    package var created: Int64
    package var scope: SyncScope
    package var level: ProtectionLevel
    package var statistics: SnapshotStatistics
    /// The tree stream's size, digest and chunks.
    package var size: UInt64
    package var digest: [UInt8]
    package var chunkCount: UInt64
    package var chunks: ChunkList
    /// The snapshot's tags, sorted and unique (none before version 4).
    package var tags: [String] = []
    /// The paths backed up, absolute and sorted; empty before version 4, which meant `sourcePath`.
    package var paths: [String] = []
    /// The version the record (and so its tree) was written with; kept when it is sealed again.
    package var formatVersion: UInt8 = SnapshotRecord.version
    /// The write's keys, for a `completeUnlessOpen` snapshot (its tree and files are sealed with them).
    package var write: WriteKeys?
    /// The owner's mark (version 5), checked when the record was opened.
    package var ownerMark: [UInt8]?
    /// Whether ``ownerMark`` is the mark of the vault's keys for this record (set by ``open``).
    package var hasValidOwnerMark = false
    /// The backup this record is a part of (version 6), as its body says.
    package var partOf: BackupPart?

    /// The backup this record is a part of, when it is one: version 6 with the owner's mark. A part
    /// without a valid mark is listed as a snapshot, which its owner can see and forget.
    package var part: BackupPart? { hasValidOwnerMark ? partOf : nil }

    /// Whether a writer holding no key may have made this record: see ``SnapshotInfo/isWriteOnly``.
    package var isWriteOnly: Bool { level.isSealedToClassKey && !hasValidOwnerMark }

    package init(
        id: [UInt8],
        name: String,
        sourcePath: String,
        hostname: String,
        created: Int64,
        scope: SyncScope,
        level: ProtectionLevel,
        statistics: SnapshotStatistics,
        size: UInt64,
        digest: [UInt8],
        chunkCount: UInt64,
        chunks: ChunkList,
        tags: [String] = [],
        paths: [String] = [],
        formatVersion: UInt8 = SnapshotRecord.version
    ) {
        self.id = id
        self.name = name
        self.sourcePath = sourcePath
        self.hostname = hostname
        self.created = created
        self.scope = scope
        self.level = level
        self.statistics = statistics
        self.size = size
        self.digest = digest
        self.chunkCount = chunkCount
        self.chunks = chunks
        self.tags = tags
        self.paths = paths
        self.formatVersion = formatVersion
    }

    package static let label = "coffer/v1/snapshot"

    /// The plaintext body, in the layout of the record's version.
    package var body: [UInt8] { unmarkedBody + (formatVersion >= Self.markedVersion ? ownerMark ?? [] : []) }

    /// The owner's mark of this record, made with `keys`; `nil` if they are not in memory (a
    /// write-only client, a vault never unlocked).
    ///
    /// - Throws: ``CofferError`` `.internalError` if the MAC cannot be computed.
    package func mark(keys: KeyRing) throws(CofferError) -> [UInt8]? {
        guard let index = try? keys.key(.index, scope.keyScope, .afterFirstUnlock) else { return nil }
        do {
            let key = try HKDF.deriveKey(from: index, label: Self.markLabel)
            return try HMACSHA256(key: key).authenticationCode(
                forParts: [Array(Self.markLabel.utf8) + [0] + id + [level.code], unmarkedBody]
            )
        } catch {
            throw CofferError(.internalError, "marking a snapshot failed: \(error)", underlying: error)
        }
    }

    /// Marks the record as the owner's, with `keys`: it is written as version 5.
    ///
    /// - Returns: Whether it was marked: not when `keys` are not in memory (a write-only client).
    /// - Throws: ``CofferError`` `.unsupportedFormat` for a record older than version 4 (its tree
    ///   encoding would change), `.internalError` if the MAC cannot be computed.
    @discardableResult
    package mutating func markAsOwners(keys: KeyRing) throws(CofferError) -> Bool {
        guard formatVersion >= Self.taggedVersion else {
            throw CofferError(
                .unsupportedFormat,
                "snapshot \(info.shortID) has record version \(formatVersion), which carries no owner's mark"
            )
        }
        guard let mark = try mark(keys: keys) else { return false }
        formatVersion = max(formatVersion, Self.markedVersion)
        ownerMark = mark
        hasValidOwnerMark = true
        return true
    }

    /// Makes the record a part of a backup in progress, marked as the owner's with `keys`: it is
    /// written as version 6.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` when `keys` cannot make the mark.
    package mutating func markAsPart(_ part: BackupPart, keys: KeyRing) throws(CofferError) {
        formatVersion = Self.partVersion
        partOf = part
        guard let mark = try mark(keys: keys) else {
            throw CofferError(.interactionNotAllowed, "a backup's part needs the vault's keys to mark it")
        }
        ownerMark = mark
        hasValidOwnerMark = true
    }

    /// The body without the owner's mark.
    private var unmarkedBody: [UInt8] {
        var writer = BinaryWriter()
        writer.write(lengthPrefixed: Array(name.utf8))
        writer.write(lengthPrefixed: Array(sourcePath.utf8))
        writer.write(lengthPrefixed: Array(hostname.utf8))
        writer.write(created)
        for value in [
            statistics.files, statistics.directories, statistics.symlinks, statistics.otherFiles,
            Int(statistics.bytes), statistics.newFiles, statistics.changedFiles, statistics.unchangedFiles,
            Int(statistics.bytesAdded),
        ] {
            writer.write(UInt64(value))
        }
        writer.write(size)
        writer.write(raw: digest)
        writer.write(chunkCount)
        chunks.encode(into: &writer)
        if formatVersion >= Self.taggedVersion {
            writer.write(UInt16(tags.count))
            for tag in tags { writer.write(lengthPrefixed: Array(tag.utf8)) }
            writer.write(UInt16(paths.count))
            for path in paths { writer.write(lengthPrefixed: Array(path.utf8)) }
        }
        if formatVersion >= Self.partVersion, let partOf { partOf.encode(into: &writer) }
        return writer.bytes
    }

    package func seal(keys: KeyRing, cipher: AESGCM) throws(CofferError) -> [UInt8] {
        try SealedRecord.seal(
            body,
            version: formatVersion,
            label: Self.label,
            id: id,
            scope: scope,
            level: level,
            keys: keys,
            write: write,
            cipher: cipher
        )
    }

    package static func open(
        _ stored: UnsafeRawBufferPointer,
        id: [UInt8],
        keys: KeyRing,
        cipher: AESGCM
    ) throws(CofferError)
        -> SnapshotRecord
    {
        let opened = try SealedRecord.open(
            stored,
            versions: readableVersions,
            label: label,
            id: id,
            keys: keys,
            cipher: cipher,
            what: "a snapshot record"
        )
        var record = try parse(opened.body, id: id, version: opened.version, scope: opened.scope, level: opened.level)
        record.write = opened.write
        if let mark = record.ownerMark, let expected = try record.mark(keys: keys) {
            record.hasValidOwnerMark = mark.withUnsafeBytes { given in
                expected.withUnsafeBytes { ConstantTime.equals(given, $0) }
            }
        }
        return record
    }

    /// Reads an opened snapshot record's body.
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed body.
    package static func parse(
        _ body: [UInt8],
        id: [UInt8],
        version: UInt8,
        scope: SyncScope,
        level: ProtectionLevel
    ) throws(CofferError) -> SnapshotRecord {
        var reader = BinaryReader(body, what: "a snapshot record")
        func text() throws(CofferError) -> String {
            guard let value = String(validating: try reader.readLengthPrefixed(), as: UTF8.self) else {
                throw CofferError(.decode, "a snapshot record holds text that is not UTF-8; it is damaged")
            }
            return value
        }
        let name = try text()
        let sourcePath = try text()
        let hostname = try text()
        let created = try reader.readInt64()
        var values: [Int] = []
        for _ in 0..<9 { values.append(Int(truncatingIfNeeded: try reader.readUInt64())) }
        var statistics = SnapshotStatistics()
        statistics.files = values[0]
        statistics.directories = values[1]
        statistics.symlinks = values[2]
        statistics.otherFiles = values[3]
        statistics.bytes = Int64(values[4])
        statistics.newFiles = values[5]
        statistics.changedFiles = values[6]
        statistics.unchangedFiles = values[7]
        statistics.bytesAdded = Int64(values[8])
        var record = SnapshotRecord(
            id: id,
            name: name,
            sourcePath: sourcePath,
            hostname: hostname,
            created: created,
            scope: scope,
            level: level,
            statistics: statistics,
            size: try reader.readUInt64(),
            digest: try reader.readBytes(32),
            chunkCount: try reader.readUInt64(),
            chunks: try ChunkList.decode(from: &reader),
            formatVersion: version
        )
        if version >= taggedVersion {
            for _ in 0..<Int(try reader.readUInt16()) { record.tags.append(try text()) }
            for _ in 0..<Int(try reader.readUInt16()) { record.paths.append(try text()) }
        }
        if version >= partVersion { record.partOf = try BackupPart.decode(from: &reader) }
        if version >= markedVersion { record.ownerMark = try reader.readBytes(32) }
        try reader.finish()
        return record
    }

    /// The tree's SHA-256, checked after every whole read of the tree.
    package var expectedDigest: [UInt8]? { digest }

    /// What the journal keeps of this snapshot: its name.
    package var changeDescription: LocalJournal.Description { LocalJournal.Description(name: name) }

    /// `error`, a failed check of this snapshot's tree, as a message naming the snapshot.
    package func damaged(_ error: CofferError) -> CofferError {
        CofferError(.decode, "snapshot \(info.shortID) ('\(name)') is damaged: \(error.message)", underlying: error)
    }

    package var info: SnapshotInfo {
        SnapshotInfo(
            id: id.hexEncoded,
            name: name,
            sourcePath: sourcePath,
            hostname: hostname,
            created: Date(timeIntervalSince1970: Double(created) / 1000),
            scope: scope,
            protection: level,
            statistics: statistics,
            tags: tags,
            paths: paths.isEmpty ? [sourcePath] : paths,
            isWriteOnly: isWriteOnly
        )
    }
}

/// A file's content as a reader needs it.
package struct FileContent: StoredContent {
    package let scope: SyncScope
    package let level: ProtectionLevel
    package let write: WriteKeys?
    package let size: UInt64
    /// The content's SHA-256 in a version 1 snapshot; `nil` in later ones, whose chunks are each
    /// checked against their keyed id instead.
    package let expectedDigest: [UInt8]?
    package let chunks: ChunkList

    package init(
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?,
        size: UInt64,
        expectedDigest: [UInt8]?,
        chunks: ChunkList
    ) {
        self.scope = scope
        self.level = level
        self.write = write
        self.size = size
        self.expectedDigest = expectedDigest
        self.chunks = chunks
    }
}

extension FileContent {
    /// A snapshot file's content, with the protection of the snapshot that holds it.
    ///
    /// - Throws: ``CofferError`` `.decode` if the entry has no content record (a damaged tree).
    package init(_ entry: TreeEntry, scope: SyncScope, level: ProtectionLevel, write: WriteKeys?) throws(CofferError) {
        guard let content = entry.content else {
            throw CofferError(
                .decode,
                "the snapshot's file '\(entry.displayPath)' has no content record; it is damaged"
            )
        }
        self.init(
            scope: scope,
            level: level,
            write: write,
            size: entry.size,
            expectedDigest: content.digest,
            chunks: content.chunks
        )
    }
}

extension ContentReader {
    /// Streams a snapshot file's content into `sink`, every chunk checked against its id as it is
    /// read; damage is reported naming the file.
    package func streamFile<Sink: ByteSink>(
        _ entry: TreeEntry,
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?,
        to sink: inout Sink,
        context: ContentReadContext? = nil,
        parallelAbove: Int = 2
    ) throws(CofferError) {
        let content = try FileContent(entry, scope: scope, level: level, write: write)
        do throws(CofferError) {
            try stream(
                content,
                range: 0..<entry.size,
                to: &sink,
                context: context,
                parallelAbove: parallelAbove,
                progress: nil
            )
        } catch  where error.code == .decode {
            throw CofferError(.decode, "file '\(entry.displayPath)' of the snapshot is damaged: \(error.message)")
        }
    }
}
