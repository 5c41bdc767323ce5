/// One chunk of a blob's content: its id and plaintext length.
package struct ChunkEntry: Hashable, Sendable {
    package static let encodedSize = 36

    package let id: ChunkID
    package let length: UInt32

    package init(id: ChunkID, length: UInt32) {
        self.id = id
        self.length = length
    }

    package func encode(into writer: inout BinaryWriter) {
        writer.write(id)
        writer.write(length)
    }

    package static func decode(from reader: inout BinaryReader<[UInt8]>) throws(CofferError) -> ChunkEntry {
        ChunkEntry(id: try reader.readChunkID(), length: try reader.readUInt32())
    }
}

/// A list chunk of an indirect chunk list: a chunk whose plaintext is consecutive ``ChunkEntry``s,
/// with how many entries it holds and how many content bytes they cover (so a range read can skip it
/// without loading it).
package struct ListChunkReference: Hashable, Sendable {
    package let id: ChunkID
    package let entryCount: UInt32
    package let byteCount: UInt64

    package init(id: ChunkID, entryCount: UInt32, byteCount: UInt64) {
        self.id = id
        self.entryCount = entryCount
        self.byteCount = byteCount
    }
}

/// The ordered chunks of a blob or file, as a manifest stores them (docs/FORMAT.md, "Manifests").
///
/// Short lists are stored inline. Longer ones are stored in list chunks (up to
/// ``entriesPerListChunk`` entries each, sealed and deduplicated like content chunks), and the
/// manifest holds only their references, as restic's trees and kopia's indirect objects do: a 2 GiB
/// blob's manifest holds five references, not 32,768 entries, and a reader or writer holds one list
/// chunk at a time.
package enum ChunkList: Hashable, Sendable {
    case inline([ChunkEntry])
    case indirect([ListChunkReference])

    /// Lists up to this many entries stay inline (about 16 MiB of content at the average chunk size).
    package static let inlineLimit = 256
    /// Entries per list chunk: as many as fit in the largest content chunk (256 KiB).
    package static let entriesPerListChunk = (256 << 10) / ChunkEntry.encodedSize

    /// How many list chunks hold the list (0 for an inline list).
    package var listChunkCount: Int {
        if case .indirect(let references) = self { return references.count }
        return 0
    }

    private static let inlineTag: UInt8 = 0
    private static let indirectTag: UInt8 = 1

    package func encode(into writer: inout BinaryWriter) {
        switch self {
        case .inline(let entries):
            writer.write(Self.inlineTag)
            writer.write(UInt32(entries.count))
            for entry in entries { entry.encode(into: &writer) }
        case .indirect(let references):
            writer.write(Self.indirectTag)
            writer.write(UInt32(references.count))
            for reference in references {
                writer.write(reference.id)
                writer.write(reference.entryCount)
                writer.write(reference.byteCount)
            }
        }
    }

    package static func decode(from reader: inout BinaryReader<[UInt8]>) throws(CofferError) -> ChunkList {
        let tag = try reader.readUInt8()
        let count = Int(try reader.readUInt32())
        switch tag {
        case inlineTag:
            guard count <= inlineLimit else {
                throw CofferError(.decode, "a manifest lists \(count) chunks inline, over the limit; it is damaged")
            }
            var entries: [ChunkEntry] = []
            for _ in 0..<count { entries.append(try ChunkEntry.decode(from: &reader)) }
            return .inline(entries)
        case indirectTag:
            var references: [ListChunkReference] = []
            for _ in 0..<count {
                let reference = ListChunkReference(
                    id: try reader.readChunkID(),
                    entryCount: try reader.readUInt32(),
                    byteCount: try reader.readUInt64()
                )
                guard reference.entryCount > 0, Int(reference.entryCount) <= entriesPerListChunk else {
                    throw CofferError(.decode, "a manifest's chunk list reference is invalid; it is damaged")
                }
                references.append(reference)
            }
            return .indirect(references)
        default:
            throw CofferError(.decode, "a manifest's chunk list has unknown kind \(tag); it is damaged")
        }
    }

    /// Decodes a list chunk's plaintext, checking it against its reference.
    package static func entries(
        ofListChunk plaintext: [UInt8],
        reference: ListChunkReference
    ) throws(CofferError)
        -> [ChunkEntry]
    {
        guard plaintext.count == Int(reference.entryCount) * ChunkEntry.encodedSize else {
            throw CofferError(.decode, "a list chunk does not hold the entries its manifest declares; it is damaged")
        }
        var reader = BinaryReader(plaintext, what: "a list chunk")
        var entries: [ChunkEntry] = []
        entries.reserveCapacity(Int(reference.entryCount))
        var bytes: UInt64 = 0
        for _ in 0..<reference.entryCount {
            let entry = try ChunkEntry.decode(from: &reader)
            bytes += UInt64(entry.length)
            entries.append(entry)
        }
        guard bytes == reference.byteCount else {
            throw CofferError(
                .decode,
                "a list chunk covers \(bytes) bytes but its manifest says \(reference.byteCount)"
            )
        }
        return entries
    }
}

/// Builds a ``ChunkList`` entry by entry, handing out a list chunk each time one fills, so a writer
/// never holds more than one list chunk of entries.
package struct ChunkListBuilder {
    private var entries: [ChunkEntry] = []
    private var references: [ListChunkReference] = []

    package init() {}

    /// The encoded plaintext of a full list chunk, to be stored as a chunk.
    package struct ListChunk {
        package let plaintext: [UInt8]
        package let entryCount: UInt32
        package let byteCount: UInt64

        package init(plaintext: [UInt8], entryCount: UInt32, byteCount: UInt64) {
            self.plaintext = plaintext
            self.entryCount = entryCount
            self.byteCount = byteCount
        }
    }

    /// Adds an entry; returns a list chunk to store when one is full.
    package mutating func append(_ entry: ChunkEntry) -> ListChunk? {
        entries.append(entry)
        return entries.count == ChunkList.entriesPerListChunk ? takeListChunk() : nil
    }

    /// Records that a list chunk handed out by ``append(_:)`` or ``finish()`` was stored under `id`.
    package mutating func stored(_ chunk: ListChunk, id: ChunkID) {
        references.append(ListChunkReference(id: id, entryCount: chunk.entryCount, byteCount: chunk.byteCount))
    }

    /// The last list chunk to store, if the list is indirect and has entries left over.
    package mutating func finish() -> ListChunk? {
        if references.isEmpty, entries.count <= ChunkList.inlineLimit { return nil }
        return entries.isEmpty ? nil : takeListChunk()
    }

    /// The finished list (after ``finish()`` and storing what it returned).
    package var list: ChunkList { references.isEmpty ? .inline(entries) : .indirect(references) }

    private mutating func takeListChunk() -> ListChunk {
        var writer = BinaryWriter()
        var bytes: UInt64 = 0
        for entry in entries {
            entry.encode(into: &writer)
            bytes += UInt64(entry.length)
        }
        let chunk = ListChunk(plaintext: writer.bytes, entryCount: UInt32(entries.count), byteCount: bytes)
        entries.removeAll(keepingCapacity: true)
        return chunk
    }
}

extension ChunkList {
    /// Visits the entries in order with the offset of each in the content, skipping the entries (and
    /// the list chunks, without loading them) that end at or before `range.lowerBound` and stopping at
    /// `range.upperBound`; stops early when `body` returns `false`.
    ///
    /// - Parameter loadListChunk: Loads and decodes one list chunk (see ``entries(ofListChunk:reference:)``).
    package func forEachEntry(
        in range: Range<UInt64>? = nil,
        loadListChunk: (ListChunkReference) throws(CofferError) -> [ChunkEntry],
        _ body: (ChunkEntry, _ offset: UInt64) throws(CofferError) -> Bool
    ) throws(CofferError) {
        var offset: UInt64 = 0
        func visit(_ entries: [ChunkEntry]) throws(CofferError) -> Bool {
            for entry in entries {
                let end = offset + UInt64(entry.length)
                defer { offset = end }
                if let range {
                    if offset >= range.upperBound { return false }
                    if end <= range.lowerBound { continue }
                }
                guard try body(entry, offset) else { return false }
            }
            return true
        }
        switch self {
        case .inline(let entries):
            _ = try visit(entries)
        case .indirect(let references):
            for reference in references {
                if let range {
                    if offset >= range.upperBound { return }
                    if offset + reference.byteCount <= range.lowerBound {
                        offset += reference.byteCount
                        continue
                    }
                }
                guard try visit(try loadListChunk(reference)) else { return }
            }
        }
    }
}
