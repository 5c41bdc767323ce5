/// The `changes` table: an ordered log of changes to syncable records, which incremental export reads
/// (docs/FORMAT.md, "Change log"). Key: sequence number (`UInt64`, big-endian, from 1); value:
/// `kind (1) ‖ record id`. Written in the same transaction as the change it records, so the log and
/// the data never disagree.
enum ChangeLog {
    /// What happened to a record.
    enum Kind: UInt8 {
        /// A keychain item was added or replaced.
        case itemPut = 1
        /// A keychain item was deleted.
        case itemDelete = 2
        /// A blob was written or renamed to this id.
        case blobPut = 3
        /// A blob was deleted, or renamed away from this id.
        case blobDelete = 4
        /// A snapshot was taken.
        case snapshotPut = 5
        /// A snapshot was forgotten.
        case snapshotDelete = 6
    }

    /// Appends a change and returns its sequence number.
    @discardableResult
    static func append(_ kind: Kind, recordID: [UInt8], in txn: Transaction, schema: Schema) throws -> UInt64 {
        let last = try txn.lastKey(in: schema.changes).map { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } } ?? 0
        let sequence = last + 1
        try txn.put(
            schema.changes,
            key: withUnsafeBytes(of: sequence.bigEndian) { Array($0) },
            value: [kind.rawValue] + recordID
        )
        return sequence
    }

    /// Every change after `sequence`, in order.
    static func changes(after sequence: UInt64, in txn: Transaction, schema: Schema) throws -> [(UInt64, Kind, [UInt8])]
    {
        var result: [(UInt64, Kind, [UInt8])] = []
        let start = withUnsafeBytes(of: (sequence + 1).bigEndian) { Array($0) }
        try txn.forEach(in: schema.changes, from: start) { key, value in
            if let kind = value.first.flatMap(Kind.init(rawValue:)) {
                result.append((key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, kind, Array(value.dropFirst())))
            }
            return true
        }
        return result
    }
}
