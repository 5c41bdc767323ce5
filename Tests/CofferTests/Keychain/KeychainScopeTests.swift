import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Updates keep a record's scope (issue 43): a primary key names one item, device-bound or syncable,
/// and changing its value does not move it unless the caller names a scope.
@Suite("Keychain: updates keep an item's scope and protection")
struct KeychainScopeTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    /// Every item of `service`/`account`, of either scope.
    func items(_ vault: Vault, _ service: String) throws -> [KeychainItem] {
        var query = Items.query(service: service, account: "ann")
        query.returnsValue = true
        query.limit = .all
        let found: [KeychainItem]
        do {
            found = try vault.keychain.find(query)
        } catch {
            guard error.code == .itemNotFound else { throw error }
            found = []
        }
        return found
    }

    /// `a` holds a syncable password "v1" for mail/ann, and `b` joined from it and reads it.
    func syncedPair() throws -> (a: Vault, b: Vault) {
        let a = try group.createFirst()
        try a.keychain.setPassword("v1", service: "mail", account: "ann", scope: .syncable)
        let start = group.bundle("start")
        try a.export(to: start)
        let (b, _) = try group.join("b", from: start)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "v1")
        return (a, b)
    }

    @Test("A synced password updated with setPassword stays syncable: every device reads the new value")
    func setPasswordKeepsScope() throws {
        let (a, b) = try syncedPair()

        try a.keychain.setPassword("v2", service: "mail", account: "ann")
        #expect(try items(a, "mail").map(\.scope) == [.syncable])
        let summary = try group.exchange(a, b, "a-to-b")
        #expect(summary.applied.items == 1)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "v2")

        // The other way too, and with the typed form.
        try b.keychain.set(["v": 3], for: KeychainKey(service: "mail", account: "ann"))
        _ = try group.exchange(b, a, "b-to-a")
        #expect(try a.keychain.value(KeychainKey(service: "mail", account: "ann"), as: [String: Int].self) == ["v": 3])
        #expect(try items(a, "mail").count == 1 && items(b, "mail").count == 1)
    }

    @Test("Protection class and user presence are kept unless given; a new item gets the defaults")
    func protectionKept() throws {
        let vault = try group.createFirst()
        var item = Items.password("bank", "ann", value: "1", accessibility: .afterFirstUnlock)
        item.requiresUserPresence = true
        try vault.keychain.add(item)
        try vault.keychain.setPassword("2", service: "bank", account: "ann")
        var stored = try #require(try vault.keychain.find(Items.query(service: "bank")).first)
        #expect(
            stored.accessibility == .afterFirstUnlock && stored.requiresUserPresence && stored.scope == .deviceBound
        )
        try vault.keychain.setPassword("3", service: "bank", account: "ann", accessibility: .whenUnlocked)
        stored = try #require(try vault.keychain.find(Items.query(service: "bank")).first)
        #expect(stored.accessibility == .whenUnlocked && stored.requiresUserPresence)

        try vault.keychain.setPassword("new", service: "fresh", account: "ann")
        let fresh = try #require(try vault.keychain.find(Items.query(service: "fresh")).first)
        #expect(fresh.scope == .deviceBound && fresh.accessibility == .whenUnlocked && !fresh.requiresUserPresence)
    }

    @Test("Naming the other scope moves the item: the other devices delete their copy; upsert takes the item as given")
    func namedScopeMoves() throws {
        let (a, b) = try syncedPair()

        try a.keychain.setPassword("local", service: "mail", account: "ann", scope: .deviceBound)
        #expect(try items(a, "mail").map(\.scope) == [.deviceBound])
        _ = try group.exchange(a, b, "a-to-b")
        #expect(try b.keychain.password(service: "mail", account: "ann") == nil)
        #expect(try a.keychain.password(service: "mail", account: "ann") == "local")

        // upsert replaces the item of either scope with exactly the item given.
        try a.keychain.upsert(Items.password("mail", "ann", value: "shared", scope: .syncable))
        #expect(try items(a, "mail").map(\.scope) == [.syncable])
        _ = try group.exchange(a, b, "a-to-b-again")
        #expect(try b.keychain.password(service: "mail", account: "ann") == "shared")
    }

    @Test("add refuses a primary key held in the other scope, and nothing is added")
    func addAcrossScopes() throws {
        let vault = try group.createFirst()
        try vault.keychain.add(Items.password("mail", "ann", scope: .syncable))
        let error = #expect(throws: KeychainError.self) {
            try vault.keychain.add(contentsOf: [Items.password("other", "ann"), Items.password("mail", "ann")])
        }
        #expect(error?.code == .duplicateItem)
        #expect(error?.message.contains("syncable") == true)
        #expect(try items(vault, "other").isEmpty)
        let inBatch = #expect(throws: KeychainError.self) {
            try vault.keychain.add(contentsOf: [
                Items.password("pair", "ann"), Items.password("pair", "ann", scope: .syncable),
            ])
        }
        #expect(inBatch?.code == .duplicateItem)
    }

    @Test("With an item in each scope (as an import can leave them), setPassword changes the one reads return")
    func bothScopes() throws {
        let vault = try group.createFirst()
        try vault.keychain.add(Items.password("mail", "ann", value: "everywhere", scope: .syncable))
        try vault.keychain.addBesideOtherScope(Items.password("mail", "ann", value: "here"))
        try vault.keychain.setPassword("changed", service: "mail", account: "ann")
        let found = try items(vault, "mail")
        #expect(found.count == 2)
        #expect(found.first { $0.scope == .deviceBound }?.value == Data("changed".utf8))
        #expect(found.first { $0.scope == .syncable }?.value == Data("everywhere".utf8))
    }
}
