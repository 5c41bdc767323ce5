public import Foundation

/// What ``Blobs/stat(_:)-1nwjp`` and ``Blobs/list()-7kuiv`` report about a blob.
public struct BlobInfo: Sendable, Hashable {
    /// The blob's name.
    public let name: String
    /// Its size in bytes.
    public let size: Int64
    /// Whether it travels to the vault's sync peers.
    public let scope: SyncScope
    /// When it can be read: ``ProtectionLevel/whenUnlocked`` blobs only while the vault is unlocked.
    public let protection: ProtectionLevel
    /// When a blob of this name was first written (kept when it is overwritten).
    public let created: Date
    /// When its content was last written.
    public let modified: Date
    /// The SHA-256 digest of its content, checked at the end of every full read.
    public let sha256: [UInt8]
    /// How many content chunks its bytes are cut into.
    public let chunkCount: Int
    /// How many list chunks hold its chunk list (0 when the list fits in the manifest). Each is a
    /// stored chunk too, so ``BlobStatistics/chunkCount`` counts them beside the content chunks.
    public let listChunkCount: Int

    /// The SHA-256 digest in lowercase hexadecimal.
    public var sha256Hex: String { sha256.hexEncoded }
}
