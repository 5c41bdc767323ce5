import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Value observation: keychain.observe(_:) and blobs.observe(_:)")
struct ValueObservationTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    /// The accounts of each result, for comparing.
    static func accounts(_ results: [[KeychainItem]]) -> [[String]] {
        results.map { $0.compactMap(\.attributes.account) }
    }

    @Test("the current items first, then the items after each write from another task or handle")
    func keychainUpdates() async throws {
        try await vault.keychain.setPassword("one", service: "mail", account: "ann")
        let observed = ChangeCollector(vault.keychain.observe(Items.query(service: "mail")))
        defer { observed.stop() }
        #expect(Self.accounts(await observed.wait(for: 1)) == [["ann"]])

        let vault = vault
        try await Task.detached {
            try await vault.keychain.setPassword("two", service: "mail", account: "bo")
        }.value
        #expect(Self.accounts(await observed.wait(for: 2)) == [["ann"], ["ann", "bo"]])

        try synchronously {
            let other = try fixture.open()
            try other.unlock(passphrase: "correct horse battery staple")
            try other.keychain.delete(Items.query(service: "mail", account: "ann"))
            other.close()
        }
        #expect(Self.accounts(await observed.wait(for: 3)) == [["ann"], ["ann", "bo"], ["bo"]])
    }

    @Test("changes that leave the result as it was report nothing: the next report is the next real change")
    func keychainNoDuplicates() async throws {
        let observed = ChangeCollector(vault.keychain.observe(Items.query(service: "mail")))
        defer { observed.stop() }
        #expect(Self.accounts(await observed.wait(for: 1)) == [[]])
        try await vault.keychain.setPassword("x", service: "web", account: "ann")  // same class, other service
        try await vault.blobs.write("photo", data: Data([1, 2, 3]))
        try await vault.keychain.setPassword("y", service: "web", account: "ann")
        try await vault.keychain.setPassword("z", service: "mail", account: "cy")
        let results = await observed.wait(for: 3, seconds: 2)
        #expect(Self.accounts(results) == [[], ["cy"]])
    }

    @Test("a value that is edited is reported with its new value when values are asked for")
    func keychainValues() async throws {
        var query = Items.query(service: "mail", account: "ann")
        query.returnsValue = true
        try await vault.keychain.setPassword("v1", service: "mail", account: "ann")
        let observed = ChangeCollector(vault.keychain.observe(query))
        defer { observed.stop() }
        #expect(await observed.wait(for: 1).map { $0.map(\.value) } == [[Data("v1".utf8)]])
        try await vault.keychain.setPassword("v2", service: "mail", account: "ann")
        #expect(await observed.wait(for: 2).map { $0.map(\.value) } == [[Data("v1".utf8)], [Data("v2".utf8)]])
    }

    @Test("a blob's description: none, written, other blobs ignored, renamed away")
    func blobUpdates() async throws {
        let observed = ChangeCollector(vault.blobs.observe("photos/cat.jpg"))
        defer { observed.stop() }
        #expect(await observed.wait(for: 1) == [nil])
        let vault = vault
        try await Task.detached {
            try await vault.blobs.write("photos/cat.jpg", data: Data([1, 2, 3]))
            try await vault.blobs.write("photos/dog.jpg", data: Data([4, 5]))
        }.value
        // Changes that come faster than the observation reads are coalesced: wait for each value.
        #expect(await observed.wait(for: 2).count == 2)
        try synchronously { try vault.blobs.rename("photos/cat.jpg", to: "photos/kitten.jpg") }
        let results = await observed.wait(for: 3, seconds: 5)
        try #require(results.count == 3, "\(results)")
        #expect(results[0] == nil)
        #expect(results[1]?.size == 3)
        #expect(results[2] == nil)
        try await vault.blobs.write("photos/dog.jpg", data: Data([6]))
        try synchronously { try vault.blobs.rename("photos/kitten.jpg", to: "photos/cat.jpg") }
        let after = await observed.wait(for: 4, seconds: 5)
        #expect(after.count == 4 && after[3]?.size == 3, "\(after)")
    }

    @Test("observations end when the vault closes")
    func endOnClose() async throws {
        let items = ChangeCollector(vault.keychain.observe(Items.query()))
        let blob = ChangeCollector(vault.blobs.observe("x"))
        defer {
            items.stop()
            blob.stop()
        }
        #expect(await items.wait(for: 1).count == 1)
        #expect(await blob.wait(for: 1).count == 1)
        vault.close()
        #expect(await items.waitForEnd())
        #expect(await blob.waitForEnd())
    }

    @Test("while locked, an observation of whenUnlocked items waits, then reports the value after the unlock")
    func waitsWhileLocked() async throws {
        try await vault.keychain.setPassword("v1", service: "mail", account: "ann")
        vault.lock()
        let observed = ChangeCollector(vault.keychain.observe(Items.query(service: "mail")))
        defer { observed.stop() }
        try synchronously {
            let other = try fixture.open()
            try other.unlock(passphrase: "correct horse battery staple")
            try other.keychain.setPassword("v2", service: "mail", account: "bo")
            other.close()
        }
        // Nothing is reported while locked; the write above is in the first value after the unlock.
        let locked = await observed.wait(for: 1, seconds: 0.5)
        #expect(locked.isEmpty, "\(locked)")
        try await vault.unlock(passphrase: "correct horse battery staple")
        #expect(Self.accounts(await observed.wait(for: 1)) == [["ann", "bo"]])
        vault.lock()
        try await vault.unlock(passphrase: "correct horse battery staple")
        try await vault.keychain.setPassword("v3", service: "mail", account: "cy")
        #expect(Self.accounts(await observed.wait(for: 2)) == [["ann", "bo"], ["ann", "bo", "cy"]])
    }
}
