internal import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`), seeded by the kernel.
package enum SecureRandom {
    /// Fills `buffer` with random bytes.
    ///
    /// A failing generator is not a condition a storage engine can continue from (it would mint
    /// predictable keys and nonces), so it stops the process rather than return.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            let piece = min(buffer.count - offset, OpenSSL.maximumPieceLength)
            let result = RAND_bytes(
                buffer.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self),
                Int32(piece)
            )
            if result != 1 {
                fatalError(
                    "RAND_bytes failed: \(OpenSSL.failure("RAND_bytes")); refusing to continue without randomness"
                )
            }
            offset += piece
        }
    }

    /// `count` random bytes.
    package static func bytes(count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { fill($0) }
        return result
    }
}
