internal import COpenSSL

/// The OpenSSL side of the raw-key curves (X25519, Ed25519): an `EVP_PKEY` made from 32 raw bytes,
/// private or public, and a raw public key read back. Every call is checked by the ``OpenSSL`` funnel.
enum RawKeyPair {
    /// Which curve.
    enum Curve {
        case x25519
        case ed25519

        var type: Int32 { self == .x25519 ? EVP_PKEY_X25519 : EVP_PKEY_ED25519 }
        var name: StaticString { self == .x25519 ? "X25519" : "Ed25519" }
    }

    /// Runs `body` with an `EVP_PKEY` holding the private key `secret` (OpenSSL cleanses its copy when
    /// the key is freed).
    static func withPrivateKey<R>(
        _ curve: Curve,
        _ secret: SecureBytes,
        _ body: (OpaquePointer) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        let key = secret.withUnsafeBytes { raw in
            EVP_PKEY_new_raw_private_key(curve.type, nil, raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
        }
        let pkey = try OpenSSL.check(key, "EVP_PKEY_new_raw_private_key")
        defer { EVP_PKEY_free(pkey) }
        return try body(pkey)
    }

    /// Runs `body` with an `EVP_PKEY` holding the public key `bytes`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` for a key that is not 32 bytes.
    static func withPublicKey<R>(
        _ curve: Curve,
        _ bytes: [UInt8],
        _ body: (OpaquePointer) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        guard bytes.count == 32 else {
            throw .invalidArgument("\(curve.name) public key", "a public key is 32 bytes, not \(bytes.count)")
        }
        let key = bytes.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_public_key(curve.type, nil, $0.baseAddress, $0.count)
        }
        let pkey = try OpenSSL.check(key, "EVP_PKEY_new_raw_public_key")
        defer { EVP_PKEY_free(pkey) }
        return try body(pkey)
    }

    /// `secret`, if it is the 32 bytes a private key of `curve` is.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` naming `what` otherwise.
    static func checked(_ secret: SecureBytes, _ curve: Curve, what: String) throws(CryptoError) -> SecureBytes {
        guard secret.count == 32 else {
            throw .invalidArgument("\(curve.name) private key", "\(what) is 32 bytes, not \(secret.count)")
        }
        return secret
    }

    /// The public half of the private key `secret`.
    static func publicKey(_ curve: Curve, of secret: SecureBytes) throws(CryptoError) -> [UInt8] {
        try withPrivateKey(curve, secret) { (pkey) throws(CryptoError) in
            var bytes = [UInt8](repeating: 0, count: 32)
            var count = bytes.count
            try OpenSSL.check(EVP_PKEY_get_raw_public_key(pkey, &bytes, &count), "EVP_PKEY_get_raw_public_key")
            guard count == 32 else { throw OpenSSL.failure("EVP_PKEY_get_raw_public_key") }
            return bytes
        }
    }
}
