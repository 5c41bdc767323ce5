import CofferMount
import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The mounted view without FUSE: random trees browsed directory by directory (each directory read
/// from its own range of the tree) must show exactly what the snapshot holds, and random reads must
/// return exactly the files' bytes; the names the view makes up, locking, and damage.
@Suite("The mounted view: layout, directories by range, random reads, locking")
struct VaultViewTests {
    static var seeds: [UInt64] { ModelSeeds.seeds("COFFER_MOUNT_VIEW_SEEDS", defaults: [5, 17, 2026]) }

    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        // Small chunks: a file of a few hundred KiB has an indirect chunk list of several list chunks.
        configuration.chunkSizes = try ChunkSizes(minimum: 64, average: 128, maximum: 256)
        fixture = VaultFixture(directory: try TemporaryDirectory(), configuration: configuration)
        vault = try fixture.create()
    }

    func view() -> VaultView {
        VaultView(vault: vault, chunkCacheBytes: 256 << 10, owner: (uid: 0, gid: 0))
    }

    /// Files of `SplitMix64` content in random nested directories under a new directory `name`;
    /// returns the directory and each file's bytes by path.
    func randomTree(_ name: String, seed: UInt64) throws -> (URL, [String: [UInt8]]) {
        let root = fixture.directory.path(name)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var random = SplitMix64(seed: seed)
        var directories = [""]
        var files: [String: [UInt8]] = [:]
        for index in 0..<60 {
            let parent = directories[Int(random.next() % UInt64(directories.count))]
            let name = ["a", "b", "zz", "é", "a b", "%x", "Dir", "f"][Int(random.next() % 8)] + "\(index)"
            let path = parent.isEmpty ? name : parent + "/" + name
            if random.next() % 3 == 0 {
                try FileManager.default.createDirectory(
                    at: root.appendingPathComponent(path),
                    withIntermediateDirectories: true
                )
                directories.append(path)
            } else {
                let size = [0, 1, 200, 5000, 70000][Int(random.next() % 5)] + Int(random.next() % 100)
                let bytes = SplitMix64.bytes(size, seed: random.next())
                try Data(bytes).write(to: root.appendingPathComponent(path))
                files[path] = bytes
            }
        }
        return (root, files)
    }

    /// Every path under `path` in the view, by walking its listings.
    func walk(_ view: VaultView, _ path: String) throws -> [String: NodeAttributes] {
        var found: [String: NodeAttributes] = [:]
        for listed in try view.list(Array(path.utf8)) {
            let child = path + "/" + String(decoding: listed.name, as: UTF8.self)
            found[child] = listed.attributes
            #expect(try view.attributes(of: Array(child.utf8)) == listed.attributes, "\(child)")
            if listed.attributes.kind == .directory { found.merge(try walk(view, child)) { old, _ in old } }
        }
        return found
    }

    @Test(
        "browsing a random tree directory by directory shows exactly the snapshot's paths and attributes",
        arguments: seeds
    )
    func browsing(seed: UInt64) throws {
        let (root, files) = try randomTree("tree-\(seed)", seed: seed)
        let result = try vault.snapshots.backup(directory: root, options: BackupOptions(name: "tree"))
        let view = view()
        let top = "ids/\(result.snapshot.id)"
        let shown = try walk(view, top)
        let entries = try vault.snapshots.entries(of: result.snapshot.id).filter { !$0.pathBytes.isEmpty }
        #expect(Set(shown.keys) == Set(entries.map { top + "/" + $0.path }), "seed \(seed)")
        for entry in entries {
            let attributes = try #require(shown[top + "/" + entry.path], "seed \(seed): \(entry.path)")
            #expect(attributes.mode == entry.mode && attributes.uid == entry.uid && attributes.gid == entry.gid)
            #expect(attributes.modified.seconds == Int64(entry.modified.timeIntervalSince1970.rounded(.down)))
            if entry.kind == .file { #expect(attributes.size == UInt64(entry.size), "seed \(seed): \(entry.path)") }
        }
        #expect(Set(files.keys.map { top + "/" + $0 }).isSubset(of: Set(shown.keys)))
        // The top's attributes come from its root entry read alone, which must be the listing's.
        let record = try vault.snapshots.resolve(result.snapshot.id)
        let store = vault.snapshots.snapshotStore(try vault.keyRing())
        let rootEntry = try #require(try TreeDirectory.rootEntry(of: record, store: store))
        #expect(rootEntry == (try TreeDirectory.top(of: record, store: store).entry), "seed \(seed)")
    }

    @Test(
        "random reads at random offsets return exactly the file's bytes, small and indirect chunk lists alike",
        arguments: seeds
    )
    func randomReads(seed: UInt64) throws {
        let (root, tree) = try randomTree("reads-\(seed)", seed: seed)
        var files = tree
        // About 3,000 chunks of 128 bytes on average: an indirect list of one list chunk; 1.2 MB
        // makes it several.
        let large = SplitMix64.bytes(1_200_000, seed: seed &+ 1)
        try Data(large).write(to: root.appendingPathComponent("large.bin"))
        files["large.bin"] = large
        let result = try vault.snapshots.backup(directory: root, options: BackupOptions(name: "reads"))
        _ = try vault.blobs.write("blob/large", data: Data(large))
        let view = view()
        var random = SplitMix64(seed: seed)
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
            let file = try view.open(Array("ids/\(result.snapshot.id)/\(path)".utf8))
            for _ in 0..<8 {
                let offset = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 10))
                let count = Int(random.next() % 100_000) + 1
                var buffer = [UInt8](repeating: 0, count: count)
                let read = try buffer.withUnsafeMutableBytes { try view.read(file, at: UInt64(offset), into: $0) }
                let expected = offset < bytes.count ? Array(bytes[offset..<min(bytes.count, offset + count)]) : []
                #expect(Array(buffer.prefix(read)) == expected, "seed \(seed): \(path) at \(offset), \(count) bytes")
            }
        }
        let blob = try view.open(Array("blobs/blob%2Flarge".utf8))
        var whole = [UInt8](repeating: 0, count: large.count + 5)
        var done = 0
        while done < large.count {
            done += try whole.withUnsafeMutableBytes { raw in
                try view.read(
                    blob,
                    at: UInt64(done),
                    into: UnsafeMutableRawBufferPointer(rebasing: raw[done..<min(raw.count, done + 131_072)])
                )
            }
        }
        #expect(Array(whole.prefix(done)) == large)
        #expect(view.cachedChunkBytes <= 256 << 10 + 256, "the chunk cache stays in its budget")
    }

    @Test("snapshots by name (escaped) and time, latest, ids; blobs by escaped name; nothing else")
    func layout() throws {
        let root = fixture.directory.path("small")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: root.appendingPathComponent("x.txt"))
        var options = BackupOptions(name: "/home/ann")
        options.time = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try vault.snapshots.backup(directory: root, options: options)
        let twin = try vault.snapshots.backup(directory: root, options: options)
        options.time = Date(timeIntervalSince1970: 1_800_000_100)
        let newest = try vault.snapshots.backup(directory: root, options: options)
        _ = try vault.blobs.write("100%/sure", data: Data("b".utf8))
        let view = view()
        func names(_ path: String) throws -> [String] {
            try view.list(Array(path.utf8)).map { String(decoding: $0.name, as: UTF8.self) }
        }
        #expect(try names("") == ["blobs", "ids", "snapshots"])
        #expect(try names("snapshots") == ["%2Fhome%2Fann"])
        let twins = [first, twin].map { "2027-01-15T08:00:00Z-\($0.snapshot.shortID)" }.sorted()
        #expect(try names("snapshots/%2Fhome%2Fann") == twins + ["2027-01-15T08:01:40Z", "latest"])
        #expect(
            try view.linkTarget(of: Array("snapshots/%2Fhome%2Fann/latest".utf8)) == Array("2027-01-15T08:01:40Z".utf8)
        )
        #expect(try names("snapshots/%2Fhome%2Fann/2027-01-15T08:01:40Z") == ["x.txt"])
        #expect(Set(try names("ids")) == Set([first, twin, newest].map(\.snapshot.id)))
        #expect(try names("blobs") == ["100%25%2Fsure"])
        #expect(try view.attributes(of: Array("blobs/100%25%2Fsure".utf8)).size == 1)
        for missing in ["nothing", "blobs/100%", "blobs/100%25%2fsure", "snapshots/home", "ids/00"] {
            #expect(throws: MountError.notFound, "\(missing)") { try view.attributes(of: Array(missing.utf8)) }
        }
        #expect(throws: MountError.notDirectory) { try view.list(Array("blobs/100%25%2Fsure".utf8)) }
        #expect(throws: MountError.isDirectory) { try view.open(Array("snapshots".utf8)) }
    }

    @Test(
        "snapshots of one name from several hosts: one directory each, twins in a second told apart, latest the newest of any host"
    )
    func severalHosts() throws {
        let root = fixture.directory.path("hosts")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: root.appendingPathComponent("x.txt"))
        var options = BackupOptions(name: "docs")
        options.time = Date(timeIntervalSince1970: 1_800_000_000)
        options.hostname = "desktop"
        let desktop = try vault.snapshots.backup(directory: root, options: options)
        options.hostname = "laptop"
        let laptop = try vault.snapshots.backup(directory: root, options: options)
        options.time = Date(timeIntervalSince1970: 1_800_000_100)
        let later = try vault.snapshots.backup(directory: root, options: options)
        let view = view()
        let listed = try view.list(Array("snapshots/docs".utf8)).map { String(decoding: $0.name, as: UTF8.self) }
        let twins = [desktop, laptop].map { "2027-01-15T08:00:00Z-\($0.snapshot.shortID)" }
        #expect(Set(listed) == Set(twins + ["2027-01-15T08:01:40Z", "latest"]), "\(listed)")
        #expect(try view.linkTarget(of: Array("snapshots/docs/latest".utf8)) == Array("2027-01-15T08:01:40Z".utf8))
        for (name, result) in zip(twins, [desktop, laptop]) {
            let viaTime = try view.attributes(of: Array("snapshots/docs/\(name)/x.txt".utf8))
            #expect(viaTime == (try view.attributes(of: Array("ids/\(result.snapshot.id)/x.txt".utf8))))
        }
        #expect(later.snapshot.hostname == "laptop")
    }

    @Test("a write-only client's snapshot has a TIME-ID.write-only directory, and latest never points to it")
    func writeOnlySnapshot() throws {
        let root = fixture.directory.path("claims")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: root.appendingPathComponent("x.txt"))
        var options = BackupOptions(name: "docs")
        options.time = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try vault.snapshots.backup(directory: root, options: options)
        try vault.allowWriteOnlyClients(true)
        var configuration = fixture.configuration
        configuration.expectedWriteKeyFingerprint = try vault.writeKeyFingerprint
        let client = try Vault.open(at: fixture.vaultURL, configuration: configuration)
        options.protection = .completeUnlessOpen
        options.time = Date(timeIntervalSince1970: 1_900_000_000)
        let forged = try client.snapshots.backup(directory: root, options: options).snapshot
        client.close()
        let view = view()
        let listed = try view.list(Array("snapshots/docs".utf8)).map { String(decoding: $0.name, as: UTF8.self) }
        let marked = "2030-03-17T17:46:40Z-\(forged.shortID).write-only"
        #expect(Set(listed) == ["2027-01-15T08:00:00Z", marked, "latest"], "\(listed)")
        #expect(try view.linkTarget(of: Array("snapshots/docs/latest".utf8)) == Array("2027-01-15T08:00:00Z".utf8))
        #expect(try view.list(Array("snapshots/docs/\(marked)".utf8)).map(\.name) == [Array("x.txt".utf8)])
    }

    @Test("threads reading one open file at once, as the kernel's read-ahead does, each get exactly their bytes")
    func concurrentReads() throws {
        let (root, _) = try randomTree("concurrent", seed: 4)
        let large = SplitMix64.bytes(300_000, seed: 44)
        try Data(large).write(to: root.appendingPathComponent("large.bin"))
        let result = try vault.snapshots.backup(directory: root, options: BackupOptions(name: "concurrent"))
        let view = view()
        let file = try view.open(Array("ids/\(result.snapshot.id)/large.bin".utf8))
        let mismatches = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var random = SplitMix64(seed: UInt64(thread) + 100)
            for _ in 0..<16 {
                let offset = Int(random.next() % UInt64(large.count))
                let count = Int(random.next() % 40_000) + 1
                var buffer = [UInt8](repeating: 0, count: count)
                let read =
                    (try? buffer.withUnsafeMutableBytes { try view.read(file, at: UInt64(offset), into: $0) }) ?? -1
                if Array(buffer.prefix(max(read, 0))) != Array(large[offset..<min(large.count, offset + count)]) {
                    mismatches.withLock { $0.append("thread \(thread): \(offset) +\(count) read \(read)") }
                }
            }
        }
        #expect(mismatches.withLock { $0 }.isEmpty, "\(mismatches.withLock { $0 }.prefix(5))")
    }

    @Test("names map to one component and back, whatever they hold")
    func names() throws {
        var random = SplitMix64(seed: 99)
        let alphabet = Array("ab/%.2FE é")
        for _ in 0..<300 {
            let name = String(
                (0..<Int(random.next() % 8)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            )
            let component = MountNames.component(for: name)
            #expect(!component.contains(UInt8(ascii: "/")) && !component.isEmpty, "\(name)")
            #expect(component != Array(".".utf8) && component != Array("..".utf8), "\(name)")
            #expect(MountNames.name(fromComponent: component) == name, "\(name)")
        }
        #expect(MountNames.time(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
    }

    @Test("once the vault locks, whenUnlocked blobs vanish, an open one stops reading, and their chunks leave memory")
    func locking() throws {
        var options = BlobWriteOptions()
        options.protection = .whenUnlocked
        _ = try vault.blobs.write("secret", data: Data(SplitMix64.bytes(5000, seed: 3)), options: options)
        _ = try vault.blobs.write("open", data: Data("plain".utf8))
        let view = view()
        let secret = try view.open(Array("blobs/secret".utf8))
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(try buffer.withUnsafeMutableBytes { try view.read(secret, at: 0, into: $0) } == 100)
        #expect(view.cachedChunkBytes > 0)
        vault.lock()
        #expect(try view.list(Array("blobs".utf8)).map(\.name) == [Array("open".utf8)])
        #expect(throws: MountError.notFound) { try view.attributes(of: Array("blobs/secret".utf8)) }
        #expect(throws: MountError.locked) {
            try buffer.withUnsafeMutableBytes { try view.read(secret, at: 0, into: $0) }
        }
        #expect(view.cachedChunkBytes == 0)
        let open = try view.open(Array("blobs/open".utf8))
        #expect(try buffer.withUnsafeMutableBytes { try view.read(open, at: 0, into: $0) } == 5)
    }

    @Test("a damaged chunk fails the read with an I/O error and a report naming the file")
    func damage() throws {
        _ = try vault.blobs.write("victim", data: Data(SplitMix64.bytes(3000, seed: 8)))
        let reports = Locked<[String]>([])
        let view = VaultView(vault: vault, owner: (uid: 0, gid: 0)) { message in reports.withLock { $0.append(message) }
        }
        let file = try view.open(Array("blobs/victim".utf8))
        let schema = vault.schema
        try vault.environment.write { txn in
            var keys: [[UInt8]] = []
            try schema.records.forEach(in: txn) { key, _ in
                keys.append(Array(key))
                return true
            }
            for key in keys { try schema.records.put(ChunkID(key), [UInt8](repeating: 7, count: 64), in: txn) }
        }
        var buffer = [UInt8](repeating: 0, count: 3000)
        #expect(throws: MountError.self) { try buffer.withUnsafeMutableBytes { try view.read(file, at: 0, into: $0) } }
        #expect(reports.withLock { $0 }.contains { $0.contains("/blobs/victim") }, "\(reports.withLock { $0 })")
    }

    @Test("a snapshot whose tree is damaged fails its listing with an I/O error and a report naming it, nothing else")
    func damagedTree() throws {
        let (root, _) = try randomTree("damaged", seed: 9)
        let result = try vault.snapshots.backup(directory: root, options: BackupOptions(name: "damaged"))
        _ = try vault.blobs.write("unharmed", data: Data("still here".utf8))
        let reports = Locked<[String]>([])
        let view = VaultView(vault: vault, owner: (uid: 0, gid: 0)) { message in reports.withLock { $0.append(message) }
        }
        // Every chunk of the snapshot (its tree among them) overwritten; the blob's chunk kept.
        let store = vault.snapshots.snapshotStore(try vault.keyRing())
        let record = try vault.snapshots.resolve(result.snapshot.id)
        var references: Set<ChunkID> = []
        try store.forEachReference(of: record) { references.insert($0) }
        let schema = vault.schema
        try vault.environment.write { txn in
            for id in references { try schema.records.put(id, [UInt8](repeating: 7, count: 64), in: txn) }
        }
        #expect(throws: MountError.self) { try view.list(Array("ids/\(result.snapshot.id)".utf8)) }
        #expect(reports.withLock { $0 }.contains { $0.contains(result.snapshot.shortID) }, "\(reports.withLock { $0 })")
        #expect(try view.list(Array("blobs".utf8)).map(\.name) == [Array("unharmed".utf8)])
        #expect(try view.list(Array("snapshots".utf8)).map(\.name) == [Array("damaged".utf8)])
    }
}
