internal import COpenSSL

/// PBKDF2 with HMAC-SHA1 (RFC 8018), as RNCryptor v3 uses it, through `PKCS5_PBKDF2_HMAC`. Coffer's
/// own keys never use it (scrypt is the passphrase KDF); it exists for interoperability.
package enum PBKDF2 {
    /// Derives `byteCount` bytes from `password` and `salt` with `iterations` rounds of HMAC-SHA1.
    package static func sha1(
        password: [UInt8],
        salt: [UInt8],
        iterations: Int,
        byteCount: Int
    ) throws(CryptoError) -> SecureBytes {
        guard iterations > 0, iterations <= Int(Int32.max), byteCount > 0 else {
            throw .invalidArgument("PBKDF2", "iterations and length must be positive")
        }
        let digest = try Algorithms.sha1.get().pointer
        var output = [UInt8](repeating: 0, count: byteCount)
        defer { output.wipe() }
        let result = password.withUnsafeBytes { password in
            salt.withUnsafeBytes { salt in
                output.withUnsafeMutableBytes { output in
                    PKCS5_PBKDF2_HMAC(
                        password.baseAddress?.assumingMemoryBound(to: CChar.self),
                        Int32(password.count),
                        salt.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        Int32(salt.count),
                        Int32(iterations),
                        digest,
                        Int32(byteCount),
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        try OpenSSL.check(result, "PKCS5_PBKDF2_HMAC")
        return SecureBytes(copying: output)
    }
}
