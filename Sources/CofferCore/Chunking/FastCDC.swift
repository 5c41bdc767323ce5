/// Content-defined chunking with FastCDC (Xia et al., "The Design of Fast Content-Defined Chunking for
/// Data Deduplication Based Storage Systems", 2020): a Gear rolling hash, cut points skipped below the
/// minimum size, and normalized chunking (a stricter mask before the average size, a looser one after)
/// to pull chunk sizes towards the average.
///
/// Cuts depend only on the bytes and the gear table, so the same data always cuts the same way for the
/// same table, and an edit changes only the chunks around it. The table comes from a secret seed
/// (``GearTable/init(seed:)``), so boundaries, and with them chunk sizes, do not fingerprint known
/// content across vaults (restic keys its chunker polynomial per repository for the same reason).
///
/// ```swift
/// let chunker = FastCDC(gear: GearTable(seed: seed))
/// var rest = buffer[...]
/// while let length = chunker.cut(rest, isFinal: true) { … rest = rest.dropFirst(length) }
/// ```
package struct FastCDC: Sendable {
    package let sizes: ChunkSizes
    private let gear: GearTable
    /// Used before the average size: two more bits than the average calls for (fewer cuts).
    private let strictMask: UInt64
    /// Used after the average size: two fewer bits (more cuts). Normalization level 2.
    private let looseMask: UInt64

    /// A chunker with `gear` and `sizes`.
    package init(gear: GearTable, sizes: ChunkSizes = .standard) {
        self.gear = gear
        self.sizes = sizes
        let bits = sizes.average.trailingZeroBitCount
        strictMask = Self.mask(bits: bits + 2)
        looseMask = Self.mask(bits: max(bits - 2, 1))
    }

    /// A mask of `bits` one-bits spread over the high end of the word. With the Gear hash's left shift,
    /// bit k of the fingerprint depends on the last k+1 bytes, so high bits give a wide window.
    package static func mask(bits: Int) -> UInt64 {
        let spacing = max(48 / bits, 1)
        var mask: UInt64 = 0
        for index in 0..<bits { mask |= 1 << UInt64(63 - index * spacing) }
        return mask
    }

    /// The length of the first chunk of `data`, or `nil` when more data is needed to decide (no cut
    /// point found, fewer than `maximum` bytes, and `isFinal` false). With `isFinal`, the rest of the
    /// data is a chunk when no cut point is found; an empty final buffer gives `nil`.
    package func cut(_ data: UnsafeRawBufferPointer, isFinal: Bool) -> Int? {
        let available = data.count
        if available == 0 { return nil }
        if available <= sizes.minimum { return isFinal ? available : nil }
        let limit = min(available, sizes.maximum)
        let normal = min(limit, sizes.average)
        return gear.withTable { table in
            var fingerprint: UInt64 = 0
            var index = sizes.minimum
            while index < normal {
                fingerprint = (fingerprint &<< 1) &+ table[Int(data[index])]
                if fingerprint & strictMask == 0 { return index + 1 }
                index += 1
            }
            while index < limit {
                fingerprint = (fingerprint &<< 1) &+ table[Int(data[index])]
                if fingerprint & looseMask == 0 { return index + 1 }
                index += 1
            }
            return limit == sizes.maximum || isFinal ? limit : nil
        }
    }

    /// Every chunk length of a whole buffer, in order.
    package func chunkLengths(of data: UnsafeRawBufferPointer) -> [Int] {
        var lengths: [Int] = []
        var offset = 0
        while let length = cut(UnsafeRawBufferPointer(rebasing: data[offset...]), isFinal: true) {
            lengths.append(length)
            offset += length
        }
        return lengths
    }
}

/// The 256 random 64-bit values of a Gear hash, derived from a secret seed with HKDF-SHA256
/// (`info = "coffer/v1/gear"`, 2048 bytes, read as big-endian words).
package final class GearTable: Sendable {
    private let values: [UInt64]

    /// A table derived from `seed`.
    package init(seed: SecureBytes) throws(CryptoError) {
        let bytes = try HKDF.deriveKey(from: seed, info: Array("coffer/v1/gear".utf8), byteCount: 256 * 8)
        values = bytes.withUnsafeBytes { raw in
            (0..<256).map { index in
                raw[(index * 8)..<(index * 8 + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            }
        }
    }

    package func withTable<R>(_ body: (UnsafeBufferPointer<UInt64>) -> R) -> R {
        values.withUnsafeBufferPointer(body)
    }
}
