import Foundation

/// The `journal` table: every change to a record of either scope, in commit order, for apps that
/// watch their data (``Vault/changes(after:)``); it never leaves this vault (docs/FORMAT.md, "Journal").
///
/// ```
/// key:   sequence number (UInt64, big-endian, from 1)
/// value: version (1) = 1 ‖ operation (1): 1 put, 2 delete ‖ record kind (1): 1 item, 2 blob, 3 snapshot
///        ‖ scope (1) ‖ origin (1): 1 local, 2 bundle import, 3 pull ‖ writer (8): the writing
///        handle's random token ‖ process id (UInt32) ‖ time (Int64 ms since 1970)
///        ‖ record id (UInt8 length ‖ id) ‖ description (UInt32 length ‖ sealed description, or empty)
/// description, sealed: nonce ‖ AES-256-GCM(manifest key of the device scope at afterFirstUnlock,
///        name (UInt16 length ‖ UTF-8) ‖ tier detail) ‖ tag;
///        associated data = "coffer/v1/journal" ‖ 0x00 ‖ record kind ‖ record id
/// ```
///
/// Names are secret (a blob's name is only inside its sealed manifest), so the description is
/// sealed; a writer holding no key (a write-only client) journals none. Every entry is written in
/// the transaction of the change it records. The journal keeps the latest ``retainedEntries``.
package enum LocalJournal {
    package static let version: UInt8 = 1
    package static let tableName = "journal"
    /// How many entries the journal keeps; older ones are trimmed, and a consumer resuming before
    /// them is told it missed some.
    package static let retainedEntries: UInt64 = 100_000

    /// Where a change came from.
    package enum Origin: UInt8, Sendable {
        case local = 1
        case bundleImport = 2
        case pull = 3
    }

    /// What a tier says about a changed record, sealed into its entry.
    package struct Description: Sendable, Equatable {
        /// The record's name: a blob's listed name, a snapshot's name, an item's label or service.
        package var name: String
        /// What else the tier keeps (an item's class and attributes).
        package var detail: [UInt8]

        package init(name: String, detail: [UInt8] = []) {
            self.name = name
            self.detail = detail
        }
    }

    /// One entry, read back.
    package struct Entry: Sendable {
        package let sequence: UInt64
        package let isDelete: Bool
        package let kind: SyncRecordKind
        package let scope: SyncScope
        package let origin: Origin
        package let writer: UInt64
        package let processID: UInt32
        package let time: Int64
        package let recordID: [UInt8]
        package let sealedDescription: [UInt8]
    }

    /// Records a change in `txn`, if the vault has a journal (one made before it existed gets it at
    /// its first unlock). `description` is sealed when `keys` hold the device scope's
    /// `afterFirstUnlock` manifest key, else left out.
    package static func append(
        _ kind: SyncRecordKind,
        isDelete: Bool,
        recordID: [UInt8],
        scope: SyncScope,
        origin: Origin,
        description: Description?,
        keys: KeyRing?,
        cipher: AESGCM?,
        in txn: Transaction,
        schema: Schema
    ) throws {
        guard let table = schema.journal else { return }
        let sequence = try (txn.lastKey(in: table).map(decodeSequence) ?? 0) + 1
        var writer = BinaryWriter()
        writer.write(version)
        writer.write(UInt8(isDelete ? 2 : 1))
        writer.write(kind.rawValue)
        writer.write(scope.code)
        writer.write(origin.rawValue)
        writer.write(schema.handleToken)
        writer.write(ProcessIdentity.current.pid)
        writer.write(Int64(Date().timeIntervalSince1970 * 1000))
        writer.write(UInt8(recordID.count))
        writer.write(raw: recordID)
        let sealed = try description.flatMap { (description) throws(CofferError) in
            try seal(description, kind: kind, recordID: recordID, keys: keys, cipher: cipher)
        }
        writer.write(UInt32(sealed?.count ?? 0))
        writer.write(raw: sealed ?? [])
        try txn.put(table, key: ChangeLog.sequenceKey(sequence), value: writer.bytes)
        // Trimmed a batch at a time, so most commits delete nothing.
        if sequence > retainedEntries, sequence % 1024 == 0 {
            var old: [[UInt8]] = []
            try txn.forEach(in: table) { key, _ in
                guard decodeSequence(key) <= sequence - retainedEntries else { return false }
                old.append(Array(key))
                return true
            }
            for key in old { try txn.delete(table, key: key) }
        }
    }

    /// The sequence number of the latest entry (0 for none), and of the oldest kept.
    package static func bounds(in txn: Transaction, schema: Schema) throws -> (first: UInt64, last: UInt64) {
        guard let table = schema.journal else { return (0, 0) }
        let last = try txn.lastKey(in: table).map(decodeSequence) ?? 0
        var first: UInt64 = 0
        try txn.forEach(in: table) { key, _ in
            first = decodeSequence(key)
            return false
        }
        return (first, last)
    }

    /// Up to `limit` entries after `sequence`, in order.
    package static func entries(
        after sequence: UInt64,
        limit: Int,
        in txn: Transaction,
        schema: Schema
    ) throws -> [Entry] {
        guard let table = schema.journal else { return [] }
        var entries: [Entry] = []
        try txn.forEach(in: table, from: ChangeLog.sequenceKey(sequence + 1)) { key, value in
            entries.append(try decode(Array(value), sequence: decodeSequence(key)))
            return entries.count < limit
        }
        return entries
    }

    /// An entry's description, opened with `keys`; `nil` when it has none or the key is not held.
    package static func description(of entry: Entry, keys: KeyRing) throws(CofferError) -> Description? {
        guard !entry.sealedDescription.isEmpty,
            let key = try? keys.key(.manifest, .device, .afterFirstUnlock, epoch: .original)
        else { return nil }
        let body: [UInt8]
        do {
            body = try AESGCM().open(
                entry.sealedDescription,
                key: key,
                authenticating: associatedData(entry.kind, entry.recordID)
            )
        } catch {
            throw CofferError(.decode, "a journal entry's description fails authentication; the vault is damaged")
        }
        var reader = BinaryReader(body, what: "a journal entry")
        let name = String(decoding: try reader.readBytes(Int(try reader.readUInt16())), as: UTF8.self)
        return Description(name: name, detail: Array(body[(2 + name.utf8.count)...]))
    }

    private static func seal(
        _ description: Description,
        kind: SyncRecordKind,
        recordID: [UInt8],
        keys: KeyRing?,
        cipher: AESGCM?
    ) throws(CofferError) -> [UInt8]? {
        // The original device epoch's key: it is never dropped by a rekey, and the journal is local.
        guard let keys, let key = try? keys.key(.manifest, .device, .afterFirstUnlock, epoch: .original) else {
            return nil
        }
        var body = BinaryWriter()
        let name = Array(description.name.utf8.prefix(Int(UInt16.max)))
        body.write(UInt16(name.count))
        body.write(raw: name)
        body.write(raw: description.detail)
        do {
            // The caller's context when it has one: making a context costs more than sealing with it.
            return try (cipher ?? AESGCM()).seal(body.bytes, key: key, authenticating: associatedData(kind, recordID))
        } catch {
            throw CofferError(.internalError, "sealing a journal entry failed: \(error)", underlying: error)
        }
    }

    private static func associatedData(_ kind: SyncRecordKind, _ recordID: [UInt8]) -> [UInt8] {
        Array("coffer/v1/journal".utf8) + [0, kind.rawValue] + recordID
    }

    private static func decode(_ value: [UInt8], sequence: UInt64) throws -> Entry {
        var reader = BinaryReader(value, what: "a journal entry")
        guard try reader.readUInt8() == version else {
            throw CofferError(.unsupportedFormat, "a journal entry has a newer version; upgrade Coffer")
        }
        let operation = try reader.readUInt8()
        guard operation == 1 || operation == 2,
            let kind = SyncRecordKind(rawValue: try reader.readUInt8()),
            let scope = SyncScope(code: try reader.readUInt8()),
            let origin = Origin(rawValue: try reader.readUInt8())
        else {
            throw CofferError(.decode, "a journal entry is malformed; the vault is damaged")
        }
        let writer = try reader.readUInt64()
        let processID = try reader.readUInt32()
        let time = try reader.readInt64()
        let recordID = try reader.readBytes(Int(try reader.readUInt8()))
        let sealed = try reader.readBytes(Int(try reader.readUInt32()))
        try reader.finish()
        return Entry(
            sequence: sequence,
            isDelete: operation == 2,
            kind: kind,
            scope: scope,
            origin: origin,
            writer: writer,
            processID: processID,
            time: time,
            recordID: recordID,
            sealedDescription: sealed
        )
    }

    private static func decodeSequence(_ key: some Collection<UInt8>) -> UInt64 {
        key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
