internal import COpenSSL

/// AES-256-CBC with PKCS#7 padding, streaming, through OpenSSL's EVP interface: for RNCryptor v3
/// interoperability only. CBC is unauthenticated; RNCryptor pairs it with an HMAC that must be checked
/// before any plaintext is trusted, and Coffer's own data uses AES-GCM.
///
/// ```swift
/// let cbc = try AESCBC(key: key, iv: iv, encrypting: true)
/// var out = try cbc.update(part)
/// out += try cbc.finish()
/// ```
package final class AESCBC {
    /// Block and IV size in bytes.
    package static let blockSize = 16

    private let context: OpaquePointer
    private let encrypting: Bool

    /// Starts encrypting or decrypting with a 32-byte key and a 16-byte IV.
    package init(key: SecureBytes, iv: [UInt8], encrypting: Bool) throws(CryptoError) {
        guard key.count == 32, iv.count == Self.blockSize else {
            throw .invalidArgument("AES-CBC", "the key must be 32 bytes and the IV 16")
        }
        let cipher = try Algorithms.aes256CBC.get().pointer
        context = try OpenSSL.check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        self.encrypting = encrypting
        let result = key.withUnsafeBytes { key in
            iv.withUnsafeBytes { iv in
                EVP_CipherInit_ex2(
                    context,
                    cipher,
                    key.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    iv.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    encrypting ? 1 : 0,
                    nil
                )
            }
        }
        do {
            try OpenSSL.check(result, "EVP_CipherInit_ex2")
        } catch {
            EVP_CIPHER_CTX_free(context)
            throw error
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Processes the next piece; returns the output it completes (a multiple of the block size).
    package func update(_ input: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        guard input.count <= OpenSSL.maximumPieceLength else {
            throw .invalidArgument("AES-CBC", "a piece of \(input.count) bytes is too long")
        }
        var written: Int32 = 0
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: input.count + Self.blockSize) { buffer, count in
            failed =
                EVP_CipherUpdate(
                    context,
                    buffer.baseAddress,
                    &written,
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    Int32(input.count)
                ) != 1
            count = failed ? 0 : Int(written)
        }
        if failed { throw OpenSSL.failure("EVP_CipherUpdate") }
        return output
    }

    /// Ends the message: the padded last block when encrypting; when decrypting, the last plaintext
    /// bytes, or an error if the padding is invalid.
    package func finish() throws(CryptoError) -> [UInt8] {
        var written: Int32 = 0
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: Self.blockSize) { buffer, count in
            failed = EVP_CipherFinal_ex(context, buffer.baseAddress, &written) != 1
            count = failed ? 0 : Int(written)
        }
        if failed {
            if encrypting { throw OpenSSL.failure("EVP_CipherFinal_ex") }
            ERR_clear_error()
            throw .authenticationFailure("AES-CBC unpadding")
        }
        return output
    }
}
