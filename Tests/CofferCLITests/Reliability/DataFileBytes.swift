import CofferTestSupport
import Foundation

/// Reading and editing a vault's `data.mdb` byte by byte, for the tests that damage it on purpose.
enum DataFileBytes {
    /// The little-endian UInt64 at `offset` (LMDB's own byte order).
    static func integer(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + $1]) }
    }

    /// Stores `value` as a little-endian UInt64 at `offset`.
    static func setInteger(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt64) {
        for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
    }

    /// The offset of the meta page LMDB opens (the one with the larger transaction id).
    static func currentMeta(_ bytes: [UInt8]) -> Int {
        integer(bytes, 144) > integer(bytes, 4096 + 144) ? 0 : 4096
    }

    /// Rewrites the file at `url` as `body` edits its bytes.
    static func edit(_ url: URL, _ body: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        body(&bytes)
        try Data(bytes).write(to: url)
    }
}
