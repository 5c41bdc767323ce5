package import Foundation

/// The version of a syncable record: a hybrid logical clock stamp and the device that made the
/// change. Versions are totally ordered (stamp first, then device id as the tie-break), so every
/// vault that has seen the same changes picks the same winner, in whatever order they arrived.
package struct RecordVersion: Comparable, Hashable, Sendable {
    /// The hybrid logical clock reading: milliseconds since 1970 in the high 48 bits, a counter in the
    /// low 16 (docs/FORMAT.md, "Versions").
    package var stamp: UInt64
    /// The 16 bytes of the id of the device that made the change.
    package var device: [UInt8]

    package init(stamp: UInt64, device: [UInt8]) {
        self.stamp = stamp
        self.device = device
    }

    package static func < (lhs: RecordVersion, rhs: RecordVersion) -> Bool {
        lhs.stamp != rhs.stamp ? lhs.stamp < rhs.stamp : lhs.device.lexicographicallyPrecedes(rhs.device)
    }
}

/// Which kind of syncable record a version or change is about; the first byte of a `versions` key.
package enum SyncRecordKind: UInt8, Sendable, CaseIterable {
    /// A keychain item (id: 32 bytes).
    case item = 1
    /// A blob manifest (id: 32 bytes).
    case blob = 2
    /// A snapshot record (id: 16 bytes).
    case snapshot = 3

    /// The length of this kind's record ids.
    package var idLength: Int { self == .snapshot ? 16 : 32 }

    package var noun: String {
        switch self {
        case .item: return "item"
        case .blob: return "blob"
        case .snapshot: return "snapshot"
        }
    }
}

/// The last version of a syncable record this vault knows, live or deleted (a tombstone). Stored in
/// the `versions` table under `kind (1) ‖ record id` as `stamp (UInt64) ‖ device id (16) ‖ state (1)`,
/// state 1 for live and 0 for deleted.
package struct VersionEntry: Equatable, Sendable {
    package static let encodedSize = 8 + 16 + 1

    package var version: RecordVersion
    package var isDeleted: Bool

    package static func key(_ kind: SyncRecordKind, id: [UInt8]) -> [UInt8] { [kind.rawValue] + id }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(version.stamp)
        writer.write(raw: version.device)
        writer.write(UInt8(isDeleted ? 0 : 1))
        return writer.bytes
    }

    package init(version: RecordVersion, isDeleted: Bool) {
        self.version = version
        self.isDeleted = isDeleted
    }

    package init(decoding bytes: some Collection<UInt8>) throws(CofferError) {
        var reader = BinaryReader(Array(bytes), what: "a record version")
        let stamp = try reader.readUInt64()
        let device = try reader.readBytes(16)
        let state = try reader.readUInt8()
        try reader.finish()
        guard state <= 1 else {
            throw CofferError(.decode, "a record version has state \(state); the vault is damaged")
        }
        self.init(version: RecordVersion(stamp: stamp, device: device), isDeleted: state == 0)
    }

    /// The entry stored for a record, if any.
    package static func load(
        _ kind: SyncRecordKind,
        id: [UInt8],
        in txn: Transaction,
        schema: Schema
    ) throws -> VersionEntry? {
        try txn.withValue(schema.versions, key: key(kind, id: id)) { try VersionEntry(decoding: $0) }
    }
}

/// The vault's hybrid logical clock (Kulkarni et al., 2014), kept in meta `clock`: every local change
/// gets a stamp later than the wall clock and than any stamp this vault has issued or imported, so a
/// change made after seeing another device's change always wins over it, even when the clocks of the
/// two machines disagree.
package enum HybridClock {
    package static let metaKey = "clock"

    /// How far ahead of the wall clock this vault's own clock may run before it is taken to be
    /// wrong (the machine's clock was set far ahead, then corrected): local stamps then restart from
    /// the wall clock instead of carrying the wrong time forever. Imports are bounded separately, by
    /// ``Vault/Configuration/maximumClockSkew``, and never move the clock past it.
    package static let localResetSkew: UInt64 = 600_000 << 16

    /// A fresh stamp for a local change, recorded in `txn`.
    ///
    /// - Parameter replaced: The stamp of the version the change replaces, read only when the clock
    ///   restarts (the clock is past every other version this vault holds): the change is stamped
    ///   past it, so it follows what it changes (third outside test of issue 37's clock fix, F1).
    package static func tick(
        in txn: Transaction,
        schema: Schema,
        replacing replaced: () throws -> UInt64? = { nil }
    ) throws -> UInt64 {
        let wall = UInt64(max(0, Date().timeIntervalSince1970 * 1000)) << 16
        let last = try reading(in: txn, schema: schema)
        let restarts = last > wall + localResetSkew
        let stamp = restarts ? wall : max(wall, last + 1)
        try record(stamp, in: txn, schema: schema)
        if restarts, let replaced = try replaced(), replaced >= stamp { return replaced + 1 }
        return stamp
    }

    /// The wall clock as a stamp (its counter 0).
    package static func wallStamp() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) << 16 }

    /// The time a stamp stands for.
    package static func date(of stamp: UInt64) -> Date { Date(timeIntervalSince1970: Double(stamp >> 16) / 1000) }

    /// Moves the clock past `stamp` (a stamp seen in an imported bundle).
    package static func observe(_ stamp: UInt64, in txn: Transaction, schema: Schema) throws {
        if stamp > (try reading(in: txn, schema: schema)) { try record(stamp, in: txn, schema: schema) }
    }

    /// The latest stamp issued or seen; 0 for a new vault.
    package static func reading(in txn: Transaction, schema: Schema) throws -> UInt64 {
        try txn.withValue(schema.meta, key: Array(metaKey.utf8)) { bytes in
            guard bytes.count == 8 else {
                throw CofferError(.decode, "meta \"clock\" is \(bytes.count) bytes, not 8; the vault is damaged")
            }
            return bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        } ?? 0
    }

    private static func record(_ stamp: UInt64, in txn: Transaction, schema: Schema) throws {
        try txn.put(schema.meta, key: Array(metaKey.utf8), value: withUnsafeBytes(of: stamp.bigEndian) { Array($0) })
    }
}
