/// The pack a write transaction is filling (``ChunkRecords``): small records gather here in memory
/// and are stored as one value when the pack is full or the transaction commits. Kept as the
/// transaction's state (``Transaction/state(_:)``), so every write in one transaction shares it, and
/// it is dropped, unstored, with a transaction that aborts.
///
/// The records are kept as the arrays they came in (no copy): storing the pack copies each once,
/// straight into the map.
package final class OpenChunkPack {
    /// The number the pack is stored under.
    package private(set) var number: UInt64
    /// The pack's records so far, in order, with their offsets; `nil` for one dropped since.
    private var entries: [(id: ChunkID, offset: Int, record: [UInt8])?] = []
    /// The size of the records added so far, dropped ones included: the next record's offset.
    private(set) var size = 0
    /// Where each live record's entry is.
    private var index: [ChunkID: Int] = [:]

    init(number: UInt64) {
        self.number = number
    }

    /// Whether the pack holds nothing.
    var isEmpty: Bool { index.isEmpty }

    /// Adds `record` for chunk `id`; returns its locator.
    func add(_ id: ChunkID, record: [UInt8]) -> ChunkLocator {
        if let existing = index[id] { drop(at: existing) }
        let locator = ChunkLocator(pack: number, offset: size, length: record.count)
        index[id] = entries.count
        entries.append((id, size, record))
        size += record.count
        return locator
    }

    /// Calls `body` with chunk `id`'s record if this pack holds it.
    func withRecord<R>(_ id: ChunkID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let at = index[id], let entry = entries[at] else { return nil }
        return try entry.record.withUnsafeBytes(body)
    }

    /// Drops chunk `id`'s record; returns whether the pack held it.
    @discardableResult
    func drop(_ id: ChunkID) -> Bool {
        guard let at = index[id] else { return false }
        drop(at: at)
        return true
    }

    private func drop(at position: Int) {
        guard let entry = entries[position] else { return }
        entries[position] = nil
        index[entry.id] = nil
    }

    /// A closed pack, to be stored.
    struct Closed {
        let number: UInt64
        /// The live records, in order: dropped ones are left out, and those after them move up.
        let records: [(id: ChunkID, record: [UInt8])]
        /// The records that moved up, with their new locators.
        let moved: [(ChunkID, ChunkLocator)]
        /// The size of the records.
        let size: Int

        /// The size of the stored pack: records, directory and trailer.
        var storedSize: Int { size + records.count * ChunkPack.entrySize + ChunkPack.trailerSize }

        /// Writes the pack into `buffer`, ``storedSize`` bytes.
        func write(into buffer: UnsafeMutableRawBufferPointer) {
            var offset = 0
            for (_, record) in records {
                record.withUnsafeBytes { bytes in
                    guard let source = bytes.baseAddress else { return }
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: source, byteCount: bytes.count)
                }
                offset += record.count
            }
            let directory = ChunkPack.directory(records.map { ($0.id, $0.record.count) })
            directory.withUnsafeBytes {
                buffer.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
        }
    }

    /// The pack as it is to be stored; then empties it for the next number.
    func close() -> Closed {
        var records: [(id: ChunkID, record: [UInt8])] = []
        var moved: [(ChunkID, ChunkLocator)] = []
        var offset = 0
        for case let entry? in entries {
            if entry.offset != offset {
                moved.append((entry.id, ChunkLocator(pack: number, offset: offset, length: entry.record.count)))
            }
            records.append((entry.id, entry.record))
            offset += entry.record.count
        }
        let closed = Closed(number: number, records: records, moved: moved, size: offset)
        number += 1
        entries = []
        size = 0
        index = [:]
        return closed
    }
}
