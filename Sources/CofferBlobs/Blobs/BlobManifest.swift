import Foundation

/// What a blob is and where its bytes are, sealed in the `blobs` table under the blob's id
/// (docs/FORMAT.md, "Blob manifests"):
///
/// ```
/// key:    blob id = HMAC-SHA256(blob-name key of the scope, name)
/// value:  header (3): version = 1 ‖ scope ‖ level
///         sealed: nonce (12) ‖ AES-256-GCM(manifest key of scope and level, body) ‖ tag (16)
///                 associated data = "coffer/v1/blob" ‖ 0x00 ‖ blob id ‖ header
/// body:   name (UInt16 length ‖ UTF-8) ‖ size (UInt64) ‖ SHA-256 of the content (32)
///         ‖ created ‖ modified (Int64 ms since 1970) ‖ chunk count (UInt64) ‖ chunk list
/// ```
///
/// The manifest commits in the transaction that makes the blob visible, so a blob is all there or not
/// there. Names appear only inside the sealed body; the key is a keyed hash of the name.
///
/// A blob written by a write-only client (version 2, always `completeUnlessOpen`) is filed under a
/// random id instead: such a client holds no blob-name key, so it can neither compute the id nor
/// find, replace or delete what is there. Listings show it as `NAME@TIME-TAG` (its write time, UTC,
/// and the start of its id);
/// `NAME` alone finds it when no blob of that name exists (the newest such, if several).
package struct BlobManifest: Sendable {
    package static let version: UInt8 = 1
    /// The version of a blob filed under a random id by a write-only client.
    package static let dropVersion: UInt8 = 2
    /// The versions this Coffer reads.
    package static let readableVersions: ClosedRange<UInt8> = version...dropVersion
    /// Names longer than this (in UTF-8 bytes) are refused.
    package static let maximumNameLength = 1024

    package var name: String
    package var scope: SyncScope
    package var level: ProtectionLevel
    package var size: UInt64
    package var digest: [UInt8]
    package var created: Int64
    package var modified: Int64
    package var chunkCount: UInt64
    package var chunks: ChunkList
    /// The write's keys, for a `completeUnlessOpen` blob.
    package var write: WriteKeys?
    /// Whether the blob was filed under a random id by a write-only client (``dropVersion``).
    package var isDrop = false
    /// The first six hex digits of a write-only client's blob's id, which its listed name ends with.
    package var dropTag = ""

    package init(
        name: String,
        scope: SyncScope,
        level: ProtectionLevel,
        size: UInt64,
        digest: [UInt8],
        created: Int64,
        modified: Int64,
        chunkCount: UInt64,
        chunks: ChunkList,
        write: WriteKeys? = nil
    ) {
        self.write = write
        self.name = name
        self.scope = scope
        self.level = level
        self.size = size
        self.digest = digest
        self.created = created
        self.modified = modified
        self.chunkCount = chunkCount
        self.chunks = chunks
    }

    /// Checks a blob name: not empty, at most 1024 UTF-8 bytes, no NUL or line breaks (which would
    /// make listings ambiguous).
    package static func validate(name: String) throws(CofferError) {
        guard !name.isEmpty else { throw CofferError(.param, "a blob name must not be empty") }
        guard name.utf8.count <= maximumNameLength else {
            throw CofferError(
                .param,
                "the blob name is \(name.utf8.count) bytes long; names are at most \(maximumNameLength) bytes"
            )
        }
        guard !name.unicodeScalars.contains(where: { $0 == "\0" || $0 == "\n" || $0 == "\r" }) else {
            throw CofferError(.param, "a blob name must not contain NUL or line breaks")
        }
    }

    /// The id a blob named `name` has in `scope`.
    package static func id(of name: String, scope: SyncScope, keys: KeyRing) throws(CofferError) -> [UInt8] {
        let key = try keys.key(.blobName, scope.keyScope, .afterFirstUnlock)
        do {
            return try HMACSHA256.authenticationCode(for: Array(name.utf8), key: key)
        } catch {
            throw CofferError(.internalError, "computing a blob id failed: \(error)", underlying: error)
        }
    }

    package static let label = "coffer/v1/blob"

    /// The sealed record to store under `id`.
    package func seal(id: [UInt8], keys: KeyRing, cipher: AESGCM) throws(CofferError) -> [UInt8] {
        var writer = BinaryWriter()
        writer.write(lengthPrefixed: Array(name.utf8))
        writer.write(size)
        writer.write(raw: digest)
        writer.write(created)
        writer.write(modified)
        writer.write(chunkCount)
        chunks.encode(into: &writer)
        return try SealedRecord.seal(
            writer.bytes,
            version: isDrop ? Self.dropVersion : Self.version,
            label: Self.label,
            id: id,
            scope: scope,
            level: level,
            keys: keys,
            write: write,
            cipher: cipher
        )
    }

    /// Opens the record stored under `id`.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if its level's key is not in memory,
    ///   `.decode` if it was altered, moved from another id, or is malformed.
    package static func open(
        _ stored: UnsafeRawBufferPointer,
        id: [UInt8],
        keys: KeyRing,
        cipher: AESGCM
    ) throws(CofferError) -> BlobManifest {
        let opened = try SealedRecord.open(
            stored,
            versions: readableVersions,
            label: label,
            id: id,
            keys: keys,
            cipher: cipher,
            what: "a blob manifest"
        )
        var manifest = try parse(opened.body, scope: opened.scope, level: opened.level)
        manifest.write = opened.write
        manifest.isDrop = opened.version == dropVersion
        if manifest.isDrop { manifest.dropTag = Array(id.prefix(3)).hexEncoded }
        guard !manifest.isDrop || manifest.level.isSealedToClassKey else {
            throw CofferError(.decode, "a write-only blob is not completeUnlessOpen; the vault is damaged")
        }
        return manifest
    }

    /// Whether the stored manifest is a write-only client's (filed under a random id), read from its
    /// clear header.
    package static func isDrop(_ stored: UnsafeRawBufferPointer) -> Bool {
        stored.first == dropVersion
    }

    /// The name a listing shows: the name, or for a write-only client's blob `NAME@TIME-TAG`, its
    /// write time in UTC to the second and the start of its random id (two writes in one second stay
    /// apart).
    package var displayName: String {
        guard isDrop else { return name }
        return "\(name)@\(Self.timeFormat.format(Date(timeIntervalSince1970: Double(modified) / 1000)))-\(dropTag)"
    }

    private static let timeFormat = Date.ISO8601FormatStyle(timeZone: .gmt)

    /// What the journal keeps of this blob: its listed name.
    package var changeDescription: LocalJournal.Description { LocalJournal.Description(name: displayName) }

    /// Reads an opened manifest's body, checking that its counts and sizes add up.
    ///
    /// - Throws: ``CofferError`` `.decode` for a malformed body.
    package static func parse(
        _ body: [UInt8],
        scope: SyncScope,
        level: ProtectionLevel
    ) throws(CofferError) -> BlobManifest {
        var reader = BinaryReader(body, what: "a blob manifest")
        guard let name = String(validating: try reader.readLengthPrefixed(), as: UTF8.self) else {
            throw CofferError(.decode, "a blob manifest holds a name that is not UTF-8; it is damaged")
        }
        let manifest = BlobManifest(
            name: name,
            scope: scope,
            level: level,
            size: try reader.readUInt64(),
            digest: try reader.readBytes(32),
            created: try reader.readInt64(),
            modified: try reader.readInt64(),
            chunkCount: try reader.readUInt64(),
            chunks: try ChunkList.decode(from: &reader)
        )
        try reader.finish()
        if case .inline(let entries) = manifest.chunks {
            guard UInt64(entries.count) == manifest.chunkCount,
                entries.reduce(UInt64(0), { $0 + UInt64($1.length) }) == manifest.size
            else {
                throw CofferError(.decode, "the manifest of blob '\(name)' does not add up; it is damaged")
            }
        } else if case .indirect(let references) = manifest.chunks {
            guard references.reduce(UInt64(0), { $0 + UInt64($1.entryCount) }) == manifest.chunkCount,
                references.reduce(UInt64(0), { $0 + $1.byteCount }) == manifest.size
            else {
                throw CofferError(.decode, "the manifest of blob '\(name)' does not add up; it is damaged")
            }
        }
        return manifest
    }

    /// The public description of this blob.
    package var info: BlobInfo {
        BlobInfo(
            name: displayName,
            size: Int64(size),
            scope: scope,
            protection: level,
            created: Date(timeIntervalSince1970: Double(created) / 1000),
            modified: Date(timeIntervalSince1970: Double(modified) / 1000),
            sha256: digest,
            chunkCount: Int(chunkCount),
            listChunkCount: chunks.listChunkCount
        )
    }
}
