internal import COpenSSL

/// Comparisons whose running time does not depend on where two secrets first differ.
package enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes (`CRYPTO_memcmp`). Lengths are not secret: buffers of
    /// different lengths compare unequal at once.
    package static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0 else { return true }
        return CRYPTO_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }
}
