import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Keychain: user presence, auto-lock, tampering, canaries")
struct KeychainSecurityTests {
    final class Calls: @unchecked Sendable {
        private let lock = NSLock()
        private var requests: [AuthenticationRequest] = []
        func record(_ request: AuthenticationRequest) { lock.withLock { requests.append(request) } }
        var count: Int { lock.withLock { requests.count } }
        var last: AuthenticationRequest? { lock.withLock { requests.last } }
    }

    @Test(
        "user presence: granted reveals, canceled is userCanceled (-128), failed is authFailed, none is interactionNotAllowed",
        arguments: [AuthenticationResult.granted, .canceled, .failed]
    )
    func userPresence(answer: AuthenticationResult) throws {
        let calls = Calls()
        let fixture = try VaultFixture.configured { configuration in
            configuration.authenticationHandler = { request in
                calls.record(request)
                return answer
            }
        }
        let vault = try fixture.create()
        var item = Items.password("bank", "ann", value: "1234")
        item.requiresUserPresence = true
        try vault.keychain.add(item)

        // Attributes alone never ask.
        #expect(try vault.keychain.find(Items.query(service: "bank")).count == 1)
        #expect(calls.count == 0)

        switch answer {
        case .granted:
            #expect(try vault.keychain.password(service: "bank", account: "ann") == "1234")
        case .canceled:
            let error = #expect(throws: KeychainError.self) {
                _ = try vault.keychain.password(service: "bank", account: "ann")
            }
            #expect(error?.code == .userCanceled)
            #expect(error?.osStatus == -128)
        case .failed:
            let error = #expect(throws: KeychainError.self) {
                _ = try vault.keychain.password(service: "bank", account: "ann")
            }
            #expect(error?.code == .authFailed)
            #expect(error?.osStatus == -25293)
        }
        #expect(calls.count == 1)
        #expect(calls.last?.reason.contains("service 'bank'") == true)

        let bare = try VaultFixture().create()
        try bare.keychain.add(item)
        let error = #expect(throws: KeychainError.self) {
            _ = try bare.keychain.password(service: "bank", account: "ann")
        }
        #expect(error?.code == .interactionNotAllowed)
        #expect(error?.message.contains("authentication handler") == true)
    }

    @Test(
        "user presence: the handler checks the passphrase it is given with the request's checker, changing nothing",
        arguments: ["correct horse battery staple", "wrong horse"]
    )
    func presencePassphraseChecker(answer: String) async throws {
        let asked = Calls()
        let fixture = try VaultFixture.configured { configuration in
            configuration.authenticationHandler = { request in
                asked.record(request)
                return (try? request.passphrase.check(Passphrase(answer))) == true ? .granted : .failed
            }
        }
        let vault = try fixture.create()
        defer { vault.close() }
        var item = Items.password("bank", "ann", value: "1234")
        item.requiresUserPresence = true
        try await vault.keychain.add(item)
        if answer == "correct horse battery staple" {
            #expect(try await vault.keychain.password(service: "bank", account: "ann") == "1234")
        } else {
            let error = await #expect(throws: KeychainError.self) {
                _ = try await vault.keychain.password(service: "bank", account: "ann")
            }
            #expect(error?.code == .authFailed)
        }
        #expect(asked.count == 1)
        #expect(vault.lockState == .unlocked)

        // The checker neither unlocks a locked vault nor locks an unlocked one, in either form.
        let checker = try #require(asked.last).passphrase
        vault.lock()
        let asyncRight = try await checker.check("correct horse battery staple")
        let asyncWrong = try await checker.check("wrong horse")
        var syncRight = false
        var syncWrong = true
        try synchronously {
            syncRight = try checker.check("correct horse battery staple")
            syncWrong = try checker.check("")
        }
        #expect(asyncRight && syncRight)
        #expect(!asyncWrong && !syncWrong)
        #expect(vault.isLocked)
        let error = await #expect(throws: KeychainError.self) {
            _ = try await vault.keychain.password(service: "bank", account: "ann")
        }
        #expect(error?.code == .interactionNotAllowed, "still locked after the checks")
        vault.close()
        let closed = await #expect(throws: CofferError.self) { _ = try await checker.check("x") }
        #expect(closed?.code == .closed)
    }

    @Test("no pooled OpenSSL context (which would hold expanded keys) survives a lock or a close")
    func contextsDoNotOutliveLock() throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(Items.password("s", "a"))
        _ = try vault.keychain.password(service: "s", account: "a")
        #expect(vault.keychainContexts.idleCount > 0, "operations return their contexts to the pool")
        // A context in use while the vault locks is freed when its operation ends, not pooled.
        let session = try KeychainSession(vault.keychain)
        _ = try session.sealingKey(.deviceBound, .whenUnlocked)
        vault.lock()
        #expect(vault.keychainContexts.idleCount == 0)
        withExtendedLifetime(session) {}
        _ = consume session
        #expect(vault.keychainContexts.idleCount == 0)
        try vault.unlock(passphrase: "correct horse battery staple")
        _ = try vault.keychain.password(service: "s", account: "a")
        #expect(vault.keychainContexts.idleCount > 0)
        vault.close()
        #expect(vault.keychainContexts.idleCount == 0)
    }

    @Test("auto-lock: an idle vault locks itself; activity keeps it unlocked")
    func autoLock() throws {
        let fixture = try VaultFixture.configured { $0.autoLockInterval = .milliseconds(800) }
        let vault = try fixture.create()
        try vault.keychain.add(Items.password("s", "a"))
        for _ in 0..<12 {
            Thread.sleep(forTimeInterval: 0.1)
            _ = try vault.keychain.password(service: "s", account: "a")
        }
        #expect(!vault.isLocked, "kept unlocked by activity every 0.1 s")
        let deadline = Date().addingTimeInterval(10)
        while !vault.isLocked, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(vault.isLocked)
        let error = #expect(throws: KeychainError.self) { _ = try vault.keychain.password(service: "s", account: "a") }
        #expect(error?.code == .interactionNotAllowed)
        try vault.unlock(passphrase: "correct horse battery staple")
        #expect(!vault.isLocked)
    }

    /// The id of the device-bound generic password for `service` and `account`, computed from its
    /// primary key (without reading, so it works on records already tampered with).
    func itemID(_ vault: Vault, service: String, account: String) throws -> [UInt8] {
        try KeychainSession(vault.keychain).index(.deviceBound).id(of: Items.password(service, account))
    }

    /// Overwrites the stored record of the generic password `service`/`account` through `change`.
    func tamper(_ vault: Vault, service: String, account: String = "a", _ change: (inout [UInt8]) -> Void) throws {
        let id = try itemID(vault, service: service, account: account)
        try vault.environment.write { (txn) throws in
            var stored = try #require(try txn.get(vault.schema.items, key: id))
            change(&stored)
            try txn.put(vault.schema.items, key: id, value: stored)
        }
    }

    @Test("a flipped byte anywhere in a stored record gives decode (-26275); the other items still read")
    func flippedBytes() throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(Items.password("victim", "a", value: "v"))
        try vault.keychain.add(Items.password("bystander", "b", value: "w"))
        let victim = try itemID(vault, service: "victim", account: "a")
        let length = try vault.environment.read { (txn) throws in
            try txn.withValue(vault.schema.items, key: victim) { $0.count }
        }
        for position in [4, 5, 10, 20, try #require(length) - 1] {
            try tamper(vault, service: "victim") { $0[position] ^= 0x01 }
            let error = #expect(throws: KeychainError.self) {
                _ = try vault.keychain.find(Items.query(service: "victim"))
            }
            #expect(error?.code == .decode, "byte \(position)")
            #expect(error?.osStatus == -26275)
            try tamper(vault, service: "victim") { $0[position] ^= 0x01 }
        }
        #expect(try vault.keychain.password(service: "victim", account: "a") == "v")
        try tamper(vault, service: "victim") { $0[30] ^= 0xff }
        #expect(try vault.keychain.password(service: "bystander", account: "b") == "w")
    }

    @Test("a flipped scope flag or a record moved to another item's id gives decode")
    func movedRecords() throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(Items.password("one", "a", value: "1"))
        try vault.keychain.add(Items.password("two", "a", value: "2"))
        try tamper(vault, service: "one") { $0[2] = SyncScope.syncable.code }
        #expect(throws: KeychainError.self) { _ = try vault.keychain.find(ItemQuery()) }

        let other = try VaultFixture().create()
        try other.keychain.add(Items.password("one", "a", value: "1"))
        try other.keychain.add(Items.password("two", "a", value: "2"))
        let one = try itemID(other, service: "one", account: "a")
        let two = try itemID(other, service: "two", account: "a")
        try other.environment.write { (txn) throws in
            try txn.put(other.schema.items, key: two, value: try #require(try txn.get(other.schema.items, key: one)))
        }
        let error = #expect(throws: KeychainError.self) {
            _ = try other.keychain.password(service: "two", account: "a")
        }
        #expect(error?.code == .decode)
        #expect(try other.keychain.password(service: "one", account: "a") == "1")
    }

    @Test("canary: service, account, label, comment and value strings never appear in the vault files")
    func canary() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let marker = UUID().uuidString.prefix(8)
        let canaries = ["svc", "acct", "label", "comment", "value", "group"].map { "canary-\($0)-\(marker)" }
        var item = Items.password(canaries[0], canaries[1], value: canaries[4], scope: .syncable)
        item.attributes.label = canaries[2]
        item.attributes.comment = canaries[3]
        item.attributes.accessGroup = canaries[5]
        try vault.keychain.add(item)
        item.attributes.server = "unused"
        try vault.keychain.update(
            Items.query(service: canaries[0]),
            with: ItemUpdate(value: Data((canaries[4] + "2").utf8))
        )
        vault.close()
        let files = try fixture.vaultFileBytes()
        for canary in canaries {
            #expect(!files.contains(subsequence: Array(canary.utf8)), "\(canary) found in the vault files")
        }
        #expect(!files.contains(subsequence: Array(marker.utf8)))
    }
}
