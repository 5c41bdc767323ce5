internal import COpenSSL
package import Foundation

/// HMAC-SHA256 under one key, through OpenSSL's `EVP_MAC` interface.
///
/// Keep an instance for a key that signs many messages (chunk ids, index entries): the key schedule is
/// computed once and the context re-initialised per message. Not thread-safe; one per thread.
///
/// ```swift
/// let mac = try HMACSHA256(key: indexKey)
/// let tag = try mac.authenticationCode(for: message)
/// ```
package final class HMACSHA256 {
    /// Tag size in bytes.
    package static let byteCount = 32

    private let context: OpaquePointer

    /// Keys a new context (`EVP_MAC_CTX_new`, `EVP_MAC_init`).
    package init(key: some ContiguousBytes) throws(CryptoError) {
        let mac = try Algorithms.hmac.get().pointer
        let context = try OpenSSL.check(EVP_MAC_CTX_new(mac), "EVP_MAC_CTX_new")
        let result = key.withUnsafeBytes { key in coffer_hmac_sha256_init(context, key.baseAddress, key.count) }
        do {
            try OpenSSL.check(result, "EVP_MAC_init")
        } catch {
            EVP_MAC_CTX_free(context)
            throw error
        }
        self.context = context
    }

    deinit { EVP_MAC_CTX_free(context) }

    /// The 32-byte HMAC of the concatenation of `parts`.
    package func authenticationCode(for parts: any ContiguousBytes...) throws(CryptoError) -> [UInt8] {
        try authenticationCode(forParts: parts)
    }

    /// The 32-byte HMAC of the concatenation of `parts`.
    package func authenticationCode(forParts parts: [any ContiguousBytes]) throws(CryptoError) -> [UInt8] {
        try OpenSSL.check(EVP_MAC_init(context, nil, 0, nil), "EVP_MAC_init")
        for part in parts {
            let result = part.withUnsafeBytes { EVP_MAC_update(context, $0.baseAddress, $0.count) }
            try OpenSSL.check(result, "EVP_MAC_update")
        }
        return try final()
    }

    /// The 32-byte HMAC of `message` (the common single-buffer case, without boxing it).
    package func authenticationCode(of message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try OpenSSL.check(EVP_MAC_init(context, nil, 0, nil), "EVP_MAC_init")
        let result = message.withUnsafeBytes { EVP_MAC_update(context, $0.baseAddress, $0.count) }
        try OpenSSL.check(result, "EVP_MAC_update")
        return try final()
    }

    // MARK: Streaming

    /// Starts a message to be fed in pieces with ``update(_:)`` and ended with ``finish()``.
    package func start() throws(CryptoError) {
        try OpenSSL.check(EVP_MAC_init(context, nil, 0, nil), "EVP_MAC_init")
    }

    /// Adds the next piece of the message.
    package func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        try OpenSSL.check(EVP_MAC_update(context, bytes.baseAddress, bytes.count), "EVP_MAC_update")
    }

    /// The 32-byte HMAC of the pieces since ``start()``.
    package func finish() throws(CryptoError) -> [UInt8] { try final() }

    private func final() throws(CryptoError) -> [UInt8] {
        var length = 0
        var failed = false
        let tag = [UInt8](unsafeUninitializedCapacity: Self.byteCount) { buffer, count in
            failed = EVP_MAC_final(context, buffer.baseAddress, &length, Self.byteCount) != 1
            count = failed ? 0 : Self.byteCount
        }
        if failed { throw OpenSSL.failure("EVP_MAC_final") }
        return tag
    }

    /// One-shot HMAC-SHA256 of `message` under `key`.
    package static func authenticationCode(
        for message: some ContiguousBytes,
        key: some ContiguousBytes
    ) throws(CryptoError) -> [UInt8] {
        try HMACSHA256(key: key).authenticationCode(for: message)
    }
}
