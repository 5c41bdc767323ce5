import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Vault lifecycle")
struct VaultLifecycleTests {
    let fixture: VaultFixture

    init() throws { fixture = try VaultFixture() }

    @Test("create returns an unlocked vault; open returns it locked with the same identity")
    func createAndOpen() throws {
        let created = try fixture.create()
        #expect(!created.isLocked)
        #expect(created.formatVersion == 2)
        let identity = (created.id, created.deviceID, created.syncGroupID, created.createdAt)
        created.close()

        let opened = try fixture.open()
        #expect(opened.isLocked)
        #expect(opened.id == identity.0)
        #expect(opened.deviceID == identity.1)
        #expect(opened.syncGroupID == identity.2)
        #expect(opened.createdAt == identity.3)
        #expect(Set([opened.id, opened.deviceID, opened.syncGroupID]).count == 3)
        try opened.unlock(passphrase: "correct horse battery staple")
        #expect(!opened.isLocked)
    }

    @Test("the directory is 0700 and the files 0600")
    func modes() throws {
        try fixture.create().close()
        let mode = { (path: String) in
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        #expect(try mode(fixture.vaultURL.path) == 0o700)
        #expect(try mode(fixture.vaultURL.appendingPathComponent("data.mdb").path) == 0o600)
    }

    @Test("a wrong passphrase fails with authFailed, leaves the vault locked and the files unchanged")
    func wrongPassphrase() throws {
        try fixture.create().close()
        let before = try Data(contentsOf: fixture.vaultURL.appendingPathComponent("data.mdb"))
        let vault = try fixture.open()
        let error = #expect(throws: CofferError.self) { try vault.unlock(passphrase: "correct horse battery stapler") }
        #expect(error?.code == .authFailed)
        #expect(error?.osStatus == -25293)
        #expect(error?.message.contains("passphrase is wrong") == true)
        #expect(vault.isLocked)
        #expect(try Data(contentsOf: fixture.vaultURL.appendingPathComponent("data.mdb")) == before)
    }

    @Test("lock drops whenUnlocked keys but keeps afterFirstUnlock keys until close")
    func protectionLevels() throws {
        let vault = try fixture.create()
        _ = try vault.classKey(.sync, .whenUnlocked)
        vault.lock()
        #expect(vault.isLocked)
        let error = #expect(throws: CofferError.self) { _ = try vault.classKey(.sync, .whenUnlocked) }
        #expect(error?.code == .interactionNotAllowed)
        #expect(error?.osStatus == -25308)
        #expect(throws: Never.self) { _ = try vault.classKey(.device, .afterFirstUnlock) }
        #expect(throws: CofferError.self) { _ = try vault.recoveryKey() }
        vault.close()
        #expect(throws: CofferError.self) { _ = try vault.classKey(.device, .afterFirstUnlock) }
    }

    @Test("an opened vault has no keys until its first unlock; unlocking again derives the same keys")
    func keysAfterReopen() throws {
        let created = try fixture.create()
        let before = try created.classKey(.device, .whenUnlocked).withUnsafeBytes { Array($0) }
        created.close()
        let vault = try fixture.open()
        let error = #expect(throws: CofferError.self) { _ = try vault.classKey(.device, .afterFirstUnlock) }
        #expect(error?.code == .interactionNotAllowed)
        try vault.unlock(passphrase: "correct horse battery staple")
        #expect(try vault.classKey(.device, .whenUnlocked).withUnsafeBytes { Array($0) } == before)
        #expect(try vault.classKey(.sync, .whenUnlocked).withUnsafeBytes { Array($0) } != before)
    }

    @Test("after close, every operation fails with closed; closing twice is harmless")
    func closeTwice() throws {
        let vault = try fixture.create()
        vault.close()
        vault.close()
        for operation in [{ try vault.unlock(passphrase: "correct horse battery staple") }, { _ = try vault.info() }] {
            let error = #expect(throws: CofferError.self) { try operation() }
            #expect(error?.code == .closed)
        }
    }

    @Test("changing the passphrase: the new one unlocks, the old one does not, the recovery key still does")
    func changePassphrase() throws {
        let vault = try fixture.create()
        let recovery = try vault.recoveryKey().text
        let rootBefore = try vault.unlockedRoots().sync.withUnsafeBytes { Array($0) }
        try vault.changePassphrase(to: "a new passphrase")
        vault.close()

        let reopened = try fixture.open()
        #expect(throws: CofferError.self) { try reopened.unlock(passphrase: "correct horse battery staple") }
        try reopened.unlock(passphrase: "a new passphrase")
        #expect(try reopened.unlockedRoots().sync.withUnsafeBytes { Array($0) } == rootBefore)
        reopened.lock()
        try reopened.unlock(recoveryKey: RecoveryKey(text: recovery))
        #expect(!reopened.isLocked)
    }

    @Test("changePassphrase needs an unlocked vault and a non-empty passphrase")
    func changePassphraseChecks() throws {
        let vault = try fixture.create()
        #expect(throws: CofferError.self) { try vault.changePassphrase(to: "") }
        vault.lock()
        let error = #expect(throws: CofferError.self) { try vault.changePassphrase(to: "x") }
        #expect(error?.code == .interactionNotAllowed)
    }

    @Test("a forgotten passphrase: unlock with the recovery key, then set a new passphrase")
    func recoveryFlow() throws {
        let created = try fixture.create()
        let text = try created.recoveryKey().text
        created.close()
        let vault = try fixture.open()
        try vault.unlock(recoveryKey: RecoveryKey(text: text.lowercased().replacingOccurrences(of: "-", with: "")))
        try vault.changePassphrase(to: "remembered now")
        vault.close()
        try fixture.open().unlock(passphrase: "remembered now")
    }

    @Test("another vault's recovery key fails with authFailed")
    func foreignRecoveryKey() throws {
        let other = try VaultFixture()
        let foreign = try other.create().recoveryKey()
        let vault = try fixture.create()
        vault.lock()
        let error = #expect(throws: CofferError.self) { try vault.unlock(recoveryKey: foreign) }
        #expect(error?.code == .authFailed)
        #expect(vault.isLocked)
    }

    @Test("empty passphrases and out-of-range KDF costs are refused at create, leaving nothing behind")
    func createChecks() throws {
        let error = #expect(throws: CofferError.self) { _ = try fixture.create(passphrase: "") }
        #expect(error?.code == .param)
        var configuration = fixture.configuration
        configuration.kdf = KDFParameters(logN: 30, r: 8, p: 1)
        #expect(throws: CofferError.self) {
            _ = try Vault.create(at: fixture.vaultURL, passphrase: "x", configuration: configuration)
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.vaultURL.path))
    }

    @Test("create refuses an existing vault, a non-empty directory and a file, touching none of them")
    func createOverExisting() throws {
        try fixture.create().close()
        let before = try fixture.vaultFileBytes()
        let error = #expect(throws: CofferError.self) { _ = try fixture.create() }
        #expect(error?.code == .vaultExists)
        #expect(try fixture.vaultFileBytes() == before)

        let busy = fixture.directory.path("busy")
        try FileManager.default.createDirectory(at: busy, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: busy.appendingPathComponent("notes.txt"))
        #expect(throws: CofferError.self) {
            _ = try Vault.create(at: busy, passphrase: "x", configuration: fixture.configuration)
        }
        #expect(TemporaryDirectory.listing(busy) == ["notes.txt"])

        let file = fixture.directory.path("file")
        try Data("x".utf8).write(to: file)
        #expect(throws: CofferError.self) {
            _ = try Vault.create(at: file, passphrase: "x", configuration: fixture.configuration)
        }
    }

    @Test("create makes missing parent directories and accepts an empty existing directory")
    func createDirectories() throws {
        let nested = fixture.directory.path("a/b/c")
        try Vault.create(at: nested, passphrase: "x", configuration: fixture.configuration).close()
        #expect(
            TemporaryDirectory.listing(nested) == [
                "commit-record", "data.mdb", "lock.mdb", "space-reserve", "trees-checked",
            ]
        )
        let empty = fixture.directory.path("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
        try Vault.create(at: empty, passphrase: "x", configuration: fixture.configuration).close()
    }

    @Test("no plaintext key material in the vault files: passphrase, roots, class keys, recovery key")
    func canary() throws {
        let passphrase = "canary-\(UUID().uuidString)"
        let vault = try fixture.create(passphrase: Passphrase(passphrase))
        let roots = try vault.unlockedRoots()
        var secrets: [[UInt8]] = [
            Array(passphrase.utf8), Array(passphrase.utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }),
        ]
        secrets.append(roots.device.withUnsafeBytes { Array($0) })
        secrets.append(roots.sync.withUnsafeBytes { Array($0) })
        secrets.append(try vault.recoveryKey().bytes.withUnsafeBytes { Array($0) })
        secrets.append(Array(try vault.recoveryKey().text.utf8))
        let ring = try vault.keyRing()
        for scope in KeyScope.allCases {
            for level in ProtectionLevel.symmetricLevels {
                secrets.append(try vault.classKey(scope, level).withUnsafeBytes { Array($0) })
            }
            // The completeUnlessOpen private key: its public half is stored (signed), never this.
            let writeKey = try ring.writeClassPrivateKey(scope, epoch: ring.currentEpoch(scope))
            secrets.append(writeKey.secret.withUnsafeBytes { Array($0) })
        }
        try vault.changePassphrase(to: Passphrase(passphrase + "-2"))
        vault.close()
        let files = try fixture.vaultFileBytes()
        #expect(files.count > 10_000)
        for (index, secret) in secrets.enumerated() {
            #expect(!files.contains(subsequence: secret), "secret \(index) found in the vault files")
            #expect(!files.contains(subsequence: Array(secret.prefix(16))), "the first half of secret \(index) found")
        }
        // The check itself works: the vault id is stored in the clear and is found.
        #expect(files.contains(subsequence: try fixture.open().id.bytes))
    }

    @Test("info reports identity, format, lock state, counts and sizes")
    func info() throws {
        let vault = try fixture.create()
        let info = try vault.info()
        #expect(info.vaultID == vault.id)
        #expect(info.formatVersion == 2)
        #expect(info.kdf == "scrypt N=2^10 r=8 p=1")
        #expect(!info.isLocked)
        #expect(info.itemCount == 0 && info.blobCount == 0 && info.chunkCount == 0 && info.snapshotCount == 0)
        #expect(info.fileBytes > 0 && info.usedBytes > 0 && info.mapBytes >= info.usedBytes)
        vault.lock()
        #expect(try vault.info().isLocked)
    }
}
