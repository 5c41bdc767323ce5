import Foundation
import Testing

@testable import Coffer

@Suite("Keychain: update and delete")
struct KeychainUpdateTests {
    let vault: Vault

    init() throws { vault = try VaultFixture().create() }

    @Test("update changes values and attributes of every match, atomically, and returns the count")
    func updateMany() throws {
        for account in ["a", "b", "c"] { try vault.keychain.add(Items.password("s", account)) }
        var changes = ItemUpdate(value: Data("new".utf8))
        changes.attributes.label = "relabelled"
        #expect(try vault.keychain.update(Items.query(service: "s"), with: changes) == 3)
        var query = Items.query(service: "s")
        query.returnsValue = true
        for item in try vault.keychain.find(query) {
            #expect(item.value == Data("new".utf8))
            #expect(item.attributes.label == "relabelled")
        }
    }

    @Test("an update that would collide with another item is duplicateItem and changes nothing")
    func updateCollision() throws {
        try vault.keychain.add(Items.password("s", "a", value: "A"))
        try vault.keychain.add(Items.password("s", "b", value: "B"))
        var changes = ItemUpdate(value: Data("changed".utf8))
        changes.attributes.account = "b"
        let error = #expect(throws: KeychainError.self) {
            try vault.keychain.update(Items.query(account: "a"), with: changes)
        }
        #expect(error?.code == .duplicateItem)
        #expect(try vault.keychain.password(service: "s", account: "a") == "A")
        #expect(try vault.keychain.password(service: "s", account: "b") == "B")
        // Two matches folding onto one key collide too.
        var fold = ItemUpdate()
        fold.attributes.account = "z"
        #expect(throws: KeychainError.self) { try vault.keychain.update(Items.query(service: "s"), with: fold) }
        #expect(try vault.keychain.find(Items.query()).count == 2)
    }

    @Test("changing the primary key moves the item: found under the new key, gone from the old")
    func updateKey() throws {
        try vault.keychain.add(Items.password("s", "old", value: "v"))
        var changes = ItemUpdate()
        changes.attributes.account = "new"
        try vault.keychain.update(Items.query(account: "old"), with: changes)
        #expect(try vault.keychain.password(service: "s", account: "new") == "v")
        #expect(try vault.keychain.password(service: "s", account: "old") == nil)
        let gone = #expect(throws: KeychainError.self) { _ = try vault.keychain.find(Items.query(account: "old")) }
        #expect(gone?.code == .itemNotFound)
    }

    @Test("changing the protection class re-seals the item: whenUnlocked to afterFirstUnlock survives a lock")
    func updateAccessibility() throws {
        try vault.keychain.add(Items.password("s", "a", value: "v", accessibility: .whenUnlocked))
        try vault.keychain.update(Items.query(service: "s"), with: ItemUpdate(accessibility: .afterFirstUnlock))
        vault.lock()
        #expect(try vault.keychain.password(service: "s", account: "a") == "v")
        try vault.unlock(passphrase: "correct horse battery staple")
        try vault.keychain.update(
            Items.query(service: "s"),
            with: ItemUpdate(accessibility: .whenUnlockedThisDeviceOnly)
        )
        vault.lock()
        #expect(throws: KeychainError.self) { _ = try vault.keychain.password(service: "s", account: "a") }
    }

    @Test("changing class and scope together: the item moves to the syncable scope and stays readable")
    func updateScope() throws {
        try vault.keychain.add(Items.password("s", "a", value: "v", accessibility: .whenUnlockedThisDeviceOnly))
        let refused = #expect(throws: KeychainError.self) {
            try vault.keychain.update(Items.query(service: "s"), with: ItemUpdate(scope: .syncable))
        }
        #expect(refused?.code == .param)
        try vault.keychain.update(
            Items.query(service: "s"),
            with: ItemUpdate(accessibility: .afterFirstUnlock, scope: .syncable)
        )
        let moved = try vault.keychain.find(Items.query(service: "s", scope: .syncable))
        #expect(moved.count == 1)
        #expect(moved[0].accessibility == .afterFirstUnlock)
        #expect(throws: KeychainError.self) {
            _ = try vault.keychain.find(Items.query(service: "s", scope: .deviceBound))
        }
        #expect(try vault.keychain.password(service: "s", account: "a") == "v")
    }

    @Test("delete removes every match and its index entries")
    func deleteMany() throws {
        for account in ["a", "b"] { try vault.keychain.add(Items.password("s", account)) }
        try vault.keychain.add(Items.password("t", "a"))
        #expect(try vault.keychain.delete(Items.query(service: "s")) == 2)
        #expect(try vault.keychain.find(Items.query()).count == 1)
        let indexEntries = try vault.environment.read { (txn) throws in try txn.count(vault.schema.itemIndex) }
        #expect(indexEntries == 3, "the class, service and account entries of the one item left (it has no group)")
    }
}
