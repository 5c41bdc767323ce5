/// A pack: small chunk records kept together in one value of the `chunkPacks` table, so that none
/// rounds up to whole pages of its own (docs/FORMAT.md, "Chunk packs").
///
/// ```
/// pack  := record × count ‖ entry × count ‖ count (UInt32) ‖ version = 1
/// entry := chunk id (32) ‖ record length (UInt32)
/// ```
///
/// Records come first, in entry order, so a writer appends each where it will stay and a locator's
/// offset is known when the record is added; the directory at the end lets a pack whose records were
/// mostly freed be rewritten (its live records moved to a new pack) without a scan of every locator.
package enum ChunkPack {
    package static let version: UInt8 = 1
    /// The size of the count and version after the directory.
    package static let trailerSize = 5
    /// The size of one directory entry.
    package static let entrySize = ChunkID.size + 4

    /// A record shorter than this is packed; a longer one is stored on its own, where LMDB's rounding
    /// to whole 4 KiB pages costs it under 6%.
    package static let recordLimit = 64 << 10
    /// A pack is closed once its records reach this size: large enough that its own rounding is
    /// negligible, small enough that rewriting it to free dead records stays cheap.
    package static let targetSize = 1 << 20

    /// One directory entry, with its record's offset in the pack.
    package struct Entry: Equatable {
        package let id: ChunkID
        package let offset: Int
        package let length: Int
    }

    /// The directory of `entries` (ids and record lengths, in the order of the pack's records) and
    /// the trailer: what follows the records.
    package static func directory(_ entries: [(id: ChunkID, length: Int)]) -> [UInt8] {
        var writer = BinaryWriter()
        for entry in entries {
            writer.write(raw: entry.id.bytes)
            writer.write(UInt32(entry.length))
        }
        writer.write(UInt32(entries.count))
        writer.write(version)
        return writer.bytes
    }

    /// Where the records end in `pack`, before its directory.
    ///
    /// - Throws: ``CofferError`` `.decode` for a pack whose trailer is damaged.
    package static func recordsEnd(of pack: UnsafeRawBufferPointer) throws(CofferError) -> Int {
        guard pack.count >= trailerSize, pack[pack.count - 1] == version else {
            throw CofferError(.decode, "a chunk pack's trailer is damaged; \(damaged)")
        }
        let count = pack.loadUnaligned(fromByteOffset: pack.count - trailerSize, as: UInt32.self).bigEndian
        let directory = Int(count) * entrySize
        guard directory <= pack.count - trailerSize else {
            throw CofferError(.decode, "a chunk pack's directory runs past its start; \(damaged)")
        }
        return pack.count - trailerSize - directory
    }

    /// Every entry of `pack`'s directory, checked against its length.
    ///
    /// - Throws: ``CofferError`` `.decode` for a damaged pack.
    package static func entries(of pack: UnsafeRawBufferPointer) throws(CofferError) -> [Entry] {
        let end = try recordsEnd(of: pack)
        let directory = UnsafeRawBufferPointer(rebasing: pack[end..<pack.count - trailerSize])
        var reader = BinaryReader(directory, what: "a chunk pack's directory")
        var entries: [Entry] = []
        var offset = 0
        while reader.offset < directory.count {
            let id = ChunkID(try reader.readBytes(ChunkID.size))
            let length = Int(try reader.readUInt32())
            entries.append(Entry(id: id, offset: offset, length: length))
            offset += length
        }
        guard offset == end else {
            throw CofferError(.decode, "a chunk pack's records do not add up to its length; \(damaged)")
        }
        return entries
    }

    /// The record at `offset` and `length` in `pack`. Only the record's own pages are read: the
    /// bound is the pack's end less its trailer, not the directory's start, which lies on the pack's
    /// last page. (A locator pointing into the directory gives bytes that fail the record's seal,
    /// and `verify` checks every locator against its pack's directory.)
    ///
    /// - Throws: ``CofferError`` `.decode` when it lies outside the pack.
    package static func record(
        in pack: UnsafeRawBufferPointer,
        offset: Int,
        length: Int
    ) throws(CofferError) -> UnsafeRawBufferPointer {
        guard offset >= 0, length >= 0, offset + length <= pack.count - trailerSize else {
            throw CofferError(.decode, "a packed chunk's place lies outside its pack; \(damaged)")
        }
        return UnsafeRawBufferPointer(rebasing: pack[offset..<offset + length])
    }

    private static let damaged = "the vault is damaged; \(run: .verify)"
}

/// Where a packed chunk's record lies: its pack's number and its place in the pack (the value of the
/// `packedChunks` table, 16 bytes).
package struct ChunkLocator: Equatable {
    package let pack: UInt64
    package let offset: UInt32
    package let length: UInt32

    package init(pack: UInt64, offset: Int, length: Int) {
        self.pack = pack
        self.offset = UInt32(offset)
        self.length = UInt32(length)
    }

    /// The locator stored as `bytes`.
    ///
    /// - Throws: ``CofferError`` `.decode` when it is not 16 bytes.
    package init(decoding bytes: UnsafeRawBufferPointer) throws(CofferError) {
        guard bytes.count == 16 else {
            throw CofferError(.decode, "a packed chunk's entry is \(bytes.count) bytes, not 16; the vault is damaged")
        }
        var reader = BinaryReader(bytes, what: "a packed chunk's entry")
        pack = try reader.readUInt64()
        offset = try reader.readUInt32()
        length = try reader.readUInt32()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(pack)
        writer.write(offset)
        writer.write(length)
        return writer.bytes
    }

    /// The pack number as a key of the `chunkPacks` and `chunkPackUsage` tables (big-endian, so
    /// packs sort by number).
    package static func key(_ pack: UInt64) -> [UInt8] {
        withUnsafeBytes(of: pack.bigEndian) { Array($0) }
    }

    /// The pack number a key of those tables names, or `nil` for a key that is not 8 bytes.
    package static func pack(ofKey key: UnsafeRawBufferPointer) -> UInt64? {
        key.count == 8 ? key.loadUnaligned(as: UInt64.self).bigEndian : nil
    }
}
