/// The pack a write transaction is filling (``ChunkRecords``): small records gather here in memory
/// and are stored as one value when the pack is full or the transaction commits. Kept as the
/// transaction's state (``Transaction/state(_:)``), so every write in one transaction shares it, and
/// it is dropped, unstored, with a transaction that aborts.
package final class OpenChunkPack {
    /// The number the pack is stored under.
    package private(set) var number: UInt64
    /// The pack's entries so far, in order; `nil` for a record dropped since it was added.
    private var entries: [(id: ChunkID, offset: Int, length: Int)?] = []
    /// The records, one after another.
    private var records: [UInt8] = []
    /// The bytes of records dropped since they were added.
    private var deadBytes = 0
    /// Where each live record's entry is.
    private var index: [ChunkID: Int] = [:]

    init(number: UInt64) {
        self.number = number
    }

    /// Whether the pack holds nothing.
    var isEmpty: Bool { index.isEmpty }

    /// The size of the records added so far.
    var size: Int { records.count }

    /// Adds `record` for chunk `id`; returns its locator.
    func add(_ id: ChunkID, record: UnsafeRawBufferPointer) -> ChunkLocator {
        if let existing = index[id] { drop(at: existing) }
        // Room for a whole pack at once: appending never copies what is there.
        if records.isEmpty { records.reserveCapacity(ChunkPack.targetSize + ChunkPack.recordLimit) }
        let locator = ChunkLocator(pack: number, offset: records.count, length: record.count)
        index[id] = entries.count
        entries.append((id, records.count, record.count))
        records.append(contentsOf: record)
        return locator
    }

    /// Calls `body` with chunk `id`'s record if this pack holds it.
    func withRecord<R>(_ id: ChunkID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let at = index[id], let entry = entries[at] else { return nil }
        return try records.withUnsafeBytes {
            try body(UnsafeRawBufferPointer(rebasing: $0[entry.offset..<entry.offset + entry.length]))
        }
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
        deadBytes += entry.length
    }

    /// The pack as stored, leaving out dropped records, with the new locators of the records that
    /// moved up in their place; then empties the pack for the next number. Without dropped records
    /// the records are not copied: the directory is appended to them.
    func close() -> (number: UInt64, value: [UInt8], moved: [(ChunkID, ChunkLocator)], size: Int) {
        var kept: [(id: ChunkID, length: Int)] = []
        var moved: [(ChunkID, ChunkLocator)] = []
        var value: [UInt8] = []
        if deadBytes > 0 { value.reserveCapacity(records.count - deadBytes) }
        for case let entry? in entries {
            kept.append((entry.id, entry.length))
            guard deadBytes > 0 else { continue }
            if value.count != entry.offset {
                moved.append((entry.id, ChunkLocator(pack: number, offset: value.count, length: entry.length)))
            }
            value.append(contentsOf: records[entry.offset..<entry.offset + entry.length])
        }
        if deadBytes == 0 { swap(&value, &records) }
        let size = value.count
        ChunkPack.finish(&value, entries: kept)
        let closed = (number, value, moved, size)
        number += 1
        entries = []
        records = []
        deadBytes = 0
        index = [:]
        return closed
    }
}
