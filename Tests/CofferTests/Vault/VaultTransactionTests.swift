import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Writes across the keychain and the blob tier that go together (issue 43, finding 4): all of them
/// or none, whatever fails and wherever; the kill test is `TransactionKillTests` (CofferCLITests).
@Suite("Vault transactions: keychain and blob writes together, or not at all")
struct VaultTransactionTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    struct PhotoInfo: Codable, Equatable {
        var caption: String
        var taken: Date
    }

    let photo = Content.random(3 << 20, seed: 43)

    func key(_ name: String) -> KeychainKey { KeychainKey(service: "photos", account: name) }

    /// Chunks and pending entries left: after a transaction that wrote nothing, none may stay.
    func leftovers() throws -> (chunks: Int, pending: Int) {
        try vault.environment.read { (txn) throws in
            (try vault.schema.records.count(in: txn), try txn.count(vault.schema.pending))
        }
    }

    @Test("a blob and its items appear together")
    func commitsTogether() throws {
        let before = try vault.currentChangePosition()
        let info = PhotoInfo(caption: "cat", taken: Date(timeIntervalSince1970: 1_700_000_000))
        let returned = try vault.write { transaction in
            try transaction.blobs.write("photos/cat.jpg", data: photo)
            try transaction.keychain.set(info, for: key("cat.jpg"), scope: .syncable)
            try transaction.keychain.setPassword("hunter2", service: "mail", account: "ann")
            return 7
        }
        #expect(returned == 7)
        #expect(Array(try vault.blobs.data("photos/cat.jpg")) == photo)
        #expect(try vault.keychain.value(key("cat.jpg"), as: PhotoInfo.self) == info)
        #expect(try vault.keychain.password(service: "mail", account: "ann") == "hunter2")
        #expect(try leftovers().pending == 0)
        // The three changes were journaled, after the position read before.
        let after = try vault.currentChangePosition()
        #expect(after.sequence == before.sequence + 3, "\(before) → \(after)")
    }

    @Test("a call that fails when the transaction commits undoes everything staged, the blob's content included")
    func failingStepUndoesAll() throws {
        try vault.keychain.setPassword("existing", service: "photos", account: "dog.jpg")
        var duplicate = KeychainItem(.genericPassword, value: Data("x".utf8))
        duplicate.attributes.service = "photos"
        duplicate.attributes.account = "dog.jpg"
        let error = #expect(throws: CofferError.self) {
            try vault.write { transaction in
                try transaction.blobs.write("photos/dog.jpg", data: photo)
                try transaction.keychain.add(duplicate)
            }
        }
        #expect(error?.code == .duplicateItem)
        #expect(throws: CofferError.self) { try vault.blobs.data("photos/dog.jpg") }
        #expect(try vault.keychain.password(service: "photos", account: "dog.jpg") == "existing")
        let left = try leftovers()
        #expect(left.chunks == 0 && left.pending == 0, "\(left)")
    }

    @Test("a closure that throws writes nothing and releases the content it streamed")
    func throwingClosureWritesNothing() throws {
        let error = #expect(throws: CofferError.self) {
            try vault.write { transaction in
                try transaction.blobs.write("photos/a.jpg", data: photo)
                try transaction.keychain.setPassword("meta", service: "photos", account: "a.jpg")
                throw CofferError(.userCanceled, "the user changed their mind")
            }
        }
        #expect(error?.code == .userCanceled)
        #expect(try vault.blobs.list().isEmpty)
        #expect(try vault.keychain.password(service: "photos", account: "a.jpg") == nil)
        let left = try leftovers()
        #expect(left.chunks == 0 && left.pending == 0, "\(left)")
    }

    @Test("deletions and replacements go in the order called; a deletion of a missing blob undoes the rest")
    func deletionsAndOrder() throws {
        try vault.blobs.write("old", data: Data("old".utf8))
        try vault.keychain.setPassword("old", service: "photos", account: "old")
        try vault.write { transaction in
            try transaction.blobs.write("new", data: Data("first".utf8))
            try transaction.blobs.write("new", data: Data("second".utf8))  // the later write wins
            try transaction.blobs.delete("old")
            try transaction.keychain.delete(.genericPassword(service: "photos", account: "old"))
        }
        #expect(Array(try vault.blobs.data("new")) == Array("second".utf8))
        #expect(try vault.blobs.list().map(\.name) == ["new"])
        #expect(try vault.keychain.password(service: "photos", account: "old") == nil)

        let error = #expect(throws: CofferError.self) {
            try vault.write { transaction in
                try transaction.blobs.write("newer", data: Data("x".utf8))
                try transaction.blobs.delete("missing")
            }
        }
        #expect(error?.code == .itemNotFound)
        #expect(try vault.blobs.list().map(\.name) == ["new"])
    }

    @Test("updates keep an item's scope, as outside a transaction")
    func updatesKeepScope() throws {
        try vault.keychain.setPassword("v1", service: "mail", account: "ann", scope: .syncable)
        try vault.write { transaction in try transaction.keychain.setPassword("v2", service: "mail", account: "ann") }
        let found = try vault.keychain.find(.genericPassword(service: "mail", account: "ann"))
        #expect(found.count == 1 && found.first?.scope == .syncable)
    }

    @Test("a transaction of many blobs holds no thread per blob while it waits for its commit")
    func manyBlobsHoldNoThreads() throws {
        func threads() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count }
        let before = try threads()
        var during = 0
        try vault.write { transaction in
            for index in 0..<100 {
                try transaction.blobs.write("many/\(index)", data: Content.random(20_000, seed: UInt64(index)))
            }
            during = try threads()
        }
        // Three or more threads a blob would be 300 more; other suites running at once add a few.
        #expect(during < before + 150, "\(before) threads before, \(during) with 100 blobs staged")
        #expect(try vault.blobs.list(prefix: "many/").count == 100)
        #expect(Array(try vault.blobs.data("many/42")) == Content.random(20_000, seed: 42))
    }

    @Test("a transaction cannot be used after its closure")
    func endsWithItsClosure() throws {
        var kept: VaultTransaction?
        try vault.write { transaction in kept = transaction }
        let error = #expect(throws: CofferError.self) {
            try kept?.keychain.setPassword("x", service: "s", account: "a")
        }
        #expect(error?.code == .param)
    }

    @Test("the async form commits off the cooperative pool")
    func asyncForm() async throws {
        let photo = photo
        try await vault.write { transaction in
            try transaction.blobs.write("photos/async.jpg", data: photo)
            try transaction.keychain.setPassword("meta", service: "photos", account: "async.jpg")
        }
        #expect(try await vault.blobs.stat("photos/async.jpg").size == Int64(photo.count))
    }
}
