internal import COpenSSL

extension UnsafeMutableRawBufferPointer {
    /// Overwrites the bytes with zeros in a way the optimiser cannot remove (`OPENSSL_cleanse`), for
    /// temporary buffers that held secrets.
    package func wipe() {
        if let baseAddress, count > 0 { OPENSSL_cleanse(baseAddress, count) }
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the bytes with zeros in a way the optimiser cannot remove (`OPENSSL_cleanse`), for
    /// temporary copies of secrets that cannot live in ``SecureBytes``.
    package mutating func wipe() {
        withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress, buffer.count > 0 { OPENSSL_cleanse(base, buffer.count) }
        }
    }
}
