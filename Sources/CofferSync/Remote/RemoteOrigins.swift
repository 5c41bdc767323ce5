package import Foundation

/// Sorted, disjoint closed ranges of change sequences.
package struct SequenceRanges: Sendable, Equatable {
    /// The ranges, in order; none overlaps or touches another.
    package private(set) var ranges: [ClosedRange<UInt64>] = []

    package init() {}

    package init(_ ranges: [ClosedRange<UInt64>]) {
        for range in ranges { insert(range) }
    }

    package var isEmpty: Bool { ranges.isEmpty }

    /// Adds `range`, merging it with the ranges it overlaps or touches.
    package mutating func insert(_ range: ClosedRange<UInt64>) {
        var merged = range
        var kept: [ClosedRange<UInt64>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            if Self.touch(existing, merged) {
                merged = min(existing.lowerBound, merged.lowerBound)...max(existing.upperBound, merged.upperBound)
            } else {
                kept.append(existing)
            }
        }
        kept.append(merged)
        ranges = kept.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Whether two ranges overlap or are adjacent.
    private static func touch(_ a: ClosedRange<UInt64>, _ b: ClosedRange<UInt64>) -> Bool {
        (b.upperBound == .max || a.lowerBound <= b.upperBound + 1)
            && (a.upperBound == .max || b.lowerBound <= a.upperBound + 1)
    }

    /// Adds every range of `other`.
    package mutating func formUnion(_ other: SequenceRanges) {
        for range in other.ranges { insert(range) }
    }

    /// Whether `sequence` lies in one of the ranges (a binary search).
    package func contains(_ sequence: UInt64) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < sequence {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < ranges.count && ranges[low].contains(sequence)
    }
}

/// Which of this vault's changes a pull from one object store applied, by the device whose bundle
/// brought them: that store holds them already, so a push to it leaves them out (docs/FORMAT.md,
/// "Remote layout"). Kept in `meta` under `remote-origin <remote identity>`:
/// `[device id (16) ‖ first (UInt64) ‖ last (UInt64)] × n`, sorted by device, then first.
package struct RemoteOrigins {
    package let schema: Schema
    package let remote: String

    package init(schema: Schema, remote: String) {
        self.schema = schema
        self.remote = remote
    }

    private var key: [UInt8] { Array("remote-origin \(remote)".utf8) }

    /// Every device's ranges.
    package func load(in txn: Transaction) throws -> [UUID: SequenceRanges] {
        guard let value = try txn.get(schema.meta, key: key) else { return [:] }
        let what = "the changes pulled from \(remote)"
        guard value.count % 32 == 0 else {
            throw CofferError(.decode, "meta \"\(what)\" has a bad length; the vault is damaged")
        }
        var reader = BinaryReader(value, what: what)
        var origins: [UUID: SequenceRanges] = [:]
        for _ in 0..<(value.count / 32) {
            let device = try UUID(storedBytes: try reader.readBytes(16), what: what)
            let first = try reader.readUInt64()
            let last = try reader.readUInt64()
            guard first <= last else { throw CofferError(.decode, "meta \"\(what)\" holds a reversed range") }
            origins[device, default: SequenceRanges()].insert(first...last)
        }
        return origins
    }

    /// Records that changes `range` of this vault came from `device`'s bundle in the store, signed
    /// with `signer` (the device's signing key; `nil` for an unsigned bundle). Changes noted from
    /// bundles signed with other keys of the device are logged again first (``relog(_:in:)``): the
    /// device replaced those keys (a rekey), and the other members skip its objects signed with
    /// them, which a copy holding the old keys may have pushed (red team round 16).
    package func record(
        _ range: ClosedRange<UInt64>,
        from device: UUID,
        signedWith signer: [UInt8]?,
        in txn: Transaction
    ) throws {
        if let signer {
            var keys = try signingKeys(in: txn)
            if let noted = keys[device], noted != signer { _ = try relog([device], in: txn) }
            keys[device] = signer
            try storeSigningKeys(keys, in: txn)
        }
        var origins = try load(in: txn)
        origins[device, default: SequenceRanges()].insert(range)
        try store(origins, in: txn)
    }

    /// The devices whose changes are noted from bundles signed with other keys than `current` gives
    /// them: they replaced their keys since (a rekey this vault learned of in any way).
    package func rekeyedSources(current: [UUID: [UInt8]], in txn: Transaction) throws -> Set<UUID> {
        let noted = try signingKeys(in: txn)
        let sources = try load(in: txn).keys
        return Set(
            sources.filter { device in
                guard let key = noted[device], let now = current[device] else { return false }
                return key != now
            }
        )
    }

    /// The signing key each device's noted changes were checked with, in `meta` under
    /// `remote-origin-keys <remote identity>`: `[device id (16) ‖ Ed25519 public key (32)] × n`.
    private func signingKeys(in txn: Transaction) throws -> [UUID: [UInt8]] {
        guard let value = try txn.get(schema.meta, key: keysKey) else { return [:] }
        let what = "the keys of the changes pulled from \(remote)"
        guard value.count % 48 == 0 else {
            throw CofferError(.decode, "meta \"\(what)\" has a bad length; the vault is damaged")
        }
        var reader = BinaryReader(value, what: what)
        var keys: [UUID: [UInt8]] = [:]
        for _ in 0..<(value.count / 48) {
            let device = try UUID(storedBytes: try reader.readBytes(16), what: what)
            keys[device] = try reader.readBytes(32)
        }
        return keys
    }

    private func storeSigningKeys(_ keys: [UUID: [UInt8]], in txn: Transaction) throws {
        guard !keys.isEmpty else {
            _ = try txn.delete(schema.meta, key: keysKey)
            return
        }
        var writer = BinaryWriter()
        for (device, key) in keys.sorted(by: { $0.key.uuidString < $1.key.uuidString }) where key.count == 32 {
            writer.write(raw: device.bytes)
            writer.write(raw: key)
        }
        try txn.put(schema.meta, key: keysKey, value: writer.bytes)
    }

    private var keysKey: [UInt8] { Array("remote-origin-keys \(remote)".utf8) }

    /// The changes a push to the store leaves out: those pulls brought from its devices.
    package func excluded(in txn: Transaction) throws -> SequenceRanges {
        var all = SequenceRanges()
        for ranges in try load(in: txn).values { all.formUnion(ranges) }
        return all
    }

    /// Logs again, as new changes in the same versions, the records that pulls brought from the
    /// bundles of `revoked` devices and that are still in those devices' versions, and forgets those
    /// devices' ranges: the other members refuse a revoked device's bundles (and skip a rekeyed
    /// device's bundles signed with its replaced keys), so these records must reach the store in this
    /// vault's. Returns how many were logged again.
    package func relog(_ revoked: Set<UUID>, in txn: Transaction) throws -> Int {
        var origins = try load(in: txn)
        let sources = Set(origins.keys).intersection(revoked)
        guard !sources.isEmpty else { return 0 }
        var relogged = 0
        for device in sources.sorted(by: { $0.uuidString < $1.uuidString }) {
            var keys: [[UInt8]] = []
            var seen: Set<[UInt8]> = []
            for range in origins[device]?.ranges ?? [] {
                try ChangeLog.forEach(after: range.lowerBound - 1, in: txn, schema: schema) { sequence, kind, id in
                    guard sequence <= range.upperBound else { return false }
                    let key = VersionEntry.key(kind.record, id: id)
                    if seen.insert(key).inserted { keys.append(key) }
                    return true
                }
            }
            for key in keys {
                guard let kind = key.first.flatMap(SyncRecordKind.init(rawValue:)) else { continue }
                let id = Array(key.dropFirst())
                guard let entry = try VersionEntry.load(kind, id: id, in: txn, schema: schema),
                    entry.version.device == device.bytes
                else { continue }
                try ChangeLog.append(kind, recordID: id, entry: entry, in: txn, schema: schema)
                relogged += 1
            }
            origins[device] = nil
        }
        try store(origins, in: txn)
        return relogged
    }

    /// Forgets every note: the store lost what they say it holds (it was rolled back), so the next
    /// push sends those changes too.
    package func forgetAll(in txn: Transaction) throws {
        try store([:], in: txn)
        try storeSigningKeys([:], in: txn)
    }

    private func store(_ origins: [UUID: SequenceRanges], in txn: Transaction) throws {
        guard !origins.isEmpty else {
            _ = try txn.delete(schema.meta, key: key)
            return
        }
        var writer = BinaryWriter()
        for (device, ranges) in origins.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            for range in ranges.ranges {
                writer.write(raw: device.bytes)
                writer.write(range.lowerBound)
                writer.write(range.upperBound)
            }
        }
        try txn.put(schema.meta, key: key, value: writer.bytes)
    }
}
