/// How many syncable records each group key epoch seals in a vault, read from the records' clear
/// headers without opening them (docs/FORMAT.md, "Key epochs"): what a new group must carry keys
/// for (``NewGroupKeys``).
package enum RecordEpochs {
    /// Where a table's records keep their scope byte, and the size of the fixed header the epoch id
    /// follows (docs/FORMAT.md: item records, chunk records, manifests).
    package struct Layout {
        package let table: KeyPath<Schema, Table>
        package let scopeOffset: Int
        package let fixedHeaderSize: Int
    }

    /// The sealed tables. The item and chunk sizes are `ItemRecord.headerSize` and
    /// `ChunkRecord.headerSize` of the floors above, which a test checks.
    package static var layouts: [Layout] {
        [
            Layout(table: \.items, scopeOffset: 2, fixedHeaderSize: 5),
            Layout(table: \.chunks, scopeOffset: 1, fixedHeaderSize: 8),
            Layout(table: \.blobs, scopeOffset: 1, fixedHeaderSize: SealedRecord.headerSize),
            Layout(table: \.snapshots, scopeOffset: 1, fixedHeaderSize: SealedRecord.headerSize),
        ]
    }

    /// The key epoch in the clear header of a stored record of `kind` (an item or a manifest), or
    /// `nil` for a header that cannot be read.
    package static func epoch(of kind: SyncRecordKind, stored: UnsafeRawBufferPointer) -> KeyEpoch? {
        let layout = kind == .item ? layouts[0] : layouts[2]
        return epoch(stored, layout: layout)
    }

    /// The key epoch in the clear header of a stored chunk record, or `nil`.
    package static func epoch(ofChunk stored: UnsafeRawBufferPointer) -> KeyEpoch? {
        epoch(stored, layout: layouts[1])
    }

    private static func epoch(_ stored: UnsafeRawBufferPointer, layout: Layout) -> KeyEpoch? {
        guard stored.count > layout.scopeOffset else { return nil }
        return SealedScope.read(code: stored[layout.scopeOffset], in: stored, fixedSize: layout.fixedHeaderSize)?.epoch
    }

    /// The number of syncable records sealed in each epoch. A header that cannot be read is a
    /// damaged record no key opens, and is not counted.
    package static func count(in txn: Transaction, schema: Schema) throws -> [KeyEpoch: Int] {
        var counts: [KeyEpoch: Int] = [:]
        for layout in layouts {
            // Chunk records are kept on their own or packed (``ChunkRecords``).
            let visit = { (body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws in
                if layout.table == \Schema.chunks {
                    try schema.records.forEach(in: txn, body)
                } else {
                    try txn.forEach(in: schema[keyPath: layout.table], body)
                }
            }
            try visit { _, stored in
                if stored.count > layout.scopeOffset,
                    let sealed = SealedScope.read(
                        code: stored[layout.scopeOffset],
                        in: stored,
                        fixedSize: layout.fixedHeaderSize
                    ),
                    sealed.scope == .syncable
                {
                    counts[sealed.epoch, default: 0] += 1
                }
                return true
            }
        }
        return counts
    }
}
