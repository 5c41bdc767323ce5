/// What the devices of a sync group ask of each other through their bundles, kept in `meta`
/// (docs/FORMAT.md, "Records that cannot be applied yet"):
///
/// - `wanted ` ‖ device id → chunk ids: the chunks that device's held records lack, as its latest
///   bundle listed them (a want frame); every bundle this vault exports carries those it has.
/// - `resend-for ` ‖ device id → sequence: that device misses this vault's changes after the
///   sequence (a bundle was lost); every export starts no later than the earliest such point.
/// - `applied-from ` ‖ device id → sequence: every change of that device up to it has arrived here.
/// - `gap-from ` ‖ device id → sequence: a bundle of that device's started past `applied-from`; this
///   vault's bundles ask it to resend (a resend frame).
///
/// Each bundle from a device replaces what it asks, so a request it no longer needs goes.
package struct SyncRequests {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    package static let wantedPrefix = Array("wanted ".utf8)
    package static let resendPrefix = Array("resend-for ".utf8)
    package static let appliedPrefix = Array("applied-from ".utf8)
    package static let gapPrefix = Array("gap-from ".utf8)

    // MARK: Chunks wanted

    /// Records what `device` asked for (replacing what it asked before; nothing clears it).
    package func recordWanted(_ chunkIDs: [ChunkID], by device: [UInt8], in txn: Transaction) throws {
        let key = Self.wantedPrefix + device
        if chunkIDs.isEmpty {
            try txn.delete(schema.meta, key: key)
        } else {
            try txn.put(schema.meta, key: key, value: chunkIDs.flatMap(\.bytes))
        }
    }

    /// Every chunk other devices asked for, by device.
    package func wanted(in txn: Transaction) throws -> [(device: [UInt8], chunkIDs: [ChunkID])] {
        var found: [(device: [UInt8], chunkIDs: [ChunkID])] = []
        try txn.forEach(in: schema.meta) { key, value in
            guard key.starts(with: Self.wantedPrefix), value.count % 32 == 0 else { return true }
            let ids = stride(from: 0, to: value.count, by: 32).map { ChunkID(Array(value[$0..<($0 + 32)])) }
            found.append((Array(key.dropFirst(Self.wantedPrefix.count)), ids))
            return true
        }
        return found
    }

    // MARK: Changes to resend, and gaps

    /// Notes that a bundle of `device`'s changes `first…last` was imported. Returns the sequence after
    /// which this vault has a gap in that device's changes (a bundle of it was lost or not imported
    /// yet), or `nil` when every change up to `last` has arrived, in this bundle or earlier ones.
    package func noteImported(from device: [UInt8], first: UInt64, last: UInt64, in txn: Transaction) throws -> UInt64?
    {
        let key = Self.appliedPrefix + device
        let applied = try sequence(at: key, in: txn) ?? 0
        guard first <= applied + 1 else { return applied }
        if last > applied { try setSequence(last, at: key, in: txn) }
        return nil
    }

    /// How far every change of `device` has arrived here (`applied-from`), 0 when none has.
    package func applied(from device: [UInt8], in txn: Transaction) throws -> UInt64 {
        try sequence(at: Self.appliedPrefix + device, in: txn) ?? 0
    }

    /// Notes that every change of `device` up to `through` has arrived (a checkpoint held them),
    /// clearing a gap that ends there.
    package func noteCovered(_ device: [UInt8], through: UInt64, in txn: Transaction) throws {
        let key = Self.appliedPrefix + device
        if try sequence(at: key, in: txn) ?? 0 < through { try setSequence(through, at: key, in: txn) }
        if let gap = try sequence(at: Self.gapPrefix + device, in: txn), gap < through {
            try setSequence(nil, at: Self.gapPrefix + device, in: txn)
        }
    }

    /// The devices whose changes this vault has a gap in, with where the gap starts.
    package func gaps(in txn: Transaction) throws -> [ResendRequest] {
        try sequences(withPrefix: Self.gapPrefix, in: txn).map { ResendRequest(device: $0.device, after: $0.value) }
    }

    /// Records (or, with `nil`, clears) the gap in `device`'s changes.
    package func recordGap(_ after: UInt64?, of device: [UInt8], in txn: Transaction) throws {
        try setSequence(after, at: Self.gapPrefix + device, in: txn)
    }

    /// Where other devices asked this vault to resend its changes from: the earliest point asked.
    package func resendFrom(in txn: Transaction) throws -> UInt64? {
        try sequences(withPrefix: Self.resendPrefix, in: txn).map(\.value).min()
    }

    /// Records (or, with `nil`, clears) `device`'s request that this vault resend its changes after
    /// `after`.
    package func recordResend(_ after: UInt64?, for device: [UInt8], in txn: Transaction) throws {
        try setSequence(after, at: Self.resendPrefix + device, in: txn)
    }

    // MARK: Sequences in meta

    private func sequence(at key: [UInt8], in txn: Transaction) throws -> UInt64? {
        try txn.get(schema.meta, key: key).map { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    private func setSequence(_ value: UInt64?, at key: [UInt8], in txn: Transaction) throws {
        if let value {
            try txn.put(schema.meta, key: key, value: withUnsafeBytes(of: value.bigEndian) { Array($0) })
        } else {
            try txn.delete(schema.meta, key: key)
        }
    }

    private func sequences(withPrefix prefix: [UInt8], in txn: Transaction) throws -> [(device: [UInt8], value: UInt64)]
    {
        var found: [(device: [UInt8], value: UInt64)] = []
        try txn.forEach(in: schema.meta) { key, value in
            guard key.starts(with: prefix), value.count == 8 else { return true }
            found.append((Array(key.dropFirst(prefix.count)), value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))
            return true
        }
        return found
    }
}
