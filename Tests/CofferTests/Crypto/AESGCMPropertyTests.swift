import Foundation
import Testing

@testable import Coffer

/// Round trips and tamper detection over random inputs.
@Suite("AES-256-GCM properties")
struct AESGCMPropertyTests {
    @Test(
        "seal then open returns the plaintext, for sizes from 0 to 70 KiB",
        arguments: [0, 1, 15, 16, 17, 1000, 65_536, 70_001]
    )
    func roundTrip(size: Int) throws {
        let gcm = try AESGCM()
        let key = SecureBytes.random(count: 32)
        let plaintext = SecureRandom.bytes(count: size)
        let aad = SecureRandom.bytes(count: size % 40)
        let sealed = try gcm.seal(plaintext, key: key, authenticating: aad)
        #expect(sealed.count == size + AESGCM.overhead)
        #expect(try gcm.open(sealed, key: key, authenticating: aad) == plaintext)
    }

    @Test("two seals of the same plaintext differ (fresh nonces)")
    func freshNonces() throws {
        let gcm = try AESGCM()
        let key = SecureBytes.random(count: 32)
        #expect(
            try gcm.seal([1, 2, 3], key: key, authenticating: []) != gcm.seal([1, 2, 3], key: key, authenticating: [])
        )
    }

    @Test("flipping any bit of a sealed message, or changing key or associated data, fails authentication")
    func tamper() throws {
        let gcm = try AESGCM()
        let key = SecureBytes.random(count: 32)
        let sealed = try gcm.seal(Array("attack at dawn".utf8), key: key, authenticating: [9])
        for index in sealed.indices {
            var altered = sealed
            altered[index] ^= 1 << UInt8(index % 8)
            #expect(throws: CryptoError.self) { _ = try gcm.open(altered, key: key, authenticating: [9]) }
        }
        #expect(throws: CryptoError.self) { _ = try gcm.open(sealed, key: key, authenticating: [8]) }
        #expect(throws: CryptoError.self) { _ = try gcm.open(sealed, key: .random(count: 32), authenticating: [9]) }
        #expect(throws: CryptoError.self) { _ = try gcm.open(Array(sealed.dropLast()), key: key, authenticating: [9]) }
        #expect(throws: CryptoError.self) {
            _ = try gcm.open([UInt8](repeating: 0, count: 27), key: key, authenticating: [9])
        }
    }

    @Test("wrong key and nonce sizes are refused with a clear error")
    func argumentChecks() throws {
        let gcm = try AESGCM()
        let error = #expect(throws: CryptoError.self) {
            _ = try gcm.seal([1], key: .random(count: 16), authenticating: [])
        }
        #expect(error?.kind == .invalidArgument)
        #expect(error?.description.contains("32 bytes") == true)
        #expect(throws: CryptoError.self) {
            _ = try gcm.seal([1], key: .random(count: 32), nonce: [0, 1], authenticating: [])
        }
    }
}
