import CofferTestSupport
import Foundation
import Glibc
import Testing

@testable import Coffer

/// `trees-checked`, the note that spares a large data file the walk of its trees before every
/// process's first change: a sound walk leaves it, each commit renews it, and any change to the file
/// from outside, a copy or another program's commit voids it. The environments here trust the note
/// at every size (`walkEveryTimeUpTo: 0`), as they do for files over 64 MiB.
@Suite("Checked trees: the note that a large data file's trees are sound")
struct CheckedTreesTests {
    let directory: TemporaryDirectory
    var path: String { directory.url.path }

    init() throws { directory = try TemporaryDirectory() }

    func open(walkEveryTimeUpTo limit: UInt64 = 0) throws -> (Environment, Table) {
        let environment = try Environment(
            directory: directory.url,
            options: .init(createIfMissing: true, initialMapSize: 16 << 20, walkEveryTimeUpTo: limit)
        )
        return (environment, try environment.openTables(["t"], create: true)[0])
    }

    static func key(_ index: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(index).bigEndian, Array.init) }

    /// Fills table `t` with 300 entries of 100 bytes: a branch over a dozen leaves. Returns the id of
    /// the transaction that committed them.
    func fill(_ environment: Environment, _ table: Table) throws -> UInt64 {
        try environment.write { txn in
            for index in 0..<300 { try txn.put(table, key: Self.key(index), value: [UInt8](repeating: 7, count: 100)) }
            return txn.snapshotID
        }
    }

    /// The committed transaction of the data file, as its meta pages say.
    func committed() throws -> UInt64 {
        let check = try #require(DataFileCheck(path: path + "/data.mdb"))
        defer { check.close() }
        return try #require(check.current?.transactionID)
    }

    /// Sets the flags of the second leaf under table `t`'s root to a branch's, in place (the file
    /// keeps its inode, as an edit or a stray write would).
    func damageSecondLeaf() throws {
        let file = path + "/data.mdb"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        func integer<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            DataFileCheck.integer(bytes, offset, as: T.self)
        }
        let meta = integer(144, UInt64.self) > integer(4096 + 144, UInt64.self) ? 0 : 4096
        let mainRoot = Int(integer(meta + 128, UInt64.self))
        // The main tree is one leaf here; find table t's descriptor, then its root's second child.
        let main = mainRoot * 4096
        let count = (Int(integer(main + 12, UInt16.self)) - 16) / 2
        var tableRoot: Int?
        for slot in 0..<count {
            let node = main + Int(integer(main + 16 + slot * 2, UInt16.self))
            let keySize = Int(integer(node + 6, UInt16.self))
            if keySize == 1, bytes[node + 8] == UInt8(ascii: "t") {
                tableRoot = Int(integer(node + 8 + keySize + 40, UInt64.self))
            }
        }
        let root = try #require(tableRoot) * 4096
        #expect(integer(root + 10, UInt16.self) == TreePage.branchFlag, "the table's root is a branch")
        let second = root + Int(integer(root + 16 + 2, UInt16.self))
        let leaf = Int(integer(second, UInt16.self)) | Int(integer(second + 2, UInt16.self)) << 16
        #expect(DataFileCheck.integer(bytes, leaf * 4096 + 10, as: UInt16.self) == TreePage.leafFlag)
        let descriptor = Glibc.open(file, O_WRONLY)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        var flags = TreePage.branchFlag.littleEndian
        #expect(pwrite(descriptor, &flags, 2, off_t(leaf * 4096 + 10)) == 2)
    }

    @Test("a sound walk leaves the note; the next environment takes its word; every commit renews it")
    func walkThenVouch() throws {
        let (first, table) = try open()
        _ = try fill(first, table)
        #expect(first.firstChangeCheck == .walked)
        #expect(CheckedTrees.vouches(directory: path, transactionID: try committed()))
        first.close()

        let (second, sameTable) = try open()
        try second.write { txn in try txn.put(sameTable, key: [1], value: [1]) }
        #expect(second.firstChangeCheck == .vouched)
        try second.write { txn in try txn.put(sameTable, key: [2], value: [2]) }
        #expect(CheckedTrees.vouches(directory: path, transactionID: try committed()))
        // A write transaction that changes nothing commits no state: the note stays as it was.
        let before = try #require(CheckedTrees.read(directory: path))
        try second.write { txn in _ = try txn.get(sameTable, key: [1]) }
        #expect(CheckedTrees.read(directory: path) == before)
        second.close()
    }

    @Test("a write to the file from outside voids the note: the next change walks, refuses, changes nothing")
    func outsideWriteVoids() throws {
        let (first, table) = try open()
        _ = try fill(first, table)
        first.close()
        try damageSecondLeaf()
        #expect(!CheckedTrees.vouches(directory: path, transactionID: try committed()))
        let damaged = try Data(contentsOf: directory.url.appendingPathComponent("data.mdb"))

        let (second, sameTable) = try open()
        #expect(throws: KnownDamage.Refusal.self) {
            try second.write { txn in try txn.put(sameTable, key: Self.key(5), value: [1]) }
        }
        #expect(second.firstChangeCheck == .walked)
        #expect(second.knownDamage?.contains("is a branch where the tree's depth needs a leaf") == true)
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("data.mdb")) == damaged)
        #expect(CheckedTrees.read(directory: path) == nil, "damage found voids the note")
        second.close()
    }

    @Test("a note for another transaction, another file or torn does not vouch: the trees are walked")
    func mismatchedNotes() throws {
        let (first, table) = try open()
        let transactionID = try fill(first, table)
        first.close()
        let now = try #require(CheckedTrees(directory: path, transactionID: transactionID))
        let notes = [
            // Another program committed after the note (LMDB's own tools, an older Coffer).
            "coffer trees-checked 1 \(now.device) \(now.inode) \(now.size) \(now.changeSeconds) \(now.changeNanoseconds) \(transactionID - 1)\n",
            // A copy of the vault: another inode.
            "coffer trees-checked 1 \(now.device) \(now.inode + 1) \(now.size) \(now.changeSeconds) \(now.changeNanoseconds) \(transactionID)\n",
            "coffer trees-checked 1 \(now.device) \(now.inode) \(now.size)",
            "",
        ]
        for note in notes {
            try Data(note.utf8).write(to: directory.url.appendingPathComponent(CheckedTrees.fileName))
            let (environment, sameTable) = try open()
            try environment.write { txn in try txn.put(sameTable, key: [1], value: [1]) }
            #expect(environment.firstChangeCheck == .walked, "\(note)")
            environment.close()
        }
    }

    @Test("a data file up to the limit is walked before every environment's first change, note or not")
    func smallFilesAlwaysWalked() throws {
        let (first, table) = try open(walkEveryTimeUpTo: Environment.walkEveryTimeLimit)
        _ = try fill(first, table)
        first.close()
        #expect(CheckedTrees.vouches(directory: path, transactionID: try committed()))
        let (second, sameTable) = try open(walkEveryTimeUpTo: Environment.walkEveryTimeLimit)
        try second.write { txn in try txn.put(sameTable, key: [1], value: [1]) }
        #expect(second.firstChangeCheck == .walked)
        second.close()
    }

    @Test("the note's line, byte for byte")
    func knownAnswer() throws {
        let (environment, table) = try open()
        let transactionID = try fill(environment, table)
        environment.close()
        var status = stat()
        #expect(stat(path + "/data.mdb", &status) == 0)
        let expected =
            "coffer trees-checked 1 \(status.st_dev) \(status.st_ino) \(status.st_size) \(status.st_ctim.tv_sec) \(status.st_ctim.tv_nsec) \(transactionID)\n"
        let written = try String(
            contentsOf: directory.url.appendingPathComponent(CheckedTrees.fileName),
            encoding: .utf8
        )
        // Padded with newlines to 160 bytes, so that each commit overwrites it in place.
        #expect(written == expected + String(repeating: "\n", count: 160 - expected.utf8.count))
    }

    @Test("a longer note left there (torn, or of another kind) is overwritten in place; its first line counts")
    func overwrittenInPlace() throws {
        let (first, table) = try open()
        _ = try fill(first, table)
        first.close()
        let note = directory.url.appendingPathComponent(CheckedTrees.fileName)
        try Data(("garbage\n" + String(repeating: "x", count: 400)).utf8).write(to: note)
        let (second, sameTable) = try open()
        try second.write { txn in try txn.put(sameTable, key: [1], value: [1]) }
        second.close()
        #expect(second.firstChangeCheck == .walked)
        #expect(CheckedTrees.vouches(directory: path, transactionID: try committed()))
        #expect(try Data(contentsOf: note).count == 408)
    }
}
