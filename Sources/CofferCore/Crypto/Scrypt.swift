internal import COpenSSL
package import Foundation

/// scrypt (RFC 7914), the passphrase-to-key function: deliberately slow and memory-hard.
package enum Scrypt {
    /// The most memory one derivation may use. Parameters come from a vault file that could be forged;
    /// this keeps a forged file from making `unlock` allocate without bound.
    package static let maximumMemory: UInt64 = 2 << 30

    /// The memory a derivation with these parameters needs, in bytes (128·r·N for V plus 128·r·p for B).
    package static func memoryNeeded(logN: UInt8, r: UInt32, p: UInt32) -> UInt64 {
        128 * UInt64(r) * ((UInt64(1) << UInt64(logN)) + UInt64(p) + 2)
    }

    /// Derives `byteCount` bytes from `password` and `salt` with cost N = 2^logN, block size r and
    /// parallelism p.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` for parameters outside RFC 7914's limits or needing
    ///   more than ``maximumMemory``; `.library` if OpenSSL fails.
    package static func deriveKey(
        password: some ContiguousBytes,
        salt: some ContiguousBytes,
        logN: UInt8,
        r: UInt32,
        p: UInt32,
        byteCount: Int = 32
    ) throws(CryptoError) -> SecureBytes {
        guard (1...40).contains(logN), r >= 1, p >= 1, UInt64(r) * UInt64(p) < (1 << 30) else {
            throw .invalidArgument("scrypt", "parameters logN=\(logN) r=\(r) p=\(p) are outside RFC 7914's limits")
        }
        let memory = memoryNeeded(logN: logN, r: r, p: p)
        guard memory <= maximumMemory else {
            throw .invalidArgument(
                "scrypt",
                "parameters logN=\(logN) r=\(r) need \(memory >> 20) MiB, over the \(maximumMemory >> 20) MiB limit"
            )
        }
        let algorithm = try Algorithms.scrypt.get().pointer
        let context = try OpenSSL.check(EVP_KDF_CTX_new(algorithm), "EVP_KDF_CTX_new")
        defer { EVP_KDF_CTX_free(context) }
        return try SecureBytes(count: byteCount) { (out) throws(CryptoError) in
            let result = password.withUnsafeBytes { password in
                salt.withUnsafeBytes { salt in
                    coffer_scrypt(
                        context,
                        out.baseAddress,
                        out.count,
                        password.baseAddress,
                        password.count,
                        salt.baseAddress,
                        salt.count,
                        UInt64(1) << UInt64(logN),
                        r,
                        p,
                        memory + (1 << 20)
                    )
                }
            }
            try OpenSSL.check(result, "EVP_KDF_derive(SCRYPT)")
        }
    }
}
