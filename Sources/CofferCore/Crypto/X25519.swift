internal import COpenSSL

/// X25519 key agreement (RFC 7748): a device's key for receiving keys sealed to it. The private key is
/// 32 random bytes (OpenSSL clamps them as the RFC says); the public key and a shared secret are 32
/// bytes each.
package struct X25519PrivateKey: Sendable {
    /// The private key's 32 bytes, wiped when the last copy goes.
    package let secret: SecureBytes

    /// A fresh random key.
    package init() {
        secret = .random(count: 32)
    }

    /// The key stored as `secret`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` unless it is 32 bytes.
    package init(secret: SecureBytes) throws(CryptoError) {
        self.secret = try RawKeyPair.checked(secret, .x25519, what: "a private key")
    }

    /// The public key others seal to.
    package func publicKey() throws(CryptoError) -> [UInt8] {
        try RawKeyPair.publicKey(.x25519, of: secret)
    }

    /// The secret this key shares with the holder of `peerPublicKey`.
    ///
    /// The corresponding C functions are `EVP_PKEY_derive_init`, `EVP_PKEY_derive_set_peer` and
    /// `EVP_PKEY_derive`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` for a public key of the wrong size, or one of small
    ///   order (the shared secret would be all zeros, which RFC 7748 section 6.1 says to refuse).
    package func sharedSecret(with peerPublicKey: [UInt8]) throws(CryptoError) -> SecureBytes {
        try RawKeyPair.withPrivateKey(.x25519, secret) { (mine) throws(CryptoError) in
            try RawKeyPair.withPublicKey(.x25519, peerPublicKey) { (peer) throws(CryptoError) in
                let context = try OpenSSL.check(EVP_PKEY_CTX_new(mine, nil), "EVP_PKEY_CTX_new")
                defer { EVP_PKEY_CTX_free(context) }
                try OpenSSL.check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
                try OpenSSL.check(EVP_PKEY_derive_set_peer(context, peer), "EVP_PKEY_derive_set_peer")
                let shared = try SecureBytes(count: 32) { (out) throws(CryptoError) in
                    var count = out.count
                    let result = EVP_PKEY_derive(context, out.bindMemory(to: UInt8.self).baseAddress, &count)
                    try OpenSSL.check(result, "EVP_PKEY_derive")
                    guard count == 32 else { throw OpenSSL.failure("EVP_PKEY_derive") }
                }
                let allZero = shared.withUnsafeBytes { raw in raw.allSatisfy { $0 == 0 } }
                guard !allZero else {
                    throw .invalidArgument("X25519", "the peer's public key is of small order; it was refused")
                }
                return shared
            }
        }
    }
}
