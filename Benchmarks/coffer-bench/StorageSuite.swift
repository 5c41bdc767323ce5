import Coffer
import Foundation

/// The storage layer: LMDB puts batched in one transaction, durable single-put commits, and random gets.
enum StorageSuite {
    static func benchmarks(quick: Bool) -> [any Benchmark] {
        let count = quick ? 20_000 : 100_000
        return [
            Puts(name: "storage/batched puts (100 B values)", count: count),
            Commits(name: "storage/durable commits (1 put each)", count: quick ? 200 : 1000),
            RecordNotes(name: "storage/commit record (what each durable commit adds)", count: quick ? 20_000 : 100_000),
            Gets(name: "storage/random gets", count: count),
        ]
    }

    /// A fresh environment in a temporary directory, removed at tear-down.
    struct Scratch {
        let directory: URL
        let environment: Environment
        let table: Table

        init() throws {
            directory = scratchDirectory()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            environment = try Environment(
                directory: directory,
                options: .init(createIfMissing: true, initialMapSize: 1 << 30)
            )
            table = try environment.openTables(["bench"], create: true)[0]
        }

        func remove() {
            environment.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func key(_ index: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(index).bigEndian, Array.init) }

    struct Puts: Benchmark {
        let name: String
        let count: Int
        var operationsPerRun: Int { count }
        var scratch: Scratch?
        let value = [UInt8](repeating: 7, count: 100)
        mutating func setUp() throws { scratch = try Scratch() }
        mutating func tearDown() throws { scratch?.remove() }
        mutating func run() throws {
            let scratch = self.scratch!
            try scratch.environment.write { txn in
                for index in 0..<count { try txn.put(scratch.table, key: key(index), value: value) }
            }
        }
    }

    struct Commits: Benchmark {
        let name: String
        let count: Int
        var operationsPerRun: Int { count }
        var scratch: Scratch?
        mutating func setUp() throws { scratch = try Scratch() }
        mutating func tearDown() throws { scratch?.remove() }
        mutating func run() throws {
            let scratch = self.scratch!
            for index in 0..<count {
                try scratch.environment.write { txn in try txn.put(scratch.table, key: key(index), value: [1]) }
            }
        }
    }

    /// The commit record's share of a commit (``CommitRecord/note(transactionID:dataFile:pageSize:)``,
    /// which a durable commit runs once it returns): read the meta page, pick a slot, write it.
    struct RecordNotes: Benchmark {
        let name: String
        let count: Int
        var operationsPerRun: Int { count }
        var reference: String? { "storage/durable commits (1 put each)" }
        var scratch: Scratch?
        var transactionID: UInt64 = 0
        mutating func setUp() throws {
            let scratch = try Scratch()
            transactionID = try scratch.environment.write { txn in
                try txn.put(scratch.table, key: key(0), value: [1])
                return txn.snapshotID
            }
            self.scratch = scratch
        }
        mutating func tearDown() throws { scratch?.remove() }
        mutating func run() throws {
            let dataFile = scratch!.directory.appendingPathComponent("data.mdb").path
            for _ in 0..<count {
                guard CommitRecord.note(transactionID: transactionID, dataFile: dataFile, pageSize: 4096) else {
                    throw CofferError(.internalError, "the commit record was not written")
                }
            }
        }
    }

    struct Gets: Benchmark {
        let name: String
        let count: Int
        var operationsPerRun: Int { count }
        var scratch: Scratch?
        var order: [Int] = []
        mutating func setUp() throws {
            let scratch = try Scratch()
            let count = self.count
            try scratch.environment.write { txn in
                for index in 0..<count {
                    try txn.put(scratch.table, key: key(index), value: [UInt8](repeating: 7, count: 100))
                }
            }
            self.scratch = scratch
            order = (0..<count).shuffled()
        }
        mutating func tearDown() throws { scratch?.remove() }
        mutating func run() throws {
            let scratch = self.scratch!
            let order = self.order
            try scratch.environment.read { txn in
                for index in order { _ = try txn.withValue(scratch.table, key: key(index)) { $0.count } }
            }
        }
    }
}
