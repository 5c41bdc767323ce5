internal import COpenSSL

/// Ed25519 signatures (RFC 8032): a device's key for signing what it adds to its group. The private
/// key is a 32-byte seed; public keys are 32 bytes and signatures 64.
package struct Ed25519PrivateKey: Sendable {
    /// The seed, wiped when the last copy goes.
    package let seed: SecureBytes

    /// A fresh random key.
    package init() {
        seed = .random(count: 32)
    }

    /// The key whose seed is `seed`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` unless it is 32 bytes.
    package init(seed: SecureBytes) throws(CryptoError) {
        self.seed = try RawKeyPair.checked(seed, .ed25519, what: "a seed")
    }

    /// The public key that verifies this key's signatures.
    package func publicKey() throws(CryptoError) -> [UInt8] {
        try RawKeyPair.publicKey(.ed25519, of: seed)
    }

    /// Signs `message` (the whole message: Ed25519 hashes it itself).
    ///
    /// The corresponding C functions are `EVP_DigestSignInit` and `EVP_DigestSign`.
    package func signature(of message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try RawKeyPair.withPrivateKey(.ed25519, seed) { (pkey) throws(CryptoError) in
            let context = try OpenSSL.check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
            defer { EVP_MD_CTX_free(context) }
            try OpenSSL.check(EVP_DigestSignInit(context, nil, nil, nil, pkey), "EVP_DigestSignInit")
            var signature = [UInt8](repeating: 0, count: 64)
            var count = signature.count
            try OpenSSL.check(
                EVP_DigestSign(context, &signature, &count, message, message.count),
                "EVP_DigestSign"
            )
            guard count == 64 else { throw OpenSSL.failure("EVP_DigestSign") }
            return signature
        }
    }

    /// Whether `signature` is a valid signature of `message` by the holder of `publicKey`.
    ///
    /// The corresponding C functions are `EVP_DigestVerifyInit` and `EVP_DigestVerify`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` for a public key of the wrong size, or when OpenSSL
    ///   fails for another reason than a bad signature.
    package static func isValidSignature(
        _ signature: [UInt8],
        of message: [UInt8],
        by publicKey: [UInt8]
    ) throws(CryptoError) -> Bool {
        guard signature.count == 64 else { return false }
        return try RawKeyPair.withPublicKey(.ed25519, publicKey) { (pkey) throws(CryptoError) in
            let context = try OpenSSL.check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
            defer { EVP_MD_CTX_free(context) }
            try OpenSSL.check(EVP_DigestVerifyInit(context, nil, nil, nil, pkey), "EVP_DigestVerifyInit")
            let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
            if result == 1 { return true }
            // 0 is a bad signature; anything else is an error. Either way the queue is emptied.
            let failure = OpenSSL.failure("EVP_DigestVerify")
            guard result == 0 else { throw failure }
            return false
        }
    }
}
