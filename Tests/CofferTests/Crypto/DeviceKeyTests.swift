import Foundation
import Testing

@testable import Coffer

/// X25519 (RFC 7748) and Ed25519 (RFC 8032) against their RFCs' vectors, and the box that seals a
/// secret to an X25519 public key: the device keys a sync group's trust will rest on.
@Suite("Device keys: X25519, Ed25519, sealed boxes")
struct DeviceKeyTests {
    @Test("X25519: RFC 7748 section 6.1, both public keys and the shared secret from either side")
    func x25519() throws {
        let record = try #require(try Vectors.records("rfc7748-x25519.txt").first)
        let alice = try X25519PrivateKey(secret: SecureBytes(copying: [UInt8](hex: record["ALICE_PRIVATE"]!)))
        let bob = try X25519PrivateKey(secret: SecureBytes(copying: [UInt8](hex: record["BOB_PRIVATE"]!)))
        #expect(try alice.publicKey() == [UInt8](hex: record["ALICE_PUBLIC"]!))
        #expect(try bob.publicKey() == [UInt8](hex: record["BOB_PUBLIC"]!))
        let shared = [UInt8](hex: record["SHARED"]!)
        #expect(try alice.sharedSecret(with: try bob.publicKey()).withUnsafeBytes { Array($0) } == shared)
        #expect(try bob.sharedSecret(with: try alice.publicKey()).withUnsafeBytes { Array($0) } == shared)
    }

    @Test("X25519 refuses public keys of the wrong size and of small order")
    func x25519Refusals() throws {
        let key = X25519PrivateKey()
        #expect(throws: CryptoError.self) { _ = try key.sharedSecret(with: [UInt8](repeating: 9, count: 31)) }
        // The identity point (u = 0) and u = 1 have small order: the shared secret would be zeros.
        #expect(throws: CryptoError.self) { _ = try key.sharedSecret(with: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.self) { _ = try key.sharedSecret(with: [1] + [UInt8](repeating: 0, count: 31)) }
        #expect(throws: CryptoError.self) { _ = try X25519PrivateKey(secret: .random(count: 16)) }
    }

    @Test("Ed25519: RFC 8032 section 7.1 tests 1 to 3, signatures exact and verified")
    func ed25519() throws {
        let records = try Vectors.records("rfc8032-ed25519.txt")
        #expect(records.count == 3)
        for record in records {
            let key = try Ed25519PrivateKey(seed: SecureBytes(copying: [UInt8](hex: record["SECRET"]!)))
            let publicKey = [UInt8](hex: record["PUBLIC"]!)
            let message = [UInt8](hex: record["MESSAGE"]!)
            let signature = [UInt8](hex: record["SIGNATURE"]!)
            #expect(try key.publicKey() == publicKey, "test \(record["COUNT"]!)")
            #expect(try key.signature(of: message) == signature, "test \(record["COUNT"]!)")
            #expect(try Ed25519PrivateKey.isValidSignature(signature, of: message, by: publicKey))
        }
    }

    @Test("Ed25519 rejects a flipped bit anywhere in the signature or message, and another key")
    func ed25519Rejections() throws {
        let key = Ed25519PrivateKey()
        let publicKey = try key.publicKey()
        let message = Array("device added: laptop".utf8)
        let signature = try key.signature(of: message)
        #expect(try Ed25519PrivateKey.isValidSignature(signature, of: message, by: publicKey))
        var rejected = 0
        for bit in 0..<(signature.count * 8) {
            var altered = signature
            altered[bit / 8] ^= 1 << (bit % 8)
            if try !Ed25519PrivateKey.isValidSignature(altered, of: message, by: publicKey) { rejected += 1 }
        }
        #expect(rejected == signature.count * 8)
        for bit in 0..<(message.count * 8) {
            var altered = message
            altered[bit / 8] ^= 1 << (bit % 8)
            #expect(try !Ed25519PrivateKey.isValidSignature(signature, of: altered, by: publicKey))
        }
        let other = try Ed25519PrivateKey().publicKey()
        #expect(try !Ed25519PrivateKey.isValidSignature(signature, of: message, by: other))
        #expect(try !Ed25519PrivateKey.isValidSignature(Array(signature.prefix(63)), of: message, by: publicKey))
        #expect(throws: CryptoError.self) {
            _ = try Ed25519PrivateKey.isValidSignature(signature, of: message, by: Array(publicKey.prefix(31)))
        }
    }

    @Test("a sealed box opens only with its recipient's key and purpose; any change to it is refused")
    func sealedBox() throws {
        let recipient = X25519PrivateKey()
        let secret = SecureBytes.random(count: 32)
        let purpose = Array("group key, epoch 2".utf8)
        let box = try SealedToKey.seal(secret, to: try recipient.publicKey(), purpose: purpose)
        #expect(box.count == 32 + SealedToKey.overhead)
        #expect(try SealedToKey.open(box, with: recipient, purpose: purpose).constantTimeEquals(secret))
        // Two boxes of the same secret to the same key share nothing (a fresh ephemeral key each).
        let again = try SealedToKey.seal(secret, to: try recipient.publicKey(), purpose: purpose)
        #expect(again[1..<33] != box[1..<33])
        #expect(throws: CryptoError.self) { _ = try SealedToKey.open(box, with: X25519PrivateKey(), purpose: purpose) }
        #expect(throws: CryptoError.self) {
            _ = try SealedToKey.open(box, with: recipient, purpose: Array("group key, epoch 3".utf8))
        }
        var refused = 0
        for index in box.indices {
            var altered = box
            altered[index] ^= 0x01
            if (try? SealedToKey.open(altered, with: recipient, purpose: purpose)) == nil { refused += 1 }
        }
        #expect(refused == box.count)
        #expect(throws: CryptoError.self) {
            _ = try SealedToKey.open(Array(box.prefix(SealedToKey.overhead - 1)), with: recipient, purpose: purpose)
        }
    }
}
