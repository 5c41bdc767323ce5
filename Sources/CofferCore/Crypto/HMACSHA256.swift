internal import COpenSSL
package import Foundation

/// HMAC-SHA256 under one key (RFC 2104).
///
/// Keep an instance for a key that signs many messages (chunk ids, item ids, index entries): the key
/// is absorbed once into the inner and outer SHA-256 states, and each message starts from a copy of
/// the inner one, so a short message costs three SHA-256 blocks and no allocation. (EVP's `EVP_MAC`
/// duplicated a digest context twice per message, most of the cost of a keychain item id.) The
/// prepared states are equivalent to the key and are wiped when the instance goes. Not thread-safe;
/// one per thread.
///
/// ```swift
/// let mac = try HMACSHA256(key: indexKey)
/// let tag = try mac.authenticationCode(for: message)
/// ```
package final class HMACSHA256 {
    /// Tag size in bytes.
    package static let byteCount = 32

    private let key: UnsafeMutablePointer<coffer_hmac_sha256_key>
    /// The message in progress.
    private let work: UnsafeMutablePointer<SHA256_CTX>

    /// Prepares the key's inner and outer states.
    package init(key: some ContiguousBytes) throws(CryptoError) {
        let prepared = UnsafeMutablePointer<coffer_hmac_sha256_key>.allocate(capacity: 1)
        let result = key.withUnsafeBytes { key in coffer_hmac_sha256_prepare(prepared, key.baseAddress, key.count) }
        do {
            try OpenSSL.check(result, "SHA256_Init")
        } catch {
            Self.wipe(prepared)
            prepared.deallocate()
            throw error
        }
        self.key = prepared
        work = .allocate(capacity: 1)
        work.initialize(to: SHA256_CTX())
    }

    deinit {
        Self.wipe(key)
        Self.wipe(work)
        key.deallocate()
        work.deallocate()
    }

    private static func wipe<T>(_ pointer: UnsafeMutablePointer<T>) {
        OPENSSL_cleanse(pointer, MemoryLayout<T>.size)
    }

    /// The 32-byte HMAC of the concatenation of `parts`.
    package func authenticationCode(for parts: any ContiguousBytes...) throws(CryptoError) -> [UInt8] {
        try authenticationCode(forParts: parts)
    }

    /// The 32-byte HMAC of the concatenation of `parts`.
    package func authenticationCode(forParts parts: [any ContiguousBytes]) throws(CryptoError) -> [UInt8] {
        try start()
        for part in parts {
            let result = part.withUnsafeBytes { coffer_hmac_sha256_update(work, $0.baseAddress, $0.count) }
            try OpenSSL.check(result, "SHA256_Update")
        }
        return try finish()
    }

    /// The 32-byte HMAC of `message` (the common single-buffer case, without boxing it).
    package func authenticationCode(of message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let result = message.withUnsafeBytes { raw in
            Result { () throws(CryptoError) in
                try start()
                try update(raw)
                return try finish()
            }
        }
        return try result.get()
    }

    /// Writes the 32-byte HMAC of `message` into `tag` (exactly 32 bytes): the allocation-free form.
    package func authenticationCode(
        of message: UnsafeRawBufferPointer,
        into tag: UnsafeMutableRawBufferPointer
    )
        throws(CryptoError)
    {
        guard tag.count == Self.byteCount else {
            throw .invalidArgument("HMAC-SHA256", "the tag buffer is \(tag.count) bytes, not \(Self.byteCount)")
        }
        try start()
        try update(message)
        try OpenSSL.check(
            coffer_hmac_sha256_finish(key, work, tag.baseAddress!.assumingMemoryBound(to: UInt8.self)),
            "SHA256_Final"
        )
    }

    // MARK: Streaming

    /// Starts a message to be fed in pieces with ``update(_:)`` and ended with ``finish()``.
    package func start() throws(CryptoError) {
        try OpenSSL.check(coffer_hmac_sha256_start(key, work), "SHA256_Init")
    }

    /// Adds the next piece of the message.
    package func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        try OpenSSL.check(coffer_hmac_sha256_update(work, bytes.baseAddress, bytes.count), "SHA256_Update")
    }

    /// The 32-byte HMAC of the pieces since ``start()``.
    package func finish() throws(CryptoError) -> [UInt8] {
        var failed = false
        let tag = [UInt8](unsafeUninitializedCapacity: Self.byteCount) { buffer, count in
            failed = coffer_hmac_sha256_finish(key, work, buffer.baseAddress) != 1
            count = failed ? 0 : Self.byteCount
        }
        if failed { throw OpenSSL.failure("SHA256_Final") }
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
