/// A secret sealed to one X25519 public key, so that only the holder of the private key can open it:
/// how a group key will reach each device of a sync group (an ECIES construction, as libsodium's
/// sealed boxes, on the primitives Coffer already has).
///
/// ```
/// version (1) ‖ ephemeral public key (32) ‖ AES-256-GCM( nonce (12) ‖ ciphertext ‖ tag (16) )
/// key = HKDF-SHA256(X25519(ephemeral, recipient),
///                   salt: ephemeral public ‖ recipient public,
///                   info: "coffer/v1/sealed-to-key" ‖ 0 ‖ purpose)
/// associated data: version ‖ ephemeral public ‖ recipient public ‖ purpose
/// ```
///
/// A fresh ephemeral key per box: the sender keeps nothing that opens it afterwards, and boxes to the
/// same recipient share nothing. `purpose` binds the box to what it is for (say, a group key of one
/// epoch), so a box cannot be replayed as another.
package enum SealedToKey {
    /// The format version, the first byte of every box.
    package static let version: UInt8 = 1
    /// The bytes a box adds to its secret.
    package static let overhead = 1 + 32 + AESGCM.overhead

    /// Seals `secret` to the holder of the X25519 private key whose public key is `recipient`.
    ///
    /// - Throws: ``CryptoError`` `.invalidArgument` for a malformed or small-order public key.
    package static func seal(
        _ secret: SecureBytes,
        to recipient: [UInt8],
        purpose: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        let ephemeral = X25519PrivateKey()
        let ephemeralPublic = try ephemeral.publicKey()
        let key = try boxKey(
            shared: try ephemeral.sharedSecret(with: recipient),
            ephemeralPublic: ephemeralPublic,
            recipient: recipient,
            purpose: purpose
        )
        let header = [version] + ephemeralPublic
        let cipher = try AESGCM()
        let sealed = secret.withUnsafeBytes { plaintext in
            Result { () throws(CryptoError) in
                try cipher.seal(plaintext, key: key, authenticating: header + recipient + purpose)
            }
        }
        return header + (try sealed.get())
    }

    /// Opens a box sealed to `recipient`'s public key.
    ///
    /// - Throws: ``CryptoError`` `.authenticationFailure` when the box was not sealed to this key, for
    ///   this purpose, or was altered; `.invalidArgument` for a box too short or of another version.
    package static func open(
        _ box: [UInt8],
        with recipient: X25519PrivateKey,
        purpose: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        guard box.count >= overhead else {
            throw .invalidArgument("sealed box", "a box is at least \(overhead) bytes, not \(box.count)")
        }
        guard box[0] == version else {
            throw .invalidArgument("sealed box", "version \(box[0]) is not one this Coffer reads")
        }
        let ephemeralPublic = Array(box[1..<33])
        let recipientPublic = try recipient.publicKey()
        let key = try boxKey(
            shared: try recipient.sharedSecret(with: ephemeralPublic),
            ephemeralPublic: ephemeralPublic,
            recipient: recipientPublic,
            purpose: purpose
        )
        var opened = try AESGCM().open(
            Array(box[33...]),
            key: key,
            authenticating: [version] + ephemeralPublic + recipientPublic + purpose
        )
        defer { opened.wipe() }
        return SecureBytes(copying: opened)
    }

    private static func boxKey(
        shared: SecureBytes,
        ephemeralPublic: [UInt8],
        recipient: [UInt8],
        purpose: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        try HKDF.deriveKey(
            from: shared,
            salt: ephemeralPublic + recipient,
            info: Array("coffer/v1/sealed-to-key".utf8) + [0] + purpose
        )
    }
}
