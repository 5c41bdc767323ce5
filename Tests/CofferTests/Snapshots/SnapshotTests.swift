import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

#if canImport(Glibc)
import Glibc
#endif

/// Builds and compares directory trees for snapshot tests.
enum TreeFixture {
    /// A tree with every kind of path: nested directories, an empty one, files of several sizes
    /// (one spanning an indirect chunk list with small chunks), modes, exact times, links, a FIFO.
    static func make(at root: URL) throws {
        let files = FileManager.default
        try files.createDirectory(
            at: root.appendingPathComponent("docs/deep/deeper"),
            withIntermediateDirectories: true
        )
        try files.createDirectory(at: root.appendingPathComponent("empty"), withIntermediateDirectories: true)
        try Data().write(to: root.appendingPathComponent("empty-file"))
        try Data(Content.mixed(10_000, seed: 1)).write(to: root.appendingPathComponent("docs/a.txt"))
        try Data(Content.random(700_000, seed: 2)).write(to: root.appendingPathComponent("docs/deep/b.bin"))
        try Data(Content.mixed(2_000_000, seed: 3)).write(to: root.appendingPathComponent("docs/deep/deeper/big.log"))
        try Data("#!/bin/sh\necho hi\n".utf8).write(to: root.appendingPathComponent("run.sh"))
        chmod(root.appendingPathComponent("run.sh").path, 0o755)
        chmod(root.appendingPathComponent("docs/a.txt").path, 0o640)
        chmod(root.appendingPathComponent("empty").path, 0o750)
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("link-to-a").path,
            withDestinationPath: "docs/a.txt"
        )
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("dangling").path,
            withDestinationPath: "/nonexistent/x"
        )
        mkfifo(root.appendingPathComponent("pipe").path, 0o644)
        var times = [
            timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789),
            timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789),
        ]
        utimensat(AT_FDCWD, root.appendingPathComponent("docs/a.txt").path, &times, 0)
        utimensat(AT_FDCWD, root.appendingPathComponent("link-to-a").path, &times, AT_SYMLINK_NOFOLLOW)
        utimensat(AT_FDCWD, root.appendingPathComponent("docs/deep").path, &times, 0)
    }

    /// Everything about a tree that a restore must reproduce, by relative path.
    static func describe(_ root: URL) throws -> [String: String] {
        var description: [String: String] = [:]
        try TreeWalker(root: Array(root.path.utf8), excluded: [], report: { _, _ in }, exclude: { _ in }).walk {
            walked in
            let entry = walked.entry
            let absolute = String(decoding: walked.absolutePath.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var text =
                "\(walked.kind) mode=\(String(entry.mode, radix: 8)) mtime=\(entry.modifiedSeconds).\(entry.modifiedNanoseconds)"
            switch walked.kind {
            case .file:
                let data = FileManager.default.contents(atPath: absolute) ?? Data()
                text += " size=\(walked.size) sha=\((try? SHA256.hash(data))?.hex ?? "?")"
            case .symlink:
                text += " -> \((try? FileManager.default.destinationOfSymbolicLink(atPath: absolute)) ?? "?")"
            default:
                break
            }
            description[walked.displayPath] = text
        }
        return description
    }
}

@Suite("Snapshots: backup, restore, forget, diff")
struct SnapshotTests {
    let fixture: VaultFixture
    let vault: Vault
    let source: URL

    init() throws {
        fixture = try VaultFixture.smallChunks()
        vault = try fixture.create()
        source = fixture.directory.path("source")
        try TreeFixture.make(at: source)
    }

    @Test("backup then restore reproduces the tree exactly: contents, modes, times, links, empty dirs, FIFOs")
    func roundTrip() throws {
        let result = try vault.snapshots.backup(directory: source)
        #expect(result.problems.isEmpty, "\(result.problems)")
        let stats = result.snapshot.statistics
        #expect(stats.files == 5 && stats.directories == 4 && stats.symlinks == 2 && stats.otherFiles == 1)
        #expect(stats.newFiles == 5 && stats.changedFiles == 0 && stats.unchangedFiles == 0)
        #expect(result.snapshot.scope == .syncable)
        #expect(result.snapshot.name == source.standardizedFileURL.path)
        let target = fixture.directory.path("restored")
        let restore = try vault.snapshots.restore(result.snapshot.id, to: target)
        #expect(restore.problems.isEmpty, "\(restore.problems)")
        #expect(try TreeFixture.describe(target) == (try TreeFixture.describe(source)))
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test("a second backup of an unchanged tree reads no file and stores almost nothing")
    func unchanged() throws {
        let first = try vault.snapshots.backup(directory: source)
        let before = try vault.blobs.statistics()
        let reads = ByteCounter()
        let second = try vault.snapshots.backup(directory: source, progress: { reads.value = $0.bytesRead })
        let after = try vault.blobs.statistics()
        #expect(reads.value == 0, "no file content was read")
        #expect(second.snapshot.statistics.unchangedFiles == 5)
        #expect(second.snapshot.statistics.newFiles + second.snapshot.statistics.changedFiles == 0)
        #expect(after.storedBytes - before.storedBytes < 4096, "only a tree chunk at most")
        #expect(second.snapshot.id != first.snapshot.id)
        let target = fixture.directory.path("restored")
        _ = try vault.snapshots.restore(second.snapshot.id, to: target)
        #expect(try TreeFixture.describe(target) == (try TreeFixture.describe(source)))
        #expect(try vault.blobs.verify().isHealthy)
    }

    @Test(
        "backups write record version 4 (version 3's tree, and tags), whose file entries hold no SHA-256; versions 1 and 2 still read"
    )
    func treeVersions() throws {
        let result = try vault.snapshots.backup(directory: source)
        let record = try vault.snapshots.resolve(result.snapshot.id)
        let stored = try #require(
            try vault.environment.read { txn in try txn.get(vault.schema.snapshots, key: record.id) }
        )
        #expect(stored.first == 4)
        #expect(record.formatVersion == SnapshotRecord.version)
        var files = 0
        try vault.snapshots.snapshotStore(try vault.keyRing()).forEachEntry(of: record) { entry in
            guard let content = entry.content else { return }
            files += 1
            #expect(content.digest == nil)
        }
        #expect(files == 5)

        // The same entry in both encodings: version 1 has the 32-byte SHA-256 before the chunk count.
        let chunk = ChunkEntry(id: ChunkID([UInt8](repeating: 0xAB, count: 32)), length: 5)
        let entry = TreeEntry(
            kind: .file,
            path: Array("a/b.txt".utf8),
            mode: 0o100644,
            uid: 1000,
            gid: 1000,
            modifiedSeconds: 1_700_000_000,
            modifiedNanoseconds: 5,
            size: 5,
            device: 2049,
            inode: 77,
            content: TreeEntry.Content(chunkCount: 1, chunks: .inline([chunk]))
        )
        let version2 = try legacyEncoding(of: entry, chunk: chunk)
        let digest = try SHA256.hash(Array("hello".utf8))
        let contentStart = version2.count - 8 - (try chunkListSize(chunk))
        let version1 = Array(version2[..<contentStart]) + digest + Array(version2[contentStart...])
        #expect(try TreeEntry.decode(version2, version: 2) == entry)
        var withDigest = entry
        withDigest.content?.digest = digest
        #expect(try TreeEntry.decode(version1, version: 1) == withDigest)
        #expect(throws: CofferError.self) { try TreeEntry.decode(version1, version: 2) }
    }

    @Test("a version 3 tree entry encodes as docs/FORMAT.md says, byte for byte, and decodes back")
    func version3KnownAnswer() throws {
        var entry = TreeEntry(
            kind: .file,
            path: [0x61, 0xE9],  // "a" and a Latin-1 e-acute: not UTF-8
            mode: 0o100644,
            uid: 1000,
            gid: 100,
            modifiedSeconds: 1_700_000_000,
            modifiedNanoseconds: 500_000_000,
            size: 5,
            device: 2049,
            inode: 77,
            content: TreeEntry.Content(
                chunkCount: 1,
                chunks: .inline([ChunkEntry(id: ChunkID([UInt8](repeating: 0xAB, count: 32)), length: 5)])
            )
        )
        entry.changedSeconds = 1_700_000_001
        entry.changedNanoseconds = 700_000_000
        entry.linkCount = 2
        entry.allocatedBytes = 4096
        entry.attributes = [ExtendedAttribute(name: Array("user.a".utf8), value: [0x01])]
        // Computed from the layout in docs/FORMAT.md with Python's struct module, not with this code.
        let expected = [UInt8](
            hex:
                "0000009101000261e9000081a4000003e800000064000000006553f1001dcd6500000000006553f10129b92700"
                + "00000000000000050000000000000801000000000000004d00000000000000020000000000001000000100067573"
                + "65722e61000000010100000000000000010000000001abababababababababababababababababababababababab"
                + "abababababababab00000005"
        )
        #expect(entry.encoded() == expected)
        #expect(try TreeEntry.decode(Array(expected.dropFirst(4)), version: 3) == entry)
        #expect(entry.displayPath == "a\\xe9")
        #expect(entry.isSparse == false)
    }

    /// A file entry in the version 2 encoding (no ctime, link count, allocated size or attributes).
    private func legacyEncoding(of entry: TreeEntry, chunk: ChunkEntry) throws -> [UInt8] {
        var body = BinaryWriter()
        body.write(entry.kind.rawValue)
        body.write(lengthPrefixed: entry.path)
        body.write(entry.mode)
        body.write(entry.uid)
        body.write(entry.gid)
        body.write(entry.modifiedSeconds)
        body.write(entry.modifiedNanoseconds)
        body.write(entry.size)
        body.write(entry.device)
        body.write(entry.inode)
        body.write(UInt64(1))
        ChunkList.inline([chunk]).encode(into: &body)
        return body.bytes
    }

    /// The encoded size of an inline chunk list of one entry.
    private func chunkListSize(_ chunk: ChunkEntry) throws -> Int {
        var writer = BinaryWriter()
        ChunkList.inline([chunk]).encode(into: &writer)
        return writer.bytes.count
    }

    @Test("a changed file in the tree re-uses its unchanged chunks; diff names it")
    func changedFile() throws {
        let first = try vault.snapshots.backup(directory: source)
        let log = source.appendingPathComponent("docs/deep/deeper/big.log")
        var bytes = [UInt8](try Data(contentsOf: log))
        bytes.insert(contentsOf: Array("an edit".utf8), at: 1_000_000)
        try Data(bytes).write(to: log)
        try Data("new".utf8).write(to: source.appendingPathComponent("docs/new.txt"))
        try FileManager.default.removeItem(at: source.appendingPathComponent("run.sh"))
        let second = try vault.snapshots.backup(directory: source)
        let stats = second.snapshot.statistics
        #expect(stats.changedFiles == 1 && stats.newFiles == 1 && stats.unchangedFiles == 3)
        #expect(stats.bytesAdded < 64 << 10, "\(stats.bytesAdded) bytes added for a 7-byte edit")
        let diff = try vault.snapshots.diff(first.snapshot.id, second.snapshot.id)
        #expect(diff.added == ["docs/new.txt"])
        #expect(diff.removed == ["run.sh"])
        #expect(diff.changed.contains("docs/deep/deeper/big.log"))
    }

    @Test("forget releases what only that snapshot used; the last forget frees everything")
    func forget() throws {
        let first = try vault.snapshots.backup(directory: source)
        try Data(Content.random(300_000, seed: 9)).write(to: source.appendingPathComponent("docs/extra.bin"))
        let second = try vault.snapshots.backup(directory: source, name: "other")
        #expect(try vault.snapshots.list().map(\.id) == [first.snapshot.id, second.snapshot.id])
        try vault.snapshots.forget(first.snapshot.shortID)
        #expect(try vault.blobs.verify().isHealthy)
        let target = fixture.directory.path("restored")
        _ = try vault.snapshots.restore("other", to: target)
        #expect(try TreeFixture.describe(target) == (try TreeFixture.describe(source)))
        try vault.snapshots.forget(second.snapshot.id)
        #expect(try vault.snapshots.list().isEmpty)
        #expect(try vault.blobs.statistics().chunkCount == 0)
        let missing = #expect(throws: CofferError.self) { try vault.snapshots.forget("other") }
        #expect(missing?.code == .itemNotFound)
    }

    @Test("verify --read-data reads every snapshot file and names a damaged one")
    func verifyFiles() throws {
        let snapshot = try vault.snapshots.backup(directory: source).snapshot
        let healthy = try vault.blobs.verify(readingData: true)
        #expect(healthy.isHealthy, "\(healthy.problems)")
        #expect(healthy.bytesRead >= snapshot.statistics.bytes)
        var found: TreeEntry?
        try SnapshotStore(environment: vault.environment, schema: vault.schema, keys: vault.keyRing())
            .forEachEntry(of: try vault.snapshots.resolve(snapshot.id)) { entry in
                if entry.path == Array("docs/a.txt".utf8) { found = entry }
            }
        let entry = try #require(found)
        guard case .inline(let chunks) = entry.content?.chunks else {
            Issue.record("expected an inline chunk list")
            return
        }
        try vault.environment.write { (txn) throws in
            var record = try #require(try vault.schema.records.record(chunks[1].id, in: txn))
            record[record.count - 5] ^= 0x01
            try vault.schema.records.put(chunks[1].id, record, in: txn)
        }
        let report = try vault.blobs.verify(readingData: true)
        #expect(report.problems.contains { $0.message.contains("file 'docs/a.txt'") }, "\(report.problems)")
    }

    @Test("syncable snapshots are logged in the change log; device-bound ones never are")
    func changeLog() throws {
        let device = try vault.snapshots.backup(directory: source, name: "device", scope: .deviceBound)
        try vault.snapshots.forget(device.snapshot.id)
        let synced = try vault.snapshots.backup(directory: source, name: "synced")
        try vault.snapshots.forget(synced.snapshot.id)
        let changes = try vault.environment.read { txn in
            try ChangeLog.changes(after: 0, in: txn, schema: vault.schema)
        }
        #expect(changes.map(\.1) == [.snapshotPut, .snapshotDelete])
        #expect(changes.allSatisfy { $0.2 == [UInt8](hex: synced.snapshot.id) })
        #expect(device.snapshot.scope == .deviceBound)
    }

    @Test("--include restores a subset, with the parents it needs")
    func include() throws {
        let snapshot = try vault.snapshots.backup(directory: source).snapshot
        let target = fixture.directory.path("subset")
        _ = try vault.snapshots.restore(snapshot.id, to: target, including: ["docs/deep"])
        let restored = try TreeFixture.describe(target).keys.sorted()
        #expect(
            restored == [".", "docs", "docs/deep", "docs/deep/b.bin", "docs/deep/deeper", "docs/deep/deeper/big.log"]
        )
        let second = fixture.directory.path("texts")
        _ = try vault.snapshots.restore(snapshot.id, to: second, including: ["*.txt"])
        #expect(try TreeFixture.describe(second).keys.sorted() == [".", "docs", "docs/a.txt"])
    }

    @Test("restore into a non-empty target keeps what the snapshot lacks unless deleting; a file target is refused")
    func nonEmptyTarget() throws {
        let snapshot = try vault.snapshots.backup(directory: source).snapshot
        let target = fixture.directory.path("busy")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: target.appendingPathComponent("keep.txt"))
        _ = try vault.snapshots.restore(snapshot.id, to: target)
        var described = try TreeFixture.describe(target)
        #expect(described.removeValue(forKey: "keep.txt") != nil)
        #expect(try described == TreeFixture.describe(source))
        let dry = try vault.snapshots.restore(snapshot.id, to: target, deleting: true, dryRun: true)
        #expect(dry.deletedPaths == 1)
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("keep.txt").path))
        let result = try vault.snapshots.restore(snapshot.id, to: target, deleting: true)
        #expect(result.deletedPaths == 1 && result.restoredPaths == 0)
        #expect(try TreeFixture.describe(target) == TreeFixture.describe(source))

        let file = fixture.directory.path("a-file")
        try Data("mine".utf8).write(to: file)
        let error = #expect(throws: CofferError.self) { _ = try vault.snapshots.restore(snapshot.id, to: file) }
        #expect(error?.code == .param)
        #expect(try Data(contentsOf: file) == Data("mine".utf8))
    }

    @Test("files that vanish during the walk are reported and skipped, not fatal")
    func vanished() throws {
        let doomed = source.appendingPathComponent("zz-vanishes.txt")
        try Data("soon gone".utf8).write(to: doomed)
        let result = try vault.snapshots.backup(
            directory: source,
            progress: { progress in
                // Delete the last file while the walk is at the first path after the root.
                if progress.files == 2 { try? FileManager.default.removeItem(at: doomed) }
            }
        )
        #expect(result.problems.map(\.path) == ["zz-vanishes.txt"])
        #expect(result.snapshot.statistics.files == 5)
    }

    @Test("files cut by several readers are stored in walk order: small, empty, and past the read-ahead")
    func readersKeepWalkOrder() throws {
        let root = fixture.directory.path("many")
        var generator = SplitMix64(seed: 41)
        for index in 0..<240 {
            let directory = root.appendingPathComponent("d\(index % 7)/e\(index % 3)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let size: Int
            switch index % 40 {
            case 0: size = BackupReaders.readAhead + 300_000  // past a reader's read-ahead and a batch's bytes
            case 1: size = 0
            default: size = Int(generator.next() % 40_000)
            }
            try Data(Content.mixed(size, seed: UInt64(index))).write(to: directory.appendingPathComponent("f\(index)"))
        }
        let result = try vault.snapshots.backup(directory: root)
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.snapshot.statistics.files == 240 && result.snapshot.statistics.newFiles == 240)
        let record = try vault.snapshots.resolve(result.snapshot.id)
        var paths: [[UInt8]] = []
        try vault.snapshots.snapshotStore(try vault.keyRing()).forEachEntry(of: record) { entry in
            paths.append(entry.path)
        }
        #expect(paths.count == 1 + 7 + 21 + 240)
        #expect(paths == paths.sorted { TreeStream.walkOrder($0, precedes: $1) }, "entries in walk order")
        let target = fixture.directory.path("many-restored")
        let restore = try vault.snapshots.restore(result.snapshot.id, to: target)
        #expect(restore.problems.isEmpty, "\(restore.problems)")
        #expect(try TreeFixture.describe(target) == (try TreeFixture.describe(root)))
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test("crafted snapshots with escaping paths or symlinked parents are refused before writing outside")
    func pathEscapes() throws {
        let outside = fixture.directory.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        func entry(_ kind: TreeEntry.Kind, _ path: String, target: String? = nil) -> TreeEntry {
            var entry = TreeEntry(
                kind: kind,
                path: Array(path.utf8),
                mode: kind == .directory ? 0o40755 : 0o100644,
                uid: 0,
                gid: 0,
                modifiedSeconds: 0,
                modifiedNanoseconds: 0,
                size: 0,
                device: 0,
                inode: 0
            )
            if kind == .file {
                entry.content = TreeEntry.Content(
                    digest: (try? SHA256.hash([UInt8]())) ?? [],
                    chunkCount: 0,
                    chunks: .inline([])
                )
            }
            entry.linkTarget = target.map { Array($0.utf8) }
            return entry
        }
        let attacks: [[TreeEntry]] = [
            [entry(.file, "../escaped")],
            [entry(.file, "/tmp/absolute")],
            [entry(.file, "a/../../escaped")],
            [entry(.symlink, "link", target: outside.path), entry(.file, "link/escaped")],
        ]
        for (index, attack) in attacks.enumerated() {
            let id = try craftSnapshot(attack)
            let target = fixture.directory.path("target-\(index)")
            let error = #expect(throws: CofferError.self, "attack \(index)") {
                _ = try vault.snapshots.restore(id, to: target)
            }
            #expect(error?.code == .decode, "attack \(index)")
            #expect(error?.message.contains("escape") == true || error?.message.contains("outside") == true)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("escaped").path))
    }

    /// Stores a snapshot whose tree is `entries`, sealed with the vault's own keys (as an attacker
    /// who could not do so could not make it open at all).
    func craftSnapshot(_ entries: [TreeEntry]) throws -> String {
        let keys = try vault.keyRing()
        let stream = entries.flatMap { $0.encoded() }
        let chunkKeys = try ChunkKeys(scope: .syncable, level: .afterFirstUnlock, write: nil, keys: keys)
        let coder = try ChunkRecord.Coder()
        let id = try chunkKeys.id(of: stream)
        let sealed = try stream.withUnsafeBytes { try ChunkRecord.seal($0, id: id, keys: chunkKeys, coder: coder) }
        let snapshotID = SecureRandom.bytes(count: 16)
        let record = SnapshotRecord(
            id: snapshotID,
            name: "crafted",
            sourcePath: "/",
            hostname: "x",
            created: 0,
            scope: .syncable,
            level: .afterFirstUnlock,
            statistics: SnapshotStatistics(),
            size: UInt64(stream.count),
            digest: try SHA256.hash(stream),
            chunkCount: 1,
            chunks: .inline([ChunkEntry(id: id, length: UInt32(stream.count))])
        )
        try vault.environment.write { (txn) throws in
            try ChunkStore(schema: vault.schema).retain(id, sealed: sealed, in: txn)
            try txn.put(
                vault.schema.snapshots,
                key: snapshotID,
                value: try record.seal(keys: keys, cipher: try AESGCM())
            )
        }
        return record.info.id
    }
}

/// A counter a `@Sendable` progress closure can write.
final class ByteCounter: @unchecked Sendable {
    var value: Int64 = 0
}
