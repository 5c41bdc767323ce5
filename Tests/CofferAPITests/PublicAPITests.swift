import Coffer
import Foundation
import Testing

/// Coffer as an app uses it: through `import Coffer` alone, never `@testable`, every tier from creating
/// a vault to syncing it. If something an app needs is not public, this file does not compile.
@Suite("Public API: every tier through import Coffer alone, as an app would use it")
struct PublicAPITests {
    /// A directory of the app's own, removed at the end.
    final class Workspace {
        let url: URL

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-api-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(at: url) }

        func path(_ name: String) -> URL { url.appendingPathComponent(name) }
    }

    let workspace: Workspace
    let configuration: Vault.Configuration
    let passphrase: Passphrase = "an app's passphrase"

    init() throws {
        workspace = try Workspace()
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        self.configuration = configuration
    }

    @Test("A vault is created, closed, opened locked, unlocked; a wrong passphrase is authFailed and changes nothing")
    func lifecycle() throws {
        let url = workspace.path("vault")
        let vault = try Vault.create(at: url, passphrase: passphrase, configuration: configuration)
        let recovery = try vault.recoveryKey()
        let id = try vault.info().vaultID
        vault.close()

        let reopened = try Vault.open(at: url, configuration: configuration)
        defer { reopened.close() }
        let wrong = #expect(throws: CofferError.self) { try reopened.unlock(passphrase: "not it") }
        #expect(wrong?.code == .authFailed)
        #expect(wrong?.osStatus == -25293)
        try reopened.unlock(recoveryKey: recovery)
        #expect(try reopened.info().vaultID == id)
    }

    @Test("Keychain: add, find, update, delete, the password convenience, async forms and typed errors")
    func keychain() async throws {
        let vault = try await Vault.create(
            at: workspace.path("vault"),
            passphrase: passphrase,
            configuration: configuration
        )
        defer { vault.close() }
        let keychain = vault.keychain

        try await keychain.setPassword("hunter2", service: "mail", account: "ann")
        #expect(try await keychain.password(service: "mail", account: "ann") == "hunter2")
        #expect(try await keychain.password(service: "mail", account: "nobody") == nil)

        var item = KeychainItem(.internetPassword, value: Data("s3cret".utf8), accessibility: .afterFirstUnlock)
        item.attributes.server = "git.example.com"
        item.attributes.account = "ann"
        try await keychain.add(item)
        let duplicate = #expect(throws: KeychainError.self) { try keychain.add(item) }
        #expect(duplicate?.code == .duplicateItem)
        #expect(duplicate?.osStatus == -25299)

        var query = ItemQuery(.internetPassword)
        query.attributes.server = "git.example.com"
        query.returnsValue = true
        let found = try await keychain.find(query)
        #expect(found.count == 1)
        #expect(found.first?.value == Data("s3cret".utf8))
        #expect(found.first?.attributes.account == "ann")

        let changed = try await keychain.update(query, with: ItemUpdate(accessibility: .whenUnlockedThisDeviceOnly))
        #expect(changed == 1)
        vault.lock()
        let locked = #expect(throws: KeychainError.self) { _ = try keychain.find(query) }
        #expect(locked?.code == .interactionNotAllowed)
        try await vault.unlock(passphrase: passphrase)

        try await keychain.delete(query)
        let gone = #expect(throws: KeychainError.self) { _ = try keychain.find(query) }
        #expect(gone?.code == .itemNotFound)
        #expect(gone?.osStatus == -25300)

        let tooLarge = KeychainItem(.genericPassword, value: Data(count: KeychainItem.maximumValueSize + 1))
        let refused = #expect(throws: KeychainError.self) { try keychain.add(tooLarge) }
        #expect(refused?.code == .param)
    }

    @Test("Blobs: write, read whole, by range and as an async stream, list, stat, rename, delete, verify")
    func blobs() async throws {
        let vault = try await Vault.create(
            at: workspace.path("vault"),
            passphrase: passphrase,
            configuration: configuration
        )
        defer { vault.close() }
        let blobs = vault.blobs
        let content = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let info = try await blobs.write(
            "photos/cat.jpg",
            data: content,
            options: BlobWriteOptions(protection: .whenUnlocked)
        )
        #expect(info.size == Int64(content.count))
        #expect(try await blobs.data("photos/cat.jpg") == content)
        #expect(try await blobs.data("photos/cat.jpg", range: 1000..<5000) == content[1000..<5000])

        var streamed = Data()
        for try await piece in blobs.bytes("photos/cat.jpg") { streamed.append(piece) }
        #expect(streamed == content)

        let file = workspace.path("out.jpg")
        try await blobs.read("photos/cat.jpg", to: file)
        #expect(try Data(contentsOf: file) == content)

        try await blobs.rename("photos/cat.jpg", to: "photos/kitten.jpg")
        #expect(try await blobs.list().map(\.name) == ["photos/kitten.jpg"])
        #expect(try await blobs.stat("photos/kitten.jpg").sha256 == info.sha256)
        #expect(try await blobs.verify(readingData: true).isHealthy)

        vault.lock()
        let locked = #expect(throws: CofferError.self) { _ = try blobs.data("photos/kitten.jpg") }
        #expect(locked?.code == .interactionNotAllowed)
        try await vault.unlock(passphrase: passphrase)

        try await blobs.delete("photos/kitten.jpg")
        let missing = #expect(throws: CofferError.self) { _ = try blobs.stat("photos/kitten.jpg") }
        #expect(missing?.code == .itemNotFound)
        #expect(try await blobs.collectGarbage().freedChunks >= 0)
    }

    @Test("Configuration.compressionLevel sets the level of writes that name none")
    func compressionLevel() throws {
        // Words drawn at random from a small vocabulary: compressible, but not one sentence repeated,
        // whose few distinct chunks (boundaries follow each vault's random chunk key) could come out
        // the same size at both levels (it failed so once in six full runs).
        let words = "the quick brown fox jumps over lazy dog again and then some more words to pick from".split(
            separator: " "
        )
        var state: UInt64 = 5
        let picked = (0..<300_000).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return words[Int(state >> 33) % words.count]
        }
        let text = Data(picked.joined(separator: " ").utf8)
        func storedBytes(level: Int) throws -> Int64 {
            var configuration = configuration
            configuration.compressionLevel = level
            let vault = try Vault.create(
                at: workspace.path("vault-\(level)"),
                passphrase: passphrase,
                configuration: configuration
            )
            defer { vault.close() }
            try vault.blobs.write("text", data: text)
            return try vault.blobs.statistics().storedBytes
        }
        #expect(try storedBytes(level: 19) < storedBytes(level: 1))
    }

    @Test("Snapshots: back up a tree, change it, back up again, diff, restore, forget")
    func snapshots() throws {
        let vault = try Vault.create(at: workspace.path("vault"), passphrase: passphrase, configuration: configuration)
        defer { vault.close() }
        let tree = workspace.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("docs"),
            withIntermediateDirectories: true
        )
        try Data("first".utf8).write(to: tree.appendingPathComponent("docs/a.txt"))
        try Data("second".utf8).write(to: tree.appendingPathComponent("b.txt"))

        let first = try vault.snapshots.backup(directory: tree, name: "tree")
        #expect(first.problems.isEmpty)
        try Data("changed".utf8).write(to: tree.appendingPathComponent("b.txt"))
        try Data("new".utf8).write(to: tree.appendingPathComponent("c.txt"))
        let second = try vault.snapshots.backup(directory: tree, name: "tree")
        #expect(second.snapshot.statistics.unchangedFiles == 1)

        let diff = try vault.snapshots.diff(first.snapshot.id, second.snapshot.id)
        #expect(diff.added == ["c.txt"])
        #expect(diff.changed == ["b.txt"])

        let restored = workspace.path("restored")
        _ = try vault.snapshots.restore(first.snapshot.id, to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("b.txt")) == Data("second".utf8))
        #expect(
            try vault.snapshots.entries(of: first.snapshot.id).contains { $0.path == "docs/a.txt" && $0.kind == .file }
        )

        try vault.snapshots.forget(first.snapshot.id)
        #expect(try vault.snapshots.list().map(\.id) == [second.snapshot.id])
    }

    @Test("Sync: export, join from the bundle, incremental export and import; device-bound records stay home")
    func sync() async throws {
        let home = try await Vault.create(
            at: workspace.path("home"),
            passphrase: passphrase,
            configuration: configuration
        )
        defer { home.close() }
        try await home.keychain.setPassword("shared", service: "mail", account: "ann", scope: .syncable)
        try await home.keychain.setPassword("local", service: "wifi", account: "home")
        try await home.blobs.write("notes.txt", data: Data("hello".utf8))

        let bundle = workspace.path("first.bundle")
        let exported = try await home.export(to: bundle, peer: "laptop")
        #expect(exported.records.items == 1)
        let (laptop, imported) = try await Vault.join(
            bundle: bundle,
            at: workspace.path("laptop"),
            passphrase: passphrase,
            configuration: configuration
        )
        defer { laptop.close() }
        #expect(imported.applied.items == 1)
        #expect(try await laptop.keychain.password(service: "mail", account: "ann") == "shared")
        #expect(try await laptop.keychain.password(service: "wifi", account: "home") == nil)
        #expect(try await laptop.blobs.data("notes.txt") == Data("hello".utf8))

        try await home.keychain.setPassword("rotated", service: "mail", account: "ann", scope: .syncable)
        let later = workspace.path("later.bundle")
        let incremental = try await home.export(to: later, peer: "laptop")
        #expect(incremental.isIncremental)
        #expect(incremental.records.items == 1)
        try await laptop.import(from: later)
        #expect(try await laptop.keychain.password(service: "mail", account: "ann") == "rotated")
        #expect(try await home.syncPeers().map(\.name) == ["laptop"])
    }
}

extension PublicAPITests {
    /// The first change `changes` reports, its errors typed: this compiles only while the
    /// observation sequences throw ``CofferError`` (`Failure`), as every other call does.
    static func firstChange<Changes: AsyncSequence<VaultChange, CofferError>>(
        _ changes: Changes
    ) async throws(CofferError) -> VaultChange? {
        for try await change in changes { return change }
        return nil
    }

    /// The first value an observation reports, its errors typed.
    static func firstValue<Value, Values: AsyncSequence<Value, CofferError>>(
        _ values: Values
    ) async throws(CofferError) -> Value? {
        for try await value in values { return value }
        return nil
    }

    @Test("Observation sequences throw CofferError: changes, keychain changes and value observations, in typed code")
    func typedObservations() async throws {
        let vault = try await Vault.create(
            at: workspace.path("typed"),
            passphrase: passphrase,
            configuration: configuration
        )
        defer { vault.close() }
        let start = try await vault.currentChangePosition()
        try await vault.keychain.setPassword("v1", service: "mail", account: "ann", scope: .syncable)
        let change = try await Self.firstChange(vault.changes(after: start))
        #expect(change?.operation == .put)
        let keychainChanges = vault.keychain.changes(
            matching: .genericPassword(service: "mail", account: "ann"),
            after: start
        )
        let itemChange = try await Self.firstValue(keychainChanges)
        #expect(itemChange?.attributes.account == "ann")
        let info = try await Self.firstValue(vault.keychain.observe(.genericPassword(service: "mail", account: "ann")))
        #expect(info?.count == 1)
    }
}
