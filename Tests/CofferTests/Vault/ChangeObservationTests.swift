import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Collects what an `AsyncSequence` of changes yields, from its own task, for a test to wait on.
final class ChangeCollector<Element: Sendable>: Sendable {
    private let received = Locked<[Element]>([])
    private let ended = Locked(false)
    private let task: Locked<Task<Void, Never>?> = Locked(nil)
    private let executor = DedicatedExecutor(label: "change-collector")

    /// Starts consuming `changes` on an executor of its own (see ``DedicatedExecutor``).
    init<Changes: AsyncSequence & Sendable>(_ changes: Changes) where Changes.Element == Element {
        let received = received
        let ended = ended
        task.withLock {
            $0 = Task(executorPreference: executor) {
                do {
                    for try await change in changes { received.withLock { $0.append(change) } }
                } catch {}
                ended.withLock { $0 = true }
            }
        }
    }

    /// Waits up to `seconds` for `count` elements; returns what arrived.
    func wait(for count: Int, seconds: Double = 1) async -> [Element] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let now = received.withLock { $0 }
            if now.count >= count { return now }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return received.withLock { $0 }
    }

    /// Waits up to `seconds` for the sequence to end; returns whether it did.
    func waitForEnd(seconds: Double = 5) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if ended.withLock({ $0 }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return ended.withLock { $0 }
    }

    func stop() { task.withLock { $0?.cancel() } }
}

/// Runs synchronous vault calls from an async test (where the async overloads would be picked).
func synchronously(_ body: () throws -> Void) rethrows { try body() }

@Suite("Change observation: vault.changes() and keychain.changes(matching:)")
struct ChangeObservationTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    @Test("changes through this handle and another arrive within a second, named, in order, with their origin")
    func thisAndAnotherHandle() async throws {
        let collector = ChangeCollector(vault.changes())
        defer { collector.stop() }
        try synchronously {
            try vault.blobs.write("photos/cat.jpg", data: [1, 2, 3], options: BlobWriteOptions(scope: .deviceBound))
            let other = try fixture.open()
            try other.unlock(passphrase: "correct horse battery staple")
            try other.blobs.rename("photos/cat.jpg", to: "photos/kitten.jpg")
            try other.keychain.setPassword("s3cret", service: "mail", account: "ann")
            other.close()
        }
        let changes = await collector.wait(for: 4)
        try #require(changes.count == 4, "\(changes)")
        #expect(changes.map(\.operation) == [.put, .delete, .put, .put])
        #expect(changes.map(\.record) == [.blob, .blob, .blob, .item])
        #expect(changes.map(\.name) == ["photos/cat.jpg", "photos/cat.jpg", "photos/kitten.jpg", "mail"])
        #expect(changes.map(\.origin) == [.thisHandle, .anotherHandle, .anotherHandle, .anotherHandle])
        #expect(changes.map(\.scope) == [.deviceBound, .deviceBound, .deviceBound, .deviceBound])
        #expect(changes.map(\.position.sequence) == changes.map(\.position.sequence).sorted())
    }

    @Test("a consumer resumes after a restart from the position it saved, missing nothing and repeating nothing")
    func resumeAfterRestart() async throws {
        var saved = ChangePosition.beginning
        try synchronously {
            try vault.blobs.write("one", data: [1])
            saved = try vault.currentChangePosition()
            vault.close()
            let writer = try fixture.open()
            try writer.unlock(passphrase: "correct horse battery staple")
            try writer.blobs.write("two", data: [2])
            try writer.blobs.delete("one")
            writer.close()
        }

        let restarted = try fixture.open()
        try await restarted.unlock(passphrase: "correct horse battery staple")
        defer { restarted.close() }
        let collector = ChangeCollector(restarted.changes(after: saved))
        defer { collector.stop() }
        let changes = await collector.wait(for: 2)
        #expect(changes.map(\.name) == ["two", "one"])
        #expect(changes.map(\.operation) == [.put, .delete])
        let all = ChangeCollector(restarted.changes(after: .beginning))
        defer { all.stop() }
        #expect(await all.wait(for: 3).map(\.name) == ["one", "two", "one"])
    }

    @Test("an import's changes arrive marked as such, deletions named")
    func importedChanges() async throws {
        let group = try SyncGroupFixture()
        let first = try group.createFirst()
        let url = group.bundle("join")
        try synchronously { try first.export(to: url) }
        let (second, _) = try group.join("second", from: url)
        let collector = ChangeCollector(second.changes())
        defer { collector.stop() }
        try synchronously {
            try first.blobs.write("shared", data: Array(repeating: 7, count: 1000))
            try first.keychain.setPassword(
                "pw",
                service: "web",
                account: "bo",
                accessibility: .afterFirstUnlock,
                scope: .syncable
            )
            try first.export(to: group.bundle("b1"))
            _ = try second.import(from: group.bundle("b1"))
            try first.blobs.delete("shared")
            try first.export(to: group.bundle("b2"))
            _ = try second.import(from: group.bundle("b2"))
        }
        let changes = await collector.wait(for: 3)
        try #require(changes.count == 3, "\(changes)")
        #expect(changes.allSatisfy { $0.origin == .bundleImport })
        #expect(Set(changes.prefix(2).compactMap(\.name)) == ["shared", "web"])
        #expect(changes[2].name == "shared" && changes[2].operation == .delete)
    }

    @Test("keychain.changes(matching:) reports only the items the query matches, with their attributes")
    func keychainQuery() async throws {
        let matching = ChangeCollector(
            vault.keychain.changes(matching: .genericPassword(service: "mail", account: "ann"))
        )
        defer { matching.stop() }
        try await Task.sleep(for: .milliseconds(150))
        try synchronously {
            try vault.keychain.setPassword("a", service: "web", account: "ann")
            try vault.keychain.setPassword("b", service: "mail", account: "ann")
            try vault.keychain.setPassword("c", service: "mail", account: "bo")
            _ = try vault.keychain.deletePassword(service: "mail", account: "ann")
        }
        let changes = await matching.wait(for: 2)
        try #require(changes.count == 2, "\(changes)")
        #expect(changes.map(\.change.operation) == [.put, .delete])
        #expect(changes.allSatisfy { $0.attributes.service == "mail" && $0.attributes.account == "ann" })
        #expect(changes.allSatisfy { $0.itemClass == .genericPassword })
        // Values never reach the journal.
        vault.close()
        #expect(!(try fixture.vaultFileBytes().contains(subsequence: Array("mail".utf8) + Array("ann".utf8))))
    }

    @Test("the sequence ends when the vault closes")
    func endsOnClose() async throws {
        let changes = vault.changes(pollInterval: .milliseconds(20))
        let ended = Task { () -> Int in
            var count = 0
            for try await _ in changes { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(100))
        vault.close()
        let count = try await ended.value
        #expect(count == 0)
    }
}
