import Foundation
import Testing

@testable import Coffer

@Suite("Keychain: add, find, upsert, passwords")
struct KeychainBasicsTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    @Test("add then find returns attributes, and the value only when asked")
    func addAndFind() throws {
        var item = Items.password("mail", "ann", value: "hunter2")
        item.attributes.label = "Mail for Ann"
        item.attributes.generic = Data([1, 2, 3])
        try vault.keychain.add(item)

        let found = try #require(try vault.keychain.find(Items.query(service: "mail")).first)
        #expect(found.attributes.account == "ann")
        #expect(found.attributes.label == "Mail for Ann")
        #expect(found.attributes.generic == Data([1, 2, 3]))
        #expect(found.value == nil)
        #expect(found.creationDate != nil && found.modificationDate != nil)

        var withValue = Items.query(service: "mail", account: "ann")
        withValue.returnsValue = true
        #expect(try vault.keychain.find(withValue).first?.value == Data("hunter2".utf8))
        #expect(try vault.keychain.password(service: "mail", account: "ann") == "hunter2")
    }

    @Test("find matches any subset of attributes, in a fixed order, with limit one or all")
    func queries() throws {
        for (service, account) in [("web", "zoe"), ("mail", "bob"), ("mail", "ann"), ("web", "ann")] {
            var item = Items.password(service, account)
            item.attributes.comment = account == "ann" ? "first" : nil
            try vault.keychain.add(item)
        }
        let accounts = { (query: ItemQuery) in
            try vault.keychain.find(query).map { "\($0.attributes.service!)/\($0.attributes.account!)" }
        }
        #expect(try accounts(Items.query()) == ["mail/ann", "mail/bob", "web/ann", "web/zoe"])
        #expect(try accounts(Items.query(service: "mail")) == ["mail/ann", "mail/bob"])
        #expect(try accounts(Items.query(account: "ann")) == ["mail/ann", "web/ann"])
        var byComment = ItemQuery()
        byComment.attributes.comment = "first"
        #expect(try accounts(byComment) == ["mail/ann", "web/ann"])
        var one = Items.query(account: "ann")
        one.limit = .one
        #expect(try accounts(one) == ["mail/ann"])
        #expect(try vault.keychain.find(ItemQuery()).count == 4)
    }

    @Test("itemNotFound (-25300) for a find, update or delete that matches nothing; password returns nil")
    func notFound() throws {
        for operation in [
            { _ = try vault.keychain.find(Items.query(service: "none")) },
            { try vault.keychain.update(Items.query(service: "none"), with: ItemUpdate(value: Data())) },
            { try vault.keychain.delete(Items.query(service: "none")) },
        ] as [() throws -> Void] {
            let error = #expect(throws: KeychainError.self) { try operation() }
            #expect(error?.code == .itemNotFound)
            #expect(error?.osStatus == -25300)
            #expect(error?.message.contains("service 'none'") == true)
        }
        #expect(try vault.keychain.password(service: "none", account: "x") == nil)
        #expect(try !vault.keychain.deletePassword(service: "none", account: "x"))
    }

    @Test("items(matching:) lists what find finds, and an empty array where find throws itemNotFound")
    func listingWithoutError() throws {
        #expect(try vault.keychain.items(matching: Items.query(service: "none")).isEmpty)
        try vault.keychain.setPassword("pw", service: "listed", account: "ann")
        let query = ItemQuery.genericPassword(service: "listed", account: "ann")
        #expect(try vault.keychain.items(matching: query).map(\.attributes.account) == ["ann"])
        #expect(try vault.keychain.items(matching: query) == (try vault.keychain.find(query)))
    }

    @Test(
        "duplicateItem (-25299) for a second add with the same primary key; upsert replaces, keeping the creation date"
    )
    func duplicatesAndUpsert() throws {
        try vault.keychain.add(Items.password("mail", "ann", value: "one"))
        let error = #expect(throws: KeychainError.self) {
            try vault.keychain.add(Items.password("mail", "ann", value: "two"))
        }
        #expect(error?.code == .duplicateItem)
        #expect(error?.osStatus == -25299)
        let created = try vault.keychain.find(Items.query(service: "mail"))[0].creationDate
        Thread.sleep(forTimeInterval: 0.01)
        try vault.keychain.upsert(Items.password("mail", "ann", value: "three"))
        #expect(try vault.keychain.password(service: "mail", account: "ann") == "three")
        let item = try vault.keychain.find(Items.query(service: "mail"))[0]
        #expect(item.creationDate == created)
        #expect(item.modificationDate! > created!)
        #expect(try vault.keychain.find(ItemQuery()).count == 1)
    }

    @Test("a query for the empty access group finds the items added without one")
    func emptyGroup() throws {
        try vault.keychain.add(Items.password("s", "a"))
        var grouped = Items.password("s", "b")
        grouped.attributes.accessGroup = "team"
        try vault.keychain.add(grouped)
        var query = Items.query(service: "s")
        query.attributes.accessGroup = ""
        #expect(try vault.keychain.find(query).map(\.attributes.account) == ["a"])
        query.attributes.account = "a"
        #expect(try vault.keychain.find(query).count == 1, "through the exact-id path too")
    }

    @Test("add(contentsOf:) adds all items in one transaction, or none when one collides")
    func batchAdd() throws {
        try vault.keychain.add(contentsOf: (0..<50).map { Items.password("batch", "a\($0)") })
        #expect(try vault.keychain.find(Items.query(service: "batch")).count == 50)
        let collision = [Items.password("batch2", "x"), Items.password("batch", "a7")]
        let error = #expect(throws: KeychainError.self) { try vault.keychain.add(contentsOf: collision) }
        #expect(error?.code == .duplicateItem)
        #expect(error?.message.contains("already exists") == true)
        #expect(error?.message.contains("a7") == true)
        #expect(throws: KeychainError.self) { _ = try vault.keychain.find(Items.query(service: "batch2")) }
        let twice = [Items.password("batch3", "y"), Items.password("batch3", "x"), Items.password("batch3", "x")]
        let inBatch = #expect(throws: KeychainError.self) { try vault.keychain.add(contentsOf: twice) }
        #expect(inBatch?.code == .duplicateItem)
        #expect(inBatch?.message.contains("two items to add share a primary key") == true)
        #expect(throws: KeychainError.self) { _ = try vault.keychain.find(Items.query(service: "batch3")) }
        // Neither refused batch left anything behind: the original items and their index entries only.
        #expect(try vault.keychain.find(ItemQuery(.genericPassword)).count == 50)
        #expect(try vault.keychain.password(service: "batch", account: "a7") == "secret")
    }

    @Test("setPassword and deletePassword, the SSKeychain-style layer")
    func passwords() throws {
        try vault.keychain.setPassword("p1", service: "s", account: "a")
        try vault.keychain.setPassword("p2", service: "s", account: "a")
        #expect(try vault.keychain.password(service: "s", account: "a") == "p2")
        #expect(try vault.keychain.deletePassword(service: "s", account: "a"))
        #expect(try vault.keychain.password(service: "s", account: "a") == nil)
    }

    @Test("param (-50): values over 16 KiB point at the blob tier; syncable ThisDeviceOnly items; 'always' classes")
    func parameterErrors() throws {
        var large = Items.password("big", "x")
        large.value = Data(count: KeychainItem.maximumValueSize + 1)
        let tooLarge = #expect(throws: KeychainError.self) { try vault.keychain.add(large) }
        #expect(tooLarge?.code == .param)
        #expect(tooLarge?.osStatus == -50)
        #expect(tooLarge?.message.contains("blob tier") == true)
        large.value = Data(count: KeychainItem.maximumValueSize)
        try vault.keychain.add(large)

        for accessibility in Accessibility.allCases where accessibility.isThisDeviceOnly {
            let error = #expect(throws: KeychainError.self) {
                try vault.keychain.add(Items.password("s", "a", accessibility: accessibility, scope: .syncable))
            }
            #expect(error?.code == .param)
            #expect(error?.message.contains("cannot be syncable") == true)
        }
        for name in ["always", "alwaysThisDeviceOnly"] {
            let error = #expect(throws: KeychainError.self) { _ = try Accessibility(name: name) }
            #expect(error?.code == .param)
            #expect(error?.message.contains("readable without the passphrase") == true)
        }
        #expect(try Accessibility(name: "afterFirstUnlock") == .afterFirstUnlock)
        #expect(throws: KeychainError.self) { _ = try Accessibility(name: "sometimes") }
    }

    @Test("the async API does what the synchronous one does")
    func asyncForms() async throws {
        let keychain = vault.keychain
        try await keychain.add(Items.password("async", "a", value: "v"))
        try await keychain.setPassword("w", service: "async", account: "b")
        #expect(try await keychain.password(service: "async", account: "a") == "v")
        #expect(try await keychain.find(Items.query(service: "async")).count == 2)
        #expect(try await keychain.update(Items.query(service: "async"), with: ItemUpdate(value: Data("x".utf8))) == 2)
        #expect(try await keychain.delete(Items.query(service: "async")) == 2)
        await #expect(throws: KeychainError.self) { _ = try await keychain.find(Items.query(service: "async")) }
    }
}

/// `password(service:account:)` reads by id, skipping the query engine, on a single-group handle: it
/// must agree with `find` in every case the query engine handles.
@Suite("Keychain: the direct password read")
struct KeychainDirectReadTests {
    let vault: Vault
    let keychain: Keychain

    init() throws {
        vault = try VaultFixture().create()
        keychain = try vault.keychain(accessGroups: ["app"])
    }

    @Test("device-bound first when both scopes hold the key, as find orders them; nil when absent")
    func scopesAndAbsence() throws {
        try keychain.add(Items.password("s", "a", value: "everywhere", scope: .syncable))
        #expect(try keychain.password(service: "s", account: "a") == "everywhere")
        try keychain.addBesideOtherScope(Items.password("s", "a", value: "here"))
        #expect(try keychain.password(service: "s", account: "a") == "here")
        var query = ItemQuery.genericPassword(service: "s", account: "a")
        query.returnsValue = true
        #expect(try keychain.find(query).first?.value == Data("here".utf8))
        #expect(try keychain.password(service: "s", account: "zzz") == nil)
        #expect(try vault.keychain(accessGroups: ["other"]).password(service: "s", account: "a") == nil)
    }

    @Test("locked, tampered and presence-protected items behave as through find")
    func protections() throws {
        try keychain.add(Items.password("wu", "a", value: "1"))
        try keychain.add(Items.password("afu", "a", value: "2", accessibility: .afterFirstUnlock))
        var protected = Items.password("bank", "a", value: "3")
        protected.requiresUserPresence = true
        try keychain.add(protected)

        let presence = #expect(throws: KeychainError.self) { _ = try keychain.password(service: "bank", account: "a") }
        #expect(presence?.code == .interactionNotAllowed, "no handler: the query path's answer")

        vault.lock()
        let locked = #expect(throws: KeychainError.self) { _ = try keychain.password(service: "wu", account: "a") }
        #expect(locked?.code == .interactionNotAllowed)
        #expect(try keychain.password(service: "afu", account: "a") == "2")
        try vault.unlock(passphrase: "correct horse battery staple")

        let session = try KeychainSession(keychain)
        var attributes = ItemAttributes()
        attributes.service = "wu"
        attributes.account = "a"
        let id = try session.index(.deviceBound).id(of: .genericPassword, attributes: attributes, group: "app")
        try vault.environment.write { (txn) throws in
            var stored = try #require(try txn.get(vault.schema.items, key: id))
            stored[stored.count - 1] ^= 1
            try txn.put(vault.schema.items, key: id, value: stored)
        }
        let tampered = #expect(throws: KeychainError.self) { _ = try keychain.password(service: "wu", account: "a") }
        #expect(tampered?.code == .decode)
        #expect(try keychain.password(service: "afu", account: "a") == "2")
    }
}
