import Foundation
import Testing

@testable import Coffer

/// HKDF-SHA256 (RFC 5869) and scrypt (RFC 7914) against their RFCs' test vectors.
@Suite("KDF known answers")
struct KDFVectorTests {
    @Test("HKDF-SHA256: RFC 5869 appendix A.1-A.3")
    func hkdf() throws {
        let records = try Vectors.records("rfc5869-hkdf-sha256.txt")
        #expect(records.count == 3)
        for record in records {
            let okm = try HKDF.deriveKey(
                from: [UInt8](hex: record["IKM"]!),
                salt: [UInt8](hex: record["salt"]!),
                info: [UInt8](hex: record["info"]!),
                byteCount: Int(record["L"]!)!
            )
            #expect(okm.withUnsafeBytes { Array($0) } == [UInt8](hex: record["OKM"]!), "case \(record["COUNT"]!)")
        }
    }

    @Test("HKDF refuses lengths outside 1...8160")
    func hkdfLength() {
        #expect(throws: CryptoError.self) { _ = try HKDF.deriveKey(from: [1], info: [UInt8](), byteCount: 0) }
        #expect(throws: CryptoError.self) {
            _ = try HKDF.deriveKey(from: [1], info: [UInt8](), byteCount: 255 * 32 + 1)
        }
    }

    @Test("scrypt: RFC 7914 section 12, all four vectors (the last needs 1 GiB)")
    func scrypt() throws {
        let records = try Vectors.records("rfc7914-scrypt.txt")
        #expect(records.count == 4)
        for record in records {
            let n = UInt64(record["N"]!)!
            let key = try Scrypt.deriveKey(
                password: Array(record["PASSWORD"]!.utf8),
                salt: Array(record["SALT"]!.utf8),
                logN: UInt8(n.trailingZeroBitCount),
                r: UInt32(record["r"]!)!,
                p: UInt32(record["p"]!)!,
                byteCount: Int(record["LENGTH"]!)!
            )
            #expect(
                key.withUnsafeBytes { Array($0) } == [UInt8](hex: record["DERIVED_KEY"]!),
                "COUNT \(record["COUNT"]!)"
            )
        }
    }

    @Test("scrypt refuses parameters that would need more than the memory limit, before allocating")
    func scryptLimit() {
        let error = #expect(throws: CryptoError.self) {
            _ = try Scrypt.deriveKey(password: [1], salt: [2], logN: 30, r: 8, p: 1)
        }
        #expect(error?.kind == .invalidArgument)
        #expect(error?.description.contains("MiB") == true)
    }
}

/// HMAC-SHA256 (RFC 4231) and SHA-256 (FIPS 180-4 examples), values inlined with their origin.
@Suite("HMAC and SHA-256 known answers")
struct DigestVectorTests {
    /// RFC 4231 section 4: test cases 1, 2, 3, 4, 6 and 7 (SHA-256 lines); then an empty key and
    /// message, and a key of exactly one block (64 bytes), both computed with Python's `hmac` module.
    static let hmacCases: [(key: [UInt8], message: [UInt8], mac: String)] = [
        (
            [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        (
            Array(1...25), [UInt8](repeating: 0xcd, count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131),
            Array(
                ("This is a test using a larger than block-size key and a larger than block-size data. The key needs "
                    + "to be hashed before being used by the HMAC algorithm.").utf8
            ),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
        ([], [], "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        (
            Array(0..<64), Array(0..<200),
            "45f8fa81cfb242288196f6a27ce22896c8f0c3946640698a5743ab0ae9ce72e6"
        ),
    ]

    @Test("HMAC-SHA256: RFC 4231 cases, one-shot and with a reused context")
    func hmac() throws {
        for (key, message, expected) in Self.hmacCases {
            #expect(try HMACSHA256.authenticationCode(for: message, key: key).hex == expected)
            let reused = try HMACSHA256(key: key)
            for _ in 0..<3 { #expect(try reused.authenticationCode(for: message).hex == expected) }
            let split = message.count / 2
            #expect(
                try reused.authenticationCode(for: Array(message[..<split]), Array(message[split...])).hex == expected
            )
            #expect(try reused.authenticationCode(of: message).hex == expected)
            var tag = [UInt8](repeating: 0, count: HMACSHA256.byteCount)
            try message.withUnsafeBytes { raw in
                try tag.withUnsafeMutableBytes { try reused.authenticationCode(of: raw, into: $0) }
            }
            #expect(tag.hex == expected)
            try reused.start()
            for byte in message { try [byte].withUnsafeBytes { try reused.update($0) } }
            #expect(try reused.finish().hex == expected)
        }
        var short = [UInt8](repeating: 0, count: 31)
        #expect(throws: CryptoError.self) {
            try short.withUnsafeMutableBytes {
                try HMACSHA256(key: [1]).authenticationCode(of: UnsafeRawBufferPointer($0), into: $0)
            }
        }
    }

    @Test("SHA-256: FIPS 180-4 examples (empty, \"abc\", a million 'a'), one-shot and streaming")
    func sha256() throws {
        #expect(try SHA256.hash([UInt8]()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            try SHA256.hash(Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        let hasher = try SHA256()
        let thousand = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { try hasher.update(thousand) }
        #expect(try hasher.finalize().hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // finalize resets: the same hasher serves the next message.
        try hasher.update(Array("abc".utf8))
        #expect(try hasher.finalize().hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

/// The small helpers secrets rely on.
@Suite("Secure helpers")
struct SecureHelperTests {
    @Test("constant-time comparison agrees with ==, including lengths and empties")
    func constantTime() {
        let a: [UInt8] = [1, 2, 3]
        for (other, equal) in [([1, 2, 3], true), ([1, 2, 4], false), ([1, 2], false), ([], false)] as [([UInt8], Bool)]
        {
            #expect(a.withUnsafeBytes { x in other.withUnsafeBytes { ConstantTime.equals(x, $0) } } == equal)
        }
        #expect([UInt8]().withUnsafeBytes { x in [UInt8]().withUnsafeBytes { ConstantTime.equals(x, $0) } })
    }

    @Test("a SecureBytes initializer that throws frees its buffer once (it was freed twice, and crashed)")
    func throwingInitializer() {
        struct Refused: Error {}
        for _ in 0..<1000 {
            #expect(throws: Refused.self) {
                _ = try SecureBytes(count: 32) { (buffer) throws(Refused) in
                    buffer.storeBytes(of: 0xFF, as: UInt8.self)
                    throw Refused()
                }
            }
        }
    }

    @Test("SecureBytes copies, compares, never prints its contents, and random buffers differ")
    func secureBytes() {
        let key = SecureBytes(copying: [0xde, 0xad, 0xbe, 0xef])
        #expect(key.count == 4)
        #expect(key.constantTimeEquals([UInt8]([0xde, 0xad, 0xbe, 0xef])))
        #expect(!key.constantTimeEquals([UInt8]([0xde, 0xad])))
        #expect(!String(describing: key).contains("de"))
        #expect(
            SecureBytes.random(count: 32).withUnsafeBytes { Array($0) }
                != SecureBytes.random(count: 32).withUnsafeBytes { Array($0) }
        )
        #expect(SecureBytes(copying: [UInt8]()).count == 0)
    }

    @Test("wipe zeroes a byte array in place")
    func wipe() {
        var secret: [UInt8] = [1, 2, 3, 4]
        secret.wipe()
        #expect(secret == [0, 0, 0, 0])
    }
}
