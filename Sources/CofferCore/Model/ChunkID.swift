import Foundation

/// A chunk's id: HMAC-SHA256 of its plaintext under the chunk-id key of its scope and protection
/// level, 32 bytes (docs/FORMAT.md, "Chunks"). A type of its own, so a chunk id cannot be passed where
/// a record id or a key is meant.
package struct ChunkID: Hashable, Sendable, ContiguousBytes, CustomStringConvertible {
    /// The size of every chunk id.
    package static let size = 32

    /// The id's bytes, as stored.
    package let bytes: [UInt8]

    /// The id made of `bytes`, which must be ``size`` long (a computed HMAC, or a length already checked).
    package init(_ bytes: [UInt8]) {
        precondition(bytes.count == Self.size, "a chunk id is 32 bytes")
        self.bytes = bytes
    }

    /// The id stored as `bytes` (a key, a list entry, a bundle frame), checked.
    ///
    /// - Throws: ``CofferError`` `.decode` when it is not 32 bytes.
    package init(stored bytes: some Collection<UInt8>) throws(CofferError) {
        guard bytes.count == Self.size else {
            throw CofferError(.decode, "a chunk id of \(bytes.count) bytes where 32 belong; the data is damaged")
        }
        self.bytes = Array(bytes)
    }

    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// The id in hex, for messages and tests.
    package var description: String { bytes.hexEncoded }
}

extension BinaryReader {
    /// The next 32 bytes, as a chunk id.
    package mutating func readChunkID() throws(CofferError) -> ChunkID {
        ChunkID(try readBytes(ChunkID.size))
    }
}

extension BinaryWriter {
    /// A chunk id's 32 bytes.
    package mutating func write(_ id: ChunkID) { write(raw: id.bytes) }
}
