import Foundation
import Testing

@testable import Coffer

@Suite("Keychain: protection classes, access groups, scopes")
struct KeychainProtectionTests {
    @Test(
        "lock makes whenUnlocked* items unreadable while afterFirstUnlock* items stay readable until close",
        arguments: Accessibility.allCases
    )
    func lockBehaviour(accessibility: Accessibility) throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        try vault.keychain.add(Items.password("s", "a", value: "v", accessibility: accessibility))
        vault.lock()
        let readable = accessibility == .afterFirstUnlock || accessibility == .afterFirstUnlockThisDeviceOnly
        if readable {
            #expect(try vault.keychain.password(service: "s", account: "a") == "v")
        } else {
            let error = #expect(throws: KeychainError.self) {
                _ = try vault.keychain.password(service: "s", account: "a")
            }
            #expect(error?.code == .interactionNotAllowed)
            #expect(error?.osStatus == -25308)
            #expect(error?.message.contains(accessibility.rawValue) == true)
            // Nor can a locked item be added, changed or removed.
            #expect(throws: KeychainError.self) {
                try vault.keychain.add(Items.password("s", "b", accessibility: accessibility))
            }
            #expect(throws: KeychainError.self) { try vault.keychain.delete(Items.query(service: "s")) }
        }
        try vault.unlock(passphrase: "correct horse battery staple")
        #expect(try vault.keychain.password(service: "s", account: "a") == "v")
        vault.close()
        let closed = #expect(throws: KeychainError.self) { _ = try vault.keychain.password(service: "s", account: "a") }
        #expect(closed?.code == .closed)
    }

    @Test("a vault opened but not yet unlocked reads nothing, not even afterFirstUnlock items")
    func beforeFirstUnlock() throws {
        let fixture = try VaultFixture()
        let created = try fixture.create()
        try created.keychain.add(Items.password("s", "a", accessibility: .afterFirstUnlock))
        created.close()
        let vault = try fixture.open()
        let error = #expect(throws: KeychainError.self) { _ = try vault.keychain.password(service: "s", account: "a") }
        #expect(error?.code == .interactionNotAllowed)
        try vault.unlock(passphrase: "correct horse battery staple")
        vault.lock()
        #expect(try vault.keychain.password(service: "s", account: "a") == "secret")
    }

    @Test("access groups: other groups' items are invisible, writing them is missingEntitlement (-34018)")
    func accessGroups() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let mail = try vault.keychain(accessGroups: ["mail"])
        let chat = try vault.keychain(accessGroups: ["chat", "shared"])
        #expect(mail.defaultAccessGroup == "mail")
        try mail.add(Items.password("s", "a", value: "mail's"))
        try chat.add(Items.password("s", "a", value: "chat's"))
        var shared = Items.password("s", "a", value: "shared")
        shared.attributes.accessGroup = "shared"
        try chat.add(shared)

        #expect(try mail.password(service: "s", account: "a") == "mail's")
        #expect(try mail.find(Items.query()).count == 1)
        #expect(try chat.find(Items.query()).map(\.attributes.accessGroup) == ["chat", "shared"])
        #expect(try vault.keychain.find(Items.query()).count == 3)

        var intruder = Items.password("x", "y")
        intruder.attributes.accessGroup = "chat"
        for operation in [
            { try mail.add(intruder) },
            { _ = try mail.find(ItemQuery(attributes: intruder.attributes)) },
            { try mail.update(Items.query(service: "s"), with: ItemUpdate(attributes: intruder.attributes)) },
            { _ = try vault.keychain(accessGroups: []) },
        ] as [() throws -> Void] {
            let error = #expect(throws: KeychainError.self) { try operation() }
            #expect(error?.code == .missingEntitlement || error?.code == .param)
        }
        #expect(try mail.delete(Items.query()) == 1)
        #expect(try chat.find(Items.query()).count == 2)

        let restricted = try VaultFixture.configured { $0.accessGroups = ["a"] }
        let limited = try restricted.create()
        let error = #expect(throws: KeychainError.self) { _ = try limited.keychain(accessGroups: ["b"]) }
        #expect(error?.code == .missingEntitlement)
        #expect(error?.osStatus == -34018)
    }

    @Test("scopes: a key held in both scopes (as an import can leave it) matches one scope or any")
    func scopes() throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(Items.password("s", "a", value: "here"))
        try vault.keychain.addBesideOtherScope(Items.password("s", "a", value: "everywhere", scope: .syncable))
        for (match, expected) in [
            (SyncScope.Match.deviceBound, ["here"]), (.syncable, ["everywhere"]), (.any, ["here", "everywhere"]),
        ] {
            var query = Items.query(service: "s", scope: match)
            query.returnsValue = true
            #expect(try vault.keychain.find(query).map { String(decoding: $0.value!, as: UTF8.self) } == expected)
        }
    }

    @Test("every change to a syncable item is logged in the changes table, device-bound changes never")
    func changeLog() throws {
        let vault = try VaultFixture().create()
        let keychain = vault.keychain
        try keychain.add(Items.password("local", "a"))
        try keychain.update(Items.query(service: "local"), with: ItemUpdate(value: Data("x".utf8)))
        try keychain.delete(Items.query(service: "local"))
        #expect(try loggedChanges(vault).isEmpty)

        try keychain.add(Items.password("shared", "a", scope: .syncable))
        try keychain.update(Items.query(service: "shared"), with: ItemUpdate(value: Data("x".utf8)))
        try keychain.update(Items.query(service: "shared"), with: ItemUpdate(scope: .deviceBound))
        try keychain.update(Items.query(service: "shared"), with: ItemUpdate(scope: .syncable))
        try keychain.delete(Items.query(service: "shared"))
        let log = try loggedChanges(vault)
        #expect(log.map(\.1) == [.itemPut, .itemPut, .itemDelete, .itemPut, .itemDelete])
        #expect(log.map(\.0) == [1, 2, 3, 4, 5])
        #expect(Set(log.map(\.2)).count == 1, "a syncable item keeps one id")
    }

    func loggedChanges(_ vault: Vault) throws -> [(UInt64, ChangeLog.Kind, [UInt8])] {
        try vault.environment.read { (txn) throws in try ChangeLog.changes(after: 0, in: txn, schema: vault.schema) }
    }
}
