internal import COpenSSL

/// The one place OpenSSL results are checked: every `EVP_*`, `RAND_*` and shim call in this folder
/// passes its result through here, so failures always become a ``CryptoError`` carrying OpenSSL's own
/// reason text, and the thread's error queue is left empty.
package enum OpenSSL {
    /// Checks a result that is 1 on success (the convention of nearly every EVP function).
    ///
    /// - Throws: ``CryptoError`` of kind `.library` with the reason from OpenSSL's error queue.
    @inline(__always)
    package static func check(_ result: Int32, _ operation: StaticString) throws(CryptoError) {
        if result != 1 { throw failure(operation) }
    }

    /// Unwraps a pointer that is NULL on failure (the `*_new` and `*_fetch` functions).
    @inline(__always)
    package static func check<Pointer>(_ pointer: Pointer?, _ operation: StaticString) throws(CryptoError) -> Pointer {
        guard let pointer else { throw failure(operation) }
        return pointer
    }

    /// Builds the error for a failed call from the thread's OpenSSL error queue, and clears the queue.
    package static func failure(_ operation: StaticString) -> CryptoError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            reasons.append(String(decoding: bytes, as: UTF8.self))
        }
        let reason = reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
        return CryptoError(kind: .library, operation: "\(operation)", reason: reason)
    }

    /// Splits a buffer length into pieces OpenSSL's `int` lengths can take.
    package static let maximumPieceLength = 1 << 30
}

/// An OpenSSL algorithm object fetched once per process (`EVP_CIPHER_fetch` and friends); these are
/// reference counted and safe to share between threads.
package struct FetchedAlgorithm: @unchecked Sendable {
    package let pointer: OpaquePointer
}

/// Algorithms fetched once: fetching per call costs a provider lookup, measurable on the hot path.
package enum Algorithms {
    package static let aes256GCM: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_CIPHER_fetch") {
        EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)
    }
    package static let aes256CBC: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_CIPHER_fetch") {
        EVP_CIPHER_fetch(nil, "AES-256-CBC", nil)
    }
    package static let sha1: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_MD_fetch") {
        EVP_MD_fetch(nil, "SHA1", nil)
    }
    package static let sha256: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_MD_fetch") {
        EVP_MD_fetch(nil, "SHA256", nil)
    }
    package static let hkdf: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_KDF_fetch") {
        EVP_KDF_fetch(nil, "HKDF", nil)
    }
    package static let scrypt: Result<FetchedAlgorithm, CryptoError> = fetch("EVP_KDF_fetch") {
        EVP_KDF_fetch(nil, "SCRYPT", nil)
    }

    private static func fetch(
        _ operation: StaticString,
        _ body: () -> OpaquePointer?
    ) -> Result<FetchedAlgorithm, CryptoError> {
        Result { () throws(CryptoError) in FetchedAlgorithm(pointer: try OpenSSL.check(body(), operation)) }
    }
}
