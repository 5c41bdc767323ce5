internal import COpenSSL
package import Foundation

/// HKDF-SHA256 (RFC 5869), the derivation of every working key from a root: `HKDF(root, label)`.
package enum HKDF {
    /// Derives `byteCount` bytes from `inputKey`.
    ///
    /// - Parameters:
    ///   - inputKey: The input keying material (a root key).
    ///   - salt: Optional salt; empty means none (RFC 5869 then uses zeros).
    ///   - info: The context label, e.g. `coffer/v1/item`.
    ///   - byteCount: Output size, at most 255 × 32.
    /// - Throws: ``CryptoError`` if OpenSSL refuses (e.g. an output too long).
    package static func deriveKey(
        from inputKey: some ContiguousBytes,
        salt: some ContiguousBytes = [UInt8](),
        info: some ContiguousBytes,
        byteCount: Int = 32
    ) throws(CryptoError) -> SecureBytes {
        guard byteCount > 0, byteCount <= 255 * 32 else {
            throw .invalidArgument("HKDF", "output length \(byteCount) is outside 1...\(255 * 32)")
        }
        let algorithm = try Algorithms.hkdf.get().pointer
        let context = try OpenSSL.check(EVP_KDF_CTX_new(algorithm), "EVP_KDF_CTX_new")
        defer { EVP_KDF_CTX_free(context) }
        return try SecureBytes(count: byteCount) { (out) throws(CryptoError) in
            let result = inputKey.withUnsafeBytes { ikm in
                salt.withUnsafeBytes { salt in
                    info.withUnsafeBytes { info in
                        coffer_hkdf_sha256(
                            context,
                            out.baseAddress,
                            out.count,
                            ikm.baseAddress,
                            ikm.count,
                            salt.baseAddress,
                            salt.count,
                            info.baseAddress,
                            info.count
                        )
                    }
                }
            }
            try OpenSSL.check(result, "EVP_KDF_derive(HKDF)")
        }
    }

    /// Derives a 32-byte key from `inputKey` with a text label as info.
    package static func deriveKey(from inputKey: SecureBytes, label: String) throws(CryptoError) -> SecureBytes {
        try deriveKey(from: inputKey, info: Array(label.utf8))
    }
}
