/// Which generation of a scope's sealing keys sealed a record: `original` for the keys a vault or sync
/// group was made with, a random 64-bit id for each generation started since (a sync group's key
/// epoch, begun by a revocation or a rotation).
///
/// A record names its epoch in its clear header (``SealedScope``), so it opens under that epoch's key
/// for as long as the key is held, whatever epoch is current.
package struct KeyEpoch: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id: 0 for ``original``, random otherwise.
    package let id: UInt64

    package init(id: UInt64) { self.id = id }

    /// The keys a vault or sync group was made with.
    package static let original = KeyEpoch(id: 0)

    /// A fresh epoch id: random, never ``original``.
    package static func random() -> KeyEpoch {
        KeyEpoch(id: UInt64.random(in: 1...UInt64.max))
    }

    /// Whether this is the original epoch.
    package var isOriginal: Bool { id == 0 }

    /// Sixteen hex digits.
    package var description: String {
        let digits = String(id, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    package static func < (lhs: KeyEpoch, rhs: KeyEpoch) -> Bool { lhs.id < rhs.id }
}

/// The scope byte of a sealed record's clear header and the epoch it may name (docs/FORMAT.md,
/// "Key epochs"): the scope's code, with bit 7 set when the record was sealed in an epoch other
/// than the original one, whose id (`UInt64`) then follows the record's fixed header. Records of the
/// original epoch are byte for byte what they were before epochs existed.
package struct SealedScope: Hashable, Sendable {
    package let scope: SyncScope
    package let epoch: KeyEpoch

    package init(_ scope: SyncScope, epoch: KeyEpoch) {
        self.scope = scope
        self.epoch = epoch
    }

    private static let epochFlag: UInt8 = 0x80

    /// The bytes an epoch adds after a fixed header: none for the original epoch.
    package static let epochSize = 8

    /// The scope byte.
    package var code: UInt8 { epoch.isOriginal ? scope.code : scope.code | Self.epochFlag }

    /// The bytes that follow the fixed header: the epoch id, or nothing.
    package var trailer: [UInt8] {
        guard !epoch.isOriginal else { return [] }
        return withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }
    }

    /// The scope a scope byte names, whatever its epoch.
    package static func scope(code: UInt8) -> SyncScope? { SyncScope(code: code & ~epochFlag) }

    /// How many bytes follow a fixed header whose scope byte is `code`.
    package static func trailerSize(code: UInt8) -> Int { code & epochFlag == 0 ? 0 : epochSize }

    /// Reads a scope byte and the epoch after the fixed header (`fixedSize` bytes) of `stored`.
    ///
    /// - Returns: `nil` for an unknown scope, a missing epoch, or an epoch field naming the original
    ///   epoch (which is never written).
    package static func read(code: UInt8, in stored: UnsafeRawBufferPointer, fixedSize: Int) -> SealedScope? {
        guard let scope = SyncScope(code: code & ~epochFlag) else { return nil }
        guard code & epochFlag != 0 else { return SealedScope(scope, epoch: .original) }
        guard stored.count >= fixedSize + epochSize else { return nil }
        let id = stored[fixedSize..<(fixedSize + epochSize)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard id != 0 else { return nil }
        return SealedScope(scope, epoch: KeyEpoch(id: id))
    }

    /// ``read(code:in:fixedSize:)`` over an array.
    package static func read(code: UInt8, in stored: [UInt8], fixedSize: Int) -> SealedScope? {
        stored.withUnsafeBytes { read(code: code, in: $0, fixedSize: fixedSize) }
    }
}
