package import Foundation

/// Records an import could not apply yet because this vault lacks chunks they need (a peer left them
/// out of an incremental bundle, believing this vault had them, but it deleted them meanwhile).
///
/// Nothing is refused for good: a held record waits in `meta` (`held ` ‖ kind ‖ id → the record frame
/// body, as the bundle carried it; `held-from ` ‖ kind ‖ id → the devices whose bundles brought it),
/// every bundle this vault exports asks for the chunks held records lack (a want frame), and every
/// import applies the held records whose chunks have arrived, if they still win (docs/FORMAT.md,
/// "Records that cannot be applied yet"). What devices ask of each other
/// is kept by ``SyncRequests``.
package struct HeldRecords {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    package static let heldPrefix = Array("held ".utf8)

    /// One held record.
    package struct Held {
        package let kind: SyncRecordKind
        package let id: [UInt8]
        package let entry: VersionEntry
        package let stored: [UInt8]
        /// The record frame's body, as it is kept.
        package let body: [UInt8]

        package init(kind: SyncRecordKind, id: [UInt8], entry: VersionEntry, stored: [UInt8], body: [UInt8]) {
            self.kind = kind
            self.id = id
            self.entry = entry
            self.stored = stored
            self.body = body
        }
    }

    private static func key(_ kind: SyncRecordKind, id: [UInt8]) -> [UInt8] { heldPrefix + [kind.rawValue] + id }

    package static let senderPrefix = Array("held-from ".utf8)

    /// Keeps `held` until its chunks arrive, with the references taken for it to chunks that have
    /// (``MissingChunks/claim(_:id:stored:)``), which ``release(_:id:in:)`` gives back, and the devices
    /// whose bundles brought that version (`senders`, 16 bytes each, when known).
    package func hold(_ held: Held, keeping taken: [ChunkID], senders: [[UInt8]], in txn: Transaction) throws {
        try txn.put(schema.meta, key: Self.key(held.kind, id: held.id), value: held.body)
        if !senders.isEmpty {
            try txn.put(
                schema.meta,
                key: Self.senderPrefix + [held.kind.rawValue] + held.id,
                value: senders.flatMap { $0 }
            )
        }
        let keptKey = Self.keptPrefix + [held.kind.rawValue] + held.id
        if taken.isEmpty {
            try txn.delete(schema.meta, key: keptKey)
        } else {
            try txn.put(schema.meta, key: keptKey, value: taken.flatMap(\.bytes))
        }
    }

    /// The held version of a record, if any.
    package func held(_ kind: SyncRecordKind, id: [UInt8], in txn: Transaction) throws -> Held? {
        try txn.get(schema.meta, key: Self.key(kind, id: id)).map { try Self.decode($0) }
    }

    package static let keptPrefix = Array("held-refs ".utf8)

    /// Drops a record's held version and the references it kept.
    package func release(_ kind: SyncRecordKind, id: [UInt8], in txn: Transaction) throws {
        try txn.delete(schema.meta, key: Self.key(kind, id: id))
        let chunks = ChunkStore(schema: schema)
        for chunk in try kept(kind, id: id, in: txn) { try chunks.release(chunk, in: txn) }
        try txn.delete(schema.meta, key: Self.keptPrefix + [kind.rawValue] + id)
        try txn.delete(schema.meta, key: Self.senderPrefix + [kind.rawValue] + id)
    }

    /// The devices whose bundles brought the held version of a record (empty when not noted: held
    /// before Coffer noted senders). A value of one device (16 bytes) is what Coffer noted before
    /// it kept every sender.
    package func senders(_ kind: SyncRecordKind, id: [UInt8], in txn: Transaction) throws -> [[UInt8]] {
        guard let value = try txn.get(schema.meta, key: Self.senderPrefix + [kind.rawValue] + id), value.count % 16 == 0
        else { return [] }
        return stride(from: 0, to: value.count, by: 16).map { Array(value[$0..<($0 + 16)]) }
    }

    /// The held records, by whether a device still in the group sent them (`active`; `nil` counts
    /// every sender): those that only devices no longer in it sent (revoked, or their join voided)
    /// are counted apart, since they wait for data their senders may never send; a record with no
    /// sender noted counts as waiting. `bySender` counts each waiting record once for each active
    /// device that sent it.
    package func tally(
        active: Set<UUID>?,
        in txn: Transaction
    ) throws
        -> (waiting: Int, fromFormerMembers: Int, bySender: [UUID: Int])
    {
        var tally = (waiting: 0, fromFormerMembers: 0, bySender: [UUID: Int]())
        try txn.forEach(in: schema.meta, prefix: Self.heldPrefix) { key, _ in
            let value = try txn.get(schema.meta, key: Self.senderPrefix + key.dropFirst(Self.heldPrefix.count)) ?? []
            let senders = stride(from: 0, to: value.count - value.count % 16, by: 16).compactMap {
                try? UUID(storedBytes: Array(value[$0..<($0 + 16)]), what: "device id")
            }
            let current = senders.filter { active?.contains($0) ?? true }
            if !senders.isEmpty, current.isEmpty {
                tally.fromFormerMembers += 1
            } else {
                tally.waiting += 1
                for sender in Set(current) { tally.bySender[sender, default: 0] += 1 }
            }
            return true
        }
        return tally
    }

    /// The chunks a held record keeps a reference to, once per reference.
    package func kept(_ kind: SyncRecordKind, id: [UInt8], in txn: Transaction) throws -> [ChunkID] {
        guard let value = try txn.get(schema.meta, key: Self.keptPrefix + [kind.rawValue] + id), value.count % 32 == 0
        else { return [] }
        return stride(from: 0, to: value.count, by: 32).map { ChunkID(Array(value[$0..<($0 + 32)])) }
    }

    /// Calls `body` with every chunk reference held records keep (for `verify`'s counts).
    package func forEachKeptReference(in txn: Transaction, _ body: (ChunkID) throws -> Void) throws {
        try txn.forEach(in: schema.meta) { key, value in
            guard key.starts(with: Self.keptPrefix), value.count % 32 == 0 else { return true }
            for offset in stride(from: 0, to: value.count, by: 32) {
                try body(ChunkID(Array(value[offset..<(offset + 32)])))
            }
            return true
        }
    }

    /// Whether any record is held back.
    package func any(in txn: Transaction) throws -> Bool {
        var found = false
        try txn.forEach(in: schema.meta, prefix: Self.heldPrefix) { _, _ in
            found = true
            return false
        }
        return found
    }

    /// Every held record.
    package func all(in txn: Transaction) throws -> [Held] {
        var found: [Held] = []
        try txn.forEach(in: schema.meta) { key, value in
            if key.starts(with: Self.heldPrefix) {
                found.append(try Self.decode(Array(value)))
            }
            return true
        }
        return found
    }

    package static func decode(_ body: [UInt8]) throws -> Held {
        guard case .record(let kind, let id, let entry, let stored) = try BundleFrame.decode(type: 2, body: body) else {
            throw CofferError(.decode, "a held sync record is not a record; the vault is damaged")
        }
        return Held(kind: kind, id: id, entry: entry, stored: stored, body: body)
    }
}
