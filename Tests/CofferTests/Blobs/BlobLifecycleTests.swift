import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Blob lifecycle: dedup, overwrite, rename, delete, list, scopes, protection")
struct BlobLifecycleTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    @Test("storing the same content twice adds well under 1% of its size")
    func duplicateContent() throws {
        let content = Content.mixed(8 << 20, seed: 1) + Content.random(8 << 20, seed: 2)
        try vault.blobs.write("first", data: content)
        let before = try vault.blobs.statistics()
        try vault.blobs.write("second", data: content)
        let after = try vault.blobs.statistics()
        #expect(after.storedBytes - before.storedBytes < Int64(content.count) / 100)
        #expect(after.logicalBytes == 2 * Int64(content.count))
        #expect(after.deduplicationRatio > 1.99)
        #expect(after.compressionRatio > 1)
    }

    @Test("an edit in the middle re-uses the chunks before and after it")
    func editReusesChunks() throws {
        let original = Content.random(6 << 20, seed: 3)
        var edited = original
        edited.insert(contentsOf: Array("an insertion in the middle".utf8), at: 3 << 20)
        try vault.blobs.write("file", data: original)
        let before = try vault.blobs.statistics()
        try vault.blobs.write("file v2", data: edited)
        let after = try vault.blobs.statistics()
        let newChunks = after.chunkCount - before.chunkCount
        #expect(newChunks <= 4, "\(newChunks) new chunks of \(before.chunkCount)")
        #expect(after.storedBytes - before.storedBytes < 1 << 20)
        #expect(try [UInt8](vault.blobs.data("file v2")) == edited)
    }

    @Test("overwriting replaces content, keeps the creation date, and frees chunks nothing else uses")
    func overwrite() throws {
        let first = try vault.blobs.write("doc", data: Content.random(1 << 20, seed: 4))
        let second = try vault.blobs.write("doc", data: Content.random(2 << 20, seed: 5))
        #expect(second.created == first.created)
        #expect(second.size == 2 << 20)
        #expect(try [UInt8](vault.blobs.data("doc")) == Content.random(2 << 20, seed: 5))
        let stats = try vault.blobs.statistics()
        #expect(stats.blobCount == 1)
        #expect(stats.uniqueBytes == 2 << 20, "the first content's chunks were freed")
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test("deleting frees every chunk; shared chunks stay until their last blob goes")
    func deleteFrees() throws {
        let shared = Content.random(3 << 20, seed: 6)
        try vault.blobs.write("a", data: shared)
        try vault.blobs.write("b", data: shared + Content.random(1 << 20, seed: 7))
        try vault.blobs.delete("a")
        #expect(try [UInt8](vault.blobs.data("b")).prefix(shared.count).elementsEqual(shared))
        try vault.blobs.delete("b")
        let stats = try vault.blobs.statistics()
        #expect(stats.chunkCount == 0 && stats.storedBytes == 0)
        try vault.environment.read { (txn) throws in
            #expect(try txn.count(vault.schema.chunkRefs) == 0)
            #expect(try txn.count(vault.schema.pending) == 0)
        }
        let error = #expect(throws: CofferError.self) { try vault.blobs.delete("a") }
        #expect(error?.code == .itemNotFound)
        #expect(error?.message.contains("'a'") == true)
    }

    @Test("large blobs with indirect chunk lists are deleted and verified completely")
    func indirectLists() throws {
        let small = try VaultFixture.smallChunks()
        let vault = try small.create()
        let content = Content.mixed(10 << 20, seed: 8)
        let info = try vault.blobs.write("big", data: content)
        #expect(info.chunkCount > ChunkList.entriesPerListChunk)
        let report = try vault.blobs.verify(readingData: true)
        #expect(report.isHealthy, "\(report.problems)")
        #expect(report.bytesRead == Int64(content.count))
        try vault.blobs.delete("big")
        #expect(try vault.blobs.statistics().chunkCount == 0)
    }

    @Test("rename moves a blob to a new name without touching its content")
    func rename() throws {
        let content = Content.mixed(300_000, seed: 9)
        try vault.blobs.write("old", data: content)
        try vault.blobs.write("taken", data: [1, 2, 3])
        try vault.blobs.rename("old", to: "new")
        #expect(try !vault.blobs.contains("old"))
        #expect(try [UInt8](vault.blobs.data("new")) == content)
        let duplicate = #expect(throws: CofferError.self) { try vault.blobs.rename("new", to: "taken") }
        #expect(duplicate?.code == .duplicateItem)
        let missing = #expect(throws: CofferError.self) { try vault.blobs.rename("gone", to: "x") }
        #expect(missing?.code == .itemNotFound)
        #expect(try vault.blobs.verify().isHealthy)
    }

    @Test("list is sorted by name and reports size, scope and protection")
    func list() throws {
        try vault.blobs.write("zeta", data: [1])
        try vault.blobs.write("alpha", data: [UInt8](repeating: 0, count: 70_000), options: .init(scope: .deviceBound))
        try vault.blobs.write("mid", data: [], options: .init(protection: .whenUnlocked))
        let listed = try vault.blobs.list()
        #expect(listed.map(\.name) == ["alpha", "mid", "zeta"])
        #expect(listed.map(\.size) == [70_000, 0, 1])
        #expect(listed.map(\.scope) == [.deviceBound, .syncable, .syncable])
        #expect(listed.map(\.protection) == [.afterFirstUnlock, .whenUnlocked, .afterFirstUnlock])
    }

    @Test("list(prefix:) gives the blobs whose names start with the prefix, sorted by name")
    func listPrefix() throws {
        for name in ["photos/b.jpg", "photos/a.jpg", "photosynthesis.txt", "notes/photos.txt", "photo"] {
            try vault.blobs.write(name, data: Data(name.utf8))
        }
        let inFolder = try vault.blobs.list(prefix: "photos/")
        #expect(inFolder.map(\.name) == ["photos/a.jpg", "photos/b.jpg"])
        #expect(inFolder.map(\.size) == [12, 12])
        #expect(
            try vault.blobs.list(prefix: "photos").map(\.name) == [
                "photos/a.jpg", "photos/b.jpg", "photosynthesis.txt",
            ]
        )
        #expect(try vault.blobs.list(prefix: "").map(\.name) == vault.blobs.list().map(\.name))
        #expect(try vault.blobs.list(prefix: "Photos/").isEmpty, "the prefix is matched exactly, case included")
        #expect(try vault.blobs.list(prefix: "videos/").isEmpty)
    }

    @Test("one name is one blob: writing it in the other scope replaces it")
    func scopeReplacement() throws {
        try vault.blobs.write("n", data: [1, 2], options: .init(scope: .deviceBound))
        try vault.blobs.write("n", data: [3, 4, 5], options: .init(scope: .syncable))
        let listed = try vault.blobs.list()
        #expect(listed.count == 1)
        #expect(listed.first?.scope == .syncable)
        #expect(try [UInt8](vault.blobs.data("n")) == [3, 4, 5])
    }

    @Test("syncable blobs are logged in the change log; device-bound ones never are")
    func changeLog() throws {
        try vault.blobs.write("device", data: [1], options: .init(scope: .deviceBound))
        try vault.blobs.delete("device")
        try vault.blobs.write("sync", data: [1])
        try vault.blobs.rename("sync", to: "sync2")
        try vault.blobs.delete("sync2")
        let kinds = try vault.environment.read { txn in
            try ChangeLog.changes(after: 0, in: txn, schema: vault.schema).map(\.1)
        }
        #expect(kinds == [.blobPut, .blobDelete, .blobPut, .blobDelete])
    }

    @Test("whenUnlocked blobs cannot be read, written or listed while locked; afterFirstUnlock ones can")
    func protection() throws {
        try vault.blobs.write("background", data: [1, 2, 3])
        try vault.blobs.write("private", data: [4, 5, 6], options: .init(protection: .whenUnlocked))
        vault.lock()
        #expect(try [UInt8](vault.blobs.data("background")) == [1, 2, 3])
        try vault.blobs.write("background 2", data: [7])
        for attempt in [
            { _ = try vault.blobs.data("private") },
            { _ = try vault.blobs.list() },
            { try vault.blobs.write("p2", data: [1], options: .init(protection: .whenUnlocked)) },
        ] as [() throws -> Void] {
            let error = #expect(throws: CofferError.self) { try attempt() }
            #expect(error?.code == .interactionNotAllowed)
        }
        try vault.unlock(passphrase: "correct horse battery staple")
        #expect(try [UInt8](vault.blobs.data("private")) == [4, 5, 6])
    }

    @Test("bad names and options are refused before anything is stored")
    func badInput() throws {
        for name in ["", "line\nbreak", String(repeating: "x", count: 1025)] {
            let error = #expect(throws: CofferError.self) { try vault.blobs.write(name, data: [1]) }
            #expect(error?.code == .param)
        }
        let level = #expect(throws: CofferError.self) {
            try vault.blobs.write("x", data: [1], options: .init(compressionLevel: 40))
        }
        #expect(level?.code == .param)
        #expect(try vault.blobs.list().isEmpty)
        #expect(try vault.blobs.statistics().chunkCount == 0)
    }

    @Test("writers in parallel threads each get their blob, and the counts stay exact")
    func concurrentWriters() async throws {
        let vault = self.vault
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask {
                    let content = Content.mixed(2 << 20, seed: UInt64(index % 2))
                    _ = try await vault.blobs.write(
                        "w\(index)",
                        from: AsyncStream { continuation in
                            continuation.yield(Data(content))
                            continuation.finish()
                        }
                    )
                }
            }
            try await group.waitForAll()
        }
        #expect(try await vault.blobs.list().count == 4)
        let report = try await vault.blobs.verify(readingData: true)
        #expect(report.isHealthy, "\(report.problems)")
    }
}
