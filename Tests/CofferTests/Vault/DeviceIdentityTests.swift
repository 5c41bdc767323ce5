import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Each vault's device identity (issue 22's first step): made at creation, readable while locked,
/// stable across opens, its private halves sealed under the device root and usable once unlocked.
@Suite("Device identity")
struct DeviceIdentityTests {
    let fixture: VaultFixture

    init() throws { fixture = try VaultFixture() }

    @Test("made at creation, the same after reopening and while locked; its private keys match and sign")
    func identity() throws {
        let vault = try fixture.create()
        let identity = try vault.deviceIdentity()
        #expect(identity.deviceID == vault.deviceID)
        #expect(identity.encryptionKey.count == 32 && identity.signingKey.count == 32)
        #expect(identity.fingerprint.count == 24 && identity.fingerprint.split(separator: "-").count == 5)
        let keys = try vault.deviceKeys()
        #expect(try keys.agreement.publicKey() == Array(identity.encryptionKey))
        #expect(try keys.signing.publicKey() == Array(identity.signingKey))
        let message = Array("device added".utf8)
        #expect(
            try Ed25519PrivateKey.isValidSignature(
                try keys.signing.signature(of: message),
                of: message,
                by: Array(identity.signingKey)
            )
        )
        let secret = keys.agreement.secret.withUnsafeBytes { Array($0) }
        let seed = keys.signing.seed.withUnsafeBytes { Array($0) }
        vault.close()

        // The private halves are nowhere in the files in clear.
        let files = try fixture.vaultFileBytes()
        #expect(!files.contains(subsequence: secret) && !files.contains(subsequence: seed))

        let reopened = try fixture.open()
        defer { reopened.close() }
        #expect(try reopened.deviceIdentity() == identity, "readable while locked, and unchanged")
        #expect(throws: CofferError.self) { _ = try reopened.deviceKeys() }
        try reopened.unlock(passphrase: "correct horse battery staple")
        #expect(try reopened.deviceKeys().agreement.publicKey() == Array(identity.encryptionKey))
    }

    @Test("two vaults have different identities, and damaged device keys are refused by name")
    func distinctAndDamaged() throws {
        let first = try fixture.create()
        let other = try VaultFixture()
        let second = try other.create()
        defer { second.close() }
        #expect(try first.deviceIdentity() != second.deviceIdentity())
        try first.environment.write { txn in
            var sealed = try #require(try txn.get(first.schema.meta, key: Array(MetaKey.deviceKeys.utf8)))
            sealed[sealed.count - 1] ^= 1
            try txn.put(first.schema.meta, key: Array(MetaKey.deviceKeys.utf8), value: sealed)
        }
        let error = #expect(throws: CofferError.self) { _ = try first.deviceKeys() }
        #expect(error?.code == .decode && error?.message.contains("device keys") == true)
        first.close()
    }
}
