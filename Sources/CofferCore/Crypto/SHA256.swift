internal import COpenSSL
package import Foundation

/// SHA-256, streaming (`update` then `finalize`) or one-shot, through `EVP_Digest*`.
///
/// ```swift
/// var hasher = try SHA256()
/// try hasher.update(part1)
/// try hasher.update(part2)
/// let digest = try hasher.finalize()
/// ```
package final class SHA256 {
    /// Digest size in bytes.
    package static let byteCount = 32

    private let context: OpaquePointer
    private let algorithm: OpaquePointer

    /// Starts a new digest (`EVP_MD_CTX_new`, `EVP_DigestInit_ex2`).
    package init() throws(CryptoError) {
        algorithm = try Algorithms.sha256.get().pointer
        context = try OpenSSL.check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        do {
            try OpenSSL.check(EVP_DigestInit_ex2(context, algorithm, nil), "EVP_DigestInit_ex2")
        } catch {
            EVP_MD_CTX_free(context)
            throw error
        }
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds `bytes` to the digest.
    package func update(_ bytes: some ContiguousBytes) throws(CryptoError) {
        let result = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        try OpenSSL.check(result, "EVP_DigestUpdate")
    }

    /// Returns the digest and resets the hasher for a new message.
    package func finalize() throws(CryptoError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.byteCount)
        var length: UInt32 = 0
        try OpenSSL.check(EVP_DigestFinal_ex(context, &digest, &length), "EVP_DigestFinal_ex")
        try OpenSSL.check(EVP_DigestInit_ex2(context, algorithm, nil), "EVP_DigestInit_ex2")
        return digest
    }

    /// The SHA-256 digest of `bytes`.
    package static func hash(_ bytes: some ContiguousBytes) throws(CryptoError) -> [UInt8] {
        let hasher = try SHA256()
        try hasher.update(bytes)
        return try hasher.finalize()
    }
}
