/// The `changes` table: an ordered log of changes to syncable records, which incremental export reads
/// (docs/FORMAT.md, "Change log"). Key: sequence number (`UInt64`, big-endian, from 1); value:
/// `kind (1) ‖ record id`. Each change also sets the record's entry in `versions` (its clock stamp and
/// device, live or deleted), which import compares to decide which write wins. Both are written in
/// the same transaction as the change they record, so the log and the data never disagree.
package enum ChangeLog {
    /// What happened to a record.
    package enum Kind: UInt8 {
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

        /// The kind of record changed.
        package var record: SyncRecordKind {
            switch self {
            case .itemPut, .itemDelete: return .item
            case .blobPut, .blobDelete: return .blob
            case .snapshotPut, .snapshotDelete: return .snapshot
            }
        }

        /// Whether the change removed the record.
        package var isDelete: Bool { self == .itemDelete || self == .blobDelete || self == .snapshotDelete }

        /// The change that puts or deletes a record of `kind`.
        package init(_ kind: SyncRecordKind, deleted: Bool) {
            switch kind {
            case .item: self = deleted ? .itemDelete : .itemPut
            case .blob: self = deleted ? .blobDelete : .blobPut
            case .snapshot: self = deleted ? .snapshotDelete : .snapshotPut
            }
        }
    }

    /// Records a change made here to a record of `scope`: in the local journal always, and in the
    /// change log (which sync reads) when the record is syncable.
    package static func record(
        _ kind: Kind,
        recordID: [UInt8],
        scope: SyncScope,
        description: LocalJournal.Description?,
        keys: KeyRing?,
        cipher: AESGCM? = nil,
        in txn: Transaction,
        schema: Schema
    ) throws {
        try LocalJournal.append(
            kind.record,
            isDelete: kind.isDelete,
            recordID: recordID,
            scope: scope,
            origin: .local,
            description: description,
            keys: keys,
            cipher: cipher,
            in: txn,
            schema: schema
        )
        if scope == .syncable { try append(kind, recordID: recordID, in: txn, schema: schema) }
    }

    /// Records a change an import or a pull applied: in the local journal (with `origin`), and in the
    /// change log with the version the record came with.
    package static func recordApplied(
        _ kind: SyncRecordKind,
        recordID: [UInt8],
        entry: VersionEntry,
        origin: LocalJournal.Origin,
        description: LocalJournal.Description?,
        keys: KeyRing?,
        cipher: AESGCM? = nil,
        in txn: Transaction,
        schema: Schema
    ) throws {
        try LocalJournal.append(
            kind,
            isDelete: entry.isDeleted,
            recordID: recordID,
            scope: .syncable,
            origin: origin,
            description: description,
            keys: keys,
            cipher: cipher,
            in: txn,
            schema: schema
        )
        try append(kind, recordID: recordID, entry: entry, in: txn, schema: schema)
    }

    /// Appends the change another device made, as its version entry says (a write, or a deletion),
    /// carrying that version: how an import logs a record it applied, and how a record is logged again.
    @discardableResult
    package static func append(
        _ kind: SyncRecordKind,
        recordID: [UInt8],
        entry: VersionEntry,
        in txn: Transaction,
        schema: Schema
    ) throws -> UInt64 {
        try append(
            Kind(kind, deleted: entry.isDeleted),
            recordID: recordID,
            version: entry.version,
            in: txn,
            schema: schema
        )
    }

    /// Appends a change, sets the record's version and returns the change's sequence number.
    ///
    /// - Parameter version: The version the change carries: `nil` for a change made here (a fresh
    ///   stamp of this vault's clock and its device id), or the version of an imported record.
    @discardableResult
    package static func append(
        _ kind: Kind,
        recordID: [UInt8],
        version: RecordVersion? = nil,
        in txn: Transaction,
        schema: Schema
    ) throws -> UInt64 {
        let stamped: RecordVersion
        if let version {
            try HybridClock.observe(version.stamp, in: txn, schema: schema)
            stamped = version
        } else {
            // A change follows the version it replaces, even when the clock restarted below it.
            let stamp = try HybridClock.tick(in: txn, schema: schema) {
                try VersionEntry.load(kind.record, id: recordID, in: txn, schema: schema)?.version.stamp
            }
            stamped = RecordVersion(stamp: stamp, device: try localDevice(in: txn, schema: schema))
        }
        try txn.put(
            schema.versions,
            key: VersionEntry.key(kind.record, id: recordID),
            value: VersionEntry(version: stamped, isDeleted: kind.isDelete).encoded
        )
        let sequence = try lastSequence(in: txn, schema: schema) + 1
        try txn.put(schema.changes, key: sequenceKey(sequence), value: [kind.rawValue] + recordID)
        return sequence
    }

    /// The sequence number of the latest change; 0 when there is none.
    package static func lastSequence(in txn: Transaction, schema: Schema) throws -> UInt64 {
        try txn.lastKey(in: schema.changes).map(decodeSequence) ?? 0
    }

    /// Calls `body` with every change after `sequence`, in order, until it returns `false`.
    package static func forEach(
        after sequence: UInt64,
        in txn: Transaction,
        schema: Schema,
        _ body: (_ sequence: UInt64, _ kind: Kind, _ recordID: [UInt8]) throws -> Bool
    ) throws {
        try txn.forEach(in: schema.changes, from: sequenceKey(sequence + 1)) { key, value in
            guard let kind = value.first.flatMap(Kind.init(rawValue:)), value.count == 1 + kind.record.idLength else {
                throw CofferError(.decode, "an entry of the change log is malformed; the vault is damaged")
            }
            return try body(decodeSequence(key), kind, Array(value.dropFirst()))
        }
    }

    /// Every change after `sequence`, in order.
    package static func changes(
        after sequence: UInt64,
        in txn: Transaction,
        schema: Schema
    ) throws -> [(UInt64, Kind, [UInt8])] {
        var result: [(UInt64, Kind, [UInt8])] = []
        try forEach(after: sequence, in: txn, schema: schema) { sequence, kind, id in
            result.append((sequence, kind, id))
            return true
        }
        return result
    }

    package static func sequenceKey(_ sequence: UInt64) -> [UInt8] {
        withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
    }

    private static func decodeSequence(_ key: some Collection<UInt8>) -> UInt64 {
        key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    private static func localDevice(in txn: Transaction, schema: Schema) throws -> [UInt8] {
        guard let device = try txn.get(schema.meta, key: Array(MetaKey.deviceID.utf8)), device.count == 16 else {
            throw CofferError(.decode, "meta \"device-id\" is missing or malformed; the vault is damaged")
        }
        return device
    }
}
