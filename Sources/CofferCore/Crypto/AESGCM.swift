internal import COpenSSL
package import Foundation

/// AES-256-GCM with a 96-bit nonce and a 128-bit tag, through OpenSSL's EVP interface.
///
/// An `AESGCM` owns one reusable `EVP_CIPHER_CTX`, so it is not thread-safe: give each thread (or each
/// pipeline worker) its own. Consecutive messages under the same key reuse the expanded key.
///
/// A context keeps the last key it used, and its expansion, until it is used with another key or freed:
/// free it (or drop every reference) when that key must be gone, as the vault does at `lock()`.
///
/// Sealed messages are laid out as `nonce (12) ‖ ciphertext ‖ tag (16)`.
///
/// ```swift
/// let gcm = try AESGCM()
/// let sealed = try gcm.seal(plaintext, key: key, authenticating: associatedData)
/// let opened = try gcm.open(sealed, key: key, authenticating: associatedData)
/// ```
package final class AESGCM {
    /// Key size in bytes.
    package static let keyByteCount = 32
    /// Nonce size in bytes.
    package static let nonceByteCount = 12
    /// Tag size in bytes.
    package static let tagByteCount = 16
    /// Bytes a sealed message adds to its plaintext.
    package static let overhead = nonceByteCount + tagByteCount

    private let context: OpaquePointer
    private let cipher: OpaquePointer
    /// The key the context is keyed with (kept alive, so its identity cannot be reused by another).
    private var currentKey: SecureBytes?
    private var currentDirection = false

    /// Allocates a cipher context (`EVP_CIPHER_CTX_new`).
    package init() throws(CryptoError) {
        cipher = try Algorithms.aes256GCM.get().pointer
        context = try OpenSSL.check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Seals `plaintext` under `key` with a fresh random nonce.
    ///
    /// - Returns: `nonce ‖ ciphertext ‖ tag`.
    /// - Throws: ``CryptoError`` if the key is not 32 bytes or OpenSSL fails.
    package func seal(
        _ plaintext: some ContiguousBytes,
        key: SecureBytes,
        authenticating associatedData: some ContiguousBytes
    ) throws(CryptoError) -> [UInt8] {
        try seal(plaintext, key: key, authenticating: associatedData, after: [])
    }

    /// Seals `plaintext` like ``seal(_:key:authenticating:)`` and returns `prefix` followed by the
    /// sealed message, in one allocation: a record's clear header and its sealed body without a
    /// second copy of the body.
    package func seal(
        _ plaintext: some ContiguousBytes,
        key: SecureBytes,
        authenticating associatedData: some ContiguousBytes,
        after prefix: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: Self.nonceByteCount)
        nonce.withUnsafeMutableBytes { SecureRandom.fill($0) }
        return try seal(plaintext, key: key, nonce: nonce, authenticating: associatedData, after: prefix)
    }

    /// Seals `plaintext` under `key` with the given nonce, after `prefix` (empty by default). A
    /// nonce must never repeat under one key; outside known-answer tests, use
    /// ``seal(_:key:authenticating:)``.
    package func seal(
        _ plaintext: some ContiguousBytes,
        key: SecureBytes,
        nonce: [UInt8],
        authenticating associatedData: some ContiguousBytes,
        after prefix: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        guard nonce.count == Self.nonceByteCount else {
            throw .invalidArgument("AES-GCM seal", "nonce must be \(Self.nonceByteCount) bytes, not \(nonce.count)")
        }
        let inputCount = plaintext.withUnsafeBytes { $0.count }
        let tagOffset = Self.nonceByteCount + inputCount
        var failure: CryptoError?
        // Built in uninitialised capacity: every byte is written by the copies, the cipher or the tag.
        let output = [UInt8](unsafeUninitializedCapacity: prefix.count + tagOffset + Self.tagByteCount) {
            buffer,
            count in
            let whole = UnsafeMutableRawBufferPointer(buffer)
            prefix.withUnsafeBytes { whole.copyMemory(from: $0) }
            let out = UnsafeMutableRawBufferPointer(rebasing: whole[prefix.count...])
            nonce.withUnsafeBytes { out.copyMemory(from: $0) }
            failure = key.withUnsafeBytes { keyBytes in
                plaintext.withUnsafeBytes { input in
                    associatedData.withUnsafeBytes { aad in
                        Result { () throws(CryptoError) in
                            try crypt(
                                encrypting: true,
                                key: key,
                                keyBytes: keyBytes,
                                nonce: UnsafeRawBufferPointer(rebasing: out[..<Self.nonceByteCount]),
                                associatedData: aad,
                                input: input,
                                output: UnsafeMutableRawBufferPointer(rebasing: out[Self.nonceByteCount..<tagOffset]),
                                tag: UnsafeMutableRawBufferPointer(rebasing: out[tagOffset...])
                            )
                        }.error
                    }
                }
            }
            count = failure == nil ? whole.count : 0
        }
        if let failure { throw failure }
        return output
    }

    /// Opens a message made by ``seal(_:key:authenticating:)``.
    ///
    /// - Returns: The plaintext.
    /// - Throws: ``CryptoError`` of kind `.authenticationFailure` if the message, key or associated data
    ///   is not the one sealed (nothing of the plaintext is returned then), `.invalidArgument` if the
    ///   message is shorter than nonce and tag.
    package func open(
        _ sealed: some ContiguousBytes,
        key: SecureBytes,
        authenticating associatedData: some ContiguousBytes
    ) throws(CryptoError) -> [UInt8] {
        let sealedCount = sealed.withUnsafeBytes { $0.count }
        guard sealedCount >= Self.overhead else {
            throw .invalidArgument("AES-GCM open", "sealed message is \(sealedCount) bytes, shorter than nonce and tag")
        }
        var output = [UInt8](repeating: 0, count: sealedCount - Self.overhead)
        let result = output.withUnsafeMutableBytes { out in
            sealed.withUnsafeBytes { input in
                associatedData.withUnsafeBytes { aad in
                    Result { () throws(CryptoError) in try open(input, key: key, authenticating: aad, into: out) }
                }
            }
        }
        try result.get()
        return output
    }

    /// Opens a sealed message into `output`, which must be exactly as long as the plaintext
    /// (`sealed.count - overhead`): the allocation-free form, for a caller that reads the plaintext
    /// in place and wipes it.
    ///
    /// - Throws: ``CryptoError`` as ``open(_:key:authenticating:)``; `output` is wiped then.
    package func open(
        _ sealed: UnsafeRawBufferPointer,
        key: SecureBytes,
        authenticating associatedData: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) {
        guard sealed.count >= Self.overhead else {
            throw .invalidArgument(
                "AES-GCM open",
                "sealed message is \(sealed.count) bytes, shorter than nonce and tag"
            )
        }
        let tagOffset = sealed.count - Self.tagByteCount
        guard output.count == tagOffset - Self.nonceByteCount else {
            throw .invalidArgument(
                "AES-GCM open",
                "output is \(output.count) bytes for a plaintext of \(tagOffset - Self.nonceByteCount)"
            )
        }
        let result = key.withUnsafeBytes { keyBytes in
            Result { () throws(CryptoError) in
                try crypt(
                    encrypting: false,
                    key: key,
                    keyBytes: keyBytes,
                    nonce: UnsafeRawBufferPointer(rebasing: sealed[..<Self.nonceByteCount]),
                    associatedData: associatedData,
                    input: UnsafeRawBufferPointer(rebasing: sealed[Self.nonceByteCount..<tagOffset]),
                    output: output,
                    tag: UnsafeMutableRawBufferPointer(
                        mutating: UnsafeRawBufferPointer(rebasing: sealed[tagOffset...])
                    )
                )
            }
        }
        do {
            try result.get()
        } catch {
            // Never hand back unauthenticated plaintext, not even in memory about to be freed.
            output.wipe()
            throw error
        }
    }

    /// Runs one GCM operation. On decryption `tag` is read, never written.
    ///
    /// When the context is already keyed with `key` in the same direction, only the nonce is set: the
    /// expanded key and the GHASH key are kept, which roughly halves the cost of a small message.
    private func crypt(
        encrypting: Bool,
        key: SecureBytes,
        keyBytes: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer,
        tag: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) {
        guard keyBytes.count == Self.keyByteCount else {
            throw .invalidArgument("AES-GCM", "key must be \(Self.keyByteCount) bytes, not \(keyBytes.count)")
        }
        let enc: Int32 = encrypting ? 1 : 0
        let keyed = currentKey === key && currentDirection == encrypting
        currentKey = nil
        try OpenSSL.check(
            keyed
                ? EVP_CipherInit_ex2(context, nil, nil, bytes(nonce), enc, nil)
                : EVP_CipherInit_ex2(context, cipher, bytes(keyBytes), bytes(nonce), enc, nil),
            "EVP_CipherInit_ex2"
        )
        currentKey = key
        currentDirection = encrypting
        var written: Int32 = 0
        for piece in pieces(associatedData.count) {
            try OpenSSL.check(
                EVP_CipherUpdate(context, nil, &written, bytes(associatedData, piece.lowerBound), Int32(piece.count)),
                "EVP_CipherUpdate"
            )
        }
        for piece in pieces(input.count) {
            try OpenSSL.check(
                EVP_CipherUpdate(
                    context,
                    mutableBytes(output, piece.lowerBound),
                    &written,
                    bytes(input, piece.lowerBound),
                    Int32(piece.count)
                ),
                "EVP_CipherUpdate"
            )
        }
        if encrypting {
            try OpenSSL.check(EVP_CipherFinal_ex(context, nil, &written), "EVP_CipherFinal_ex")
            try OpenSSL.check(
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagByteCount), tag.baseAddress),
                "EVP_CIPHER_CTX_ctrl(GET_TAG)"
            )
        } else {
            try OpenSSL.check(
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagByteCount), tag.baseAddress),
                "EVP_CIPHER_CTX_ctrl(SET_TAG)"
            )
            var finalLength: Int32 = 0
            if EVP_CipherFinal_ex(context, nil, &finalLength) != 1 {
                ERR_clear_error()
                throw .authenticationFailure("AES-GCM open")
            }
        }
    }

    /// The ranges OpenSSL's `int` lengths can take, lazily (no allocation on the hot path).
    private func pieces(_ count: Int) -> some Sequence<Range<Int>> {
        stride(from: 0, to: count, by: OpenSSL.maximumPieceLength).lazy.map {
            $0..<min($0 + OpenSSL.maximumPieceLength, count)
        }
    }
}

extension Result {
    /// The failure, if any.
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// A non-NULL `unsigned char *` for a possibly empty buffer (OpenSSL rejects NULL even with length 0
/// in some calls).
private func bytes(_ buffer: UnsafeRawBufferPointer, _ offset: Int = 0) -> UnsafePointer<UInt8> {
    guard let base = buffer.baseAddress else { return emptyByte }
    return base.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
}

private func mutableBytes(_ buffer: UnsafeMutableRawBufferPointer, _ offset: Int) -> UnsafeMutablePointer<UInt8> {
    buffer.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
}

nonisolated(unsafe) private let emptyByte: UnsafePointer<UInt8> = {
    let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    pointer.initialize(to: 0)
    return UnsafePointer(pointer)
}()
