import Foundation

/// RNCryptor data format version 3, password-based (RNCryptor-Spec-v3.md), so data encrypted by iOS
/// and macOS apps that used RNCryptor can move into a vault and back out:
///
/// ```
/// version = 3 ‖ options = 1 ‖ encryption salt (8) ‖ HMAC salt (8) ‖ IV (16) ‖ AES-256-CBC ciphertext
///   ‖ HMAC-SHA256(HMAC key, everything before it) (32)
/// encryption key = PBKDF2-HMAC-SHA1(password, encryption salt, 10,000 rounds, 32 bytes)
/// HMAC key       = PBKDF2-HMAC-SHA1(password, HMAC salt, 10,000 rounds, 32 bytes)
/// ```
///
/// Both directions stream. Key-based files (options = 0, no salts) are refused: they need raw keys,
/// not a password.
enum RNCryptor {
    static let version: UInt8 = 3
    static let passwordOption: UInt8 = 1
    static let saltSize = 8
    static let headerSize = 2 + 2 * saltSize + AESCBC.blockSize
    static let tagSize = 32
    static let iterations = 10_000

    struct Keys {
        let encryption: SecureBytes
        let hmac: SecureBytes
    }

    static func keys(password: [UInt8], encryptionSalt: [UInt8], hmacSalt: [UInt8]) throws(CofferError) -> Keys {
        do {
            return Keys(
                encryption: try PBKDF2.sha1(
                    password: password,
                    salt: encryptionSalt,
                    iterations: iterations,
                    byteCount: 32
                ),
                hmac: try PBKDF2.sha1(password: password, salt: hmacSalt, iterations: iterations, byteCount: 32)
            )
        } catch {
            throw CofferError(.internalError, "deriving RNCryptor keys failed: \(error)", underlying: error)
        }
    }

    static func crypto<R>(_ action: String, _ body: () throws(CryptoError) -> R) throws(CofferError) -> R {
        do {
            return try body()
        } catch {
            throw CofferError(.internalError, "\(action) failed: \(error)", underlying: error)
        }
    }

    /// The plaintext of an RNCryptor v3 stream read from `base`.
    ///
    /// The HMAC covers the whole file and sits at its end, so plaintext flows out before it can be
    /// checked; the end of the stream is reported only after the HMAC and the padding check out, and
    /// otherwise reading fails. The blob writer commits nothing until its source ends, so a file that
    /// fails the check never becomes a blob: no unverified plaintext is ever released.
    struct DecryptingSource<Base: ByteSource>: ByteSource {
        private var base: Base
        private let password: [UInt8]
        private var cipher: AESCBC?
        private var mac: HMACSHA256?
        /// Read from the base, not yet decrypted: always keeps the last 32 bytes back (the tag).
        private var held: [UInt8] = []
        private var output = UnreadBytes()
        private var isFinished = false

        init(base: Base, password: [UInt8]) {
            self.base = base
            self.password = password
        }

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
            if cipher == nil { try readHeader() }
            while output.isEmpty {
                if isFinished { return 0 }
                try decryptMore()
            }
            return output.copy(into: buffer)
        }

        private mutating func readHeader() throws(CofferError) {
            let header = try base.read(upTo: RNCryptor.headerSize)
            let filled = header.count
            if filled >= 2, header[0] != RNCryptor.version {
                throw CofferError(
                    .unsupportedFormat,
                    "the file is RNCryptor version \(header[0]) (or not RNCryptor at all); only version 3 is supported"
                )
            }
            if filled >= 2, header[1] != RNCryptor.passwordOption {
                throw CofferError(
                    .unsupportedFormat,
                    "the file is a key-based RNCryptor file; only password-based files (options = 1) are supported"
                )
            }
            guard filled == RNCryptor.headerSize else {
                throw CofferError(.decode, "the file is too short to be an RNCryptor v3 file (\(filled) bytes)")
            }
            let keys = try RNCryptor.keys(
                password: password,
                encryptionSalt: Array(header[2..<10]),
                hmacSalt: Array(header[10..<18])
            )
            let iv = Array(header[18..<34])
            cipher = try RNCryptor.crypto("starting AES-CBC") { () throws(CryptoError) in
                try AESCBC(key: keys.encryption, iv: iv, encrypting: false)
            }
            let mac = try RNCryptor.crypto("starting the HMAC") { () throws(CryptoError) in
                try HMACSHA256(key: keys.hmac)
            }
            try RNCryptor.crypto("hashing the header") { () throws(CryptoError) in
                try mac.start()
                try header.withBytes { (raw) throws(CryptoError) in try mac.update(raw) }
            }
            self.mac = mac
        }

        /// Reads the next piece of the base; decrypts all of what is held but the last 32 bytes.
        private mutating func decryptMore() throws(CofferError) {
            var piece = [UInt8](repeating: 0, count: 1 << 20)
            let count = try piece.withMutableBytes { (raw) throws(CofferError) in try base.read(into: raw) }
            if count == 0 { return try finish() }
            held += piece[0..<count]
            let ready = held.count - RNCryptor.tagSize
            guard ready > 0 else { return }
            let cipher = cipher!
            let mac = mac!
            let decrypted = try RNCryptor.crypto("decrypting RNCryptor data") { () throws(CryptoError) in
                try held.withBytes { (raw) throws(CryptoError) -> [UInt8] in
                    let ciphertext = UnsafeRawBufferPointer(rebasing: raw[0..<ready])
                    try mac.update(ciphertext)
                    return try cipher.update(ciphertext)
                }
            }
            output.replace(with: decrypted)
            held.removeFirst(ready)
        }

        private mutating func finish() throws(CofferError) {
            isFinished = true
            guard held.count == RNCryptor.tagSize else {
                throw CofferError(.decode, "the RNCryptor file is truncated: it ends before its HMAC")
            }
            let mac = mac!
            let cipher = cipher!
            let computed = try RNCryptor.crypto("finishing the HMAC") { () throws(CryptoError) in try mac.finish() }
            let matches = computed.withUnsafeBytes { mine in held.withUnsafeBytes { ConstantTime.equals(mine, $0) } }
            guard matches else {
                throw CofferError(
                    .authFailed,
                    "the RNCryptor file's HMAC does not match: the password is wrong or the file was altered; nothing was stored"
                )
            }
            do {
                output.replace(with: try cipher.finish())
            } catch {
                throw CofferError(.decode, "the RNCryptor file's padding is invalid; it was not made by RNCryptor")
            }
        }
    }

    /// Writes the RNCryptor v3 form of the bytes it is given to `base`; call ``finish()`` after the
    /// last piece to write the final block and the HMAC.
    struct EncryptingSink<Base: ByteSink>: ByteSink {
        private(set) var base: Base
        private let cipher: AESCBC
        private let mac: HMACSHA256

        /// A sink with fresh random salts and IV.
        init(base: Base, password: [UInt8]) throws(CofferError) {
            try self.init(
                base: base,
                password: password,
                encryptionSalt: SecureRandom.bytes(count: RNCryptor.saltSize),
                hmacSalt: SecureRandom.bytes(count: RNCryptor.saltSize),
                iv: SecureRandom.bytes(count: AESCBC.blockSize)
            )
        }

        /// A sink with the given salts and IV: for known-answer tests only (they must be random).
        init(
            base: Base,
            password: [UInt8],
            encryptionSalt: [UInt8],
            hmacSalt: [UInt8],
            iv: [UInt8]
        ) throws(CofferError) {
            self.base = base
            let keys = try RNCryptor.keys(password: password, encryptionSalt: encryptionSalt, hmacSalt: hmacSalt)
            cipher = try RNCryptor.crypto("starting AES-CBC") { () throws(CryptoError) in
                try AESCBC(key: keys.encryption, iv: iv, encrypting: true)
            }
            let mac = try RNCryptor.crypto("starting the HMAC") { () throws(CryptoError) in
                try HMACSHA256(key: keys.hmac)
            }
            try RNCryptor.crypto("starting the HMAC") { () throws(CryptoError) in try mac.start() }
            self.mac = mac
            let header = [RNCryptor.version, RNCryptor.passwordOption] + encryptionSalt + hmacSalt + iv
            try emit(header)
        }

        mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
            let cipher = cipher
            try emit(try RNCryptor.crypto("encrypting") { () throws(CryptoError) in try cipher.update(bytes) })
        }

        /// Writes the padded last block and the HMAC.
        mutating func finish() throws(CofferError) {
            let cipher = cipher
            let mac = mac
            try emit(try RNCryptor.crypto("encrypting") { () throws(CryptoError) in try cipher.finish() })
            let tag = try RNCryptor.crypto("finishing the HMAC") { () throws(CryptoError) in try mac.finish() }
            try tag.withBytes { (raw) throws(CofferError) in try base.write(raw) }
        }

        /// Writes bytes that the HMAC covers.
        private mutating func emit(_ bytes: [UInt8]) throws(CofferError) {
            let mac = mac
            try bytes.withBytes { (raw) throws(CofferError) in
                try RNCryptor.crypto("hashing") { () throws(CryptoError) in
                    try mac.update(raw)
                }
                try base.write(raw)
            }
        }
    }
}
