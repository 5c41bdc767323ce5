import CofferTestSupport
import Foundation
import Glibc
import Testing

@testable import Coffer

@Suite("LMDB storage layer")
struct EnvironmentTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    func makeEnvironment(initialMapSize: Int = 1 << 20, tables: [String] = ["t"]) throws -> (Environment, [Table]) {
        let environment = try Environment(
            directory: directory.url,
            options: .init(createIfMissing: true, initialMapSize: initialMapSize)
        )
        return (environment, try environment.openTables(tables, create: true))
    }

    @Test("put, get, contains, count, overwrite and delete; not found is nil")
    func basics() throws {
        let (environment, tables) = try makeEnvironment()
        let table = tables[0]
        try environment.write { (txn) throws in
            #expect(try txn.put(table, key: [1], value: [10]))
            #expect(try txn.put(table, key: [2], value: [20]))
            #expect(try !txn.put(table, key: [1], value: [99], overwrite: false))
        }
        try environment.read { (txn) throws in
            #expect(try txn.get(table, key: [1]) == [10])
            #expect(try txn.get(table, key: [3]) == nil)
            #expect(try txn.contains(table, key: [2]))
            #expect(try txn.count(table) == 2)
            #expect(try txn.withValue(table, key: [2]) { $0.count } == 1)
        }
        try environment.write { (txn) throws in
            #expect(try txn.delete(table, key: [1]))
            #expect(try !txn.delete(table, key: [1]))
        }
        #expect(try environment.read { try $0.count(table) } == 1)
    }

    @Test("pages: small values sit in leaves, a large one takes the overflow pages OVPAGES predicts")
    func tablePages() throws {
        let (environment, tables) = try makeEnvironment(initialMapSize: 8 << 20)
        let table = tables[0]
        let key = [UInt8](repeating: 1, count: 32)
        try environment.write { (txn) throws in
            for index in 0..<10 { try txn.put(table, key: [UInt8(index)], value: [UInt8](repeating: 0, count: 100)) }
        }
        let small = try environment.read { try $0.pages(table) }
        #expect(small.entries == 10)
        #expect(small.leafPages == 1)
        #expect(small.overflowPages == 0)
        #expect(small.depth == 1)
        #expect(small.bytes == Int64(small.pageSize))

        let pageSize = small.pageSize
        for size in [100, 1_990, 2_000, 5_000, 3 * pageSize] {
            try environment.write { (txn) throws in
                try txn.put(table, key: key, value: [UInt8](repeating: 7, count: size))
            }
            let pages = try environment.read { try $0.pages(table) }
            let predicted = TablePages.overflowPages(valueSize: size, keySize: key.count, pageSize: pageSize)
            #expect(pages.overflowPages == predicted, "a value of \(size) bytes")
        }
        // A value of exactly three pages needs a fourth for the overflow page's header.
        #expect(TablePages.overflowPages(valueSize: 3 * pageSize, keySize: 32, pageSize: pageSize) == 4)
        #expect(TablePages.overflowPages(valueSize: 100, keySize: 32, pageSize: pageSize) == 0)
    }

    @Test("lookups over the budget in one environment drop the map pages of every open environment")
    func mapDropsAreShared() throws {
        // Two environments in one process: statm counts both maps together, so the pages an idle
        // one holds count against the busy one, and dropping only the busy one's would free nothing.
        let otherDirectory = try TemporaryDirectory()
        let options = Environment.Options(createIfMissing: true, initialMapSize: 128 << 20)
        let busy = try Environment(directory: directory.url, options: options)
        let idle = try Environment(directory: otherDirectory.url, options: options)
        defer {
            busy.close()
            idle.close()
        }
        let value = [UInt8](repeating: 7, count: 1 << 20)
        func fill(_ environment: Environment, megabytes: Int) throws -> Table {
            let table = try environment.openTables(["t"], create: true)[0]
            try environment.write { txn in
                for key in 0..<megabytes { try txn.put(table, key: [UInt8(key)], value: value) }
            }
            return table
        }
        let busyTable = try fill(busy, megabytes: 24)
        let idleTable = try fill(idle, megabytes: 48)
        busy.releaseMappedPages()
        // The idle environment maps all of its 48 MiB, three times the read-once budget, then rests.
        let sum = try idle.read { txn in
            try (0..<48).reduce(0) { sum, key in
                try sum + txn.withValue(idleTable, key: [UInt8(key)]) { bytes in
                    stride(from: 0, to: bytes.count, by: 4096).reduce(0) { $0 + Int(bytes[$1]) }
                }!
            }
        }
        #expect(sum == 48 * 256 * 7)
        let idleDropsBefore = idle.mapDropCount
        try busy.read { txn in
            for key in 0..<24 {
                _ = try txn.withValue(busyTable, key: [UInt8(key)]) { $0[0] }
                txn.noteScatteredTouch()
            }
        }
        #expect(idle.mapDropCount > idleDropsBefore)
    }

    @Test("a transaction keeps the largest mapped-page budget its work named")
    func budgetInUse() throws {
        let (environment, tables) = try makeEnvironment()
        try environment.read { txn in
            #expect(txn.budgetInUse.current == .readOnce)
            txn.noteScatteredTouch(.reused)
            txn.noteScatteredTouch()
            #expect(txn.budgetInUse.current == .reused)
            _ = try txn.get(tables[0], key: [1])
        }
        #expect(MappedPageBudget.readOnce.bytes == 16 << 20 && MappedPageBudget.readOnce.checkInterval == 2)
        #expect(MappedPageBudget.reused.bytes == 64 << 20 && MappedPageBudget.reused.checkInterval == 8)
    }

    @Test("a write that throws is aborted: none of its changes are visible")
    func abortOnThrow() throws {
        struct Boom: Error {}
        let (environment, tables) = try makeEnvironment()
        #expect(throws: Boom.self) {
            try environment.write { (txn) throws in
                try txn.put(tables[0], key: [1], value: [1])
                throw Boom()
            }
        }
        #expect(try environment.read { try $0.get(tables[0], key: [1]) } == nil)
    }

    @Test("forEach walks keys in order, from a start key, within a prefix, and stops when asked")
    func cursors() throws {
        let (environment, tables) = try makeEnvironment()
        let table = tables[0]
        let keys: [[UInt8]] = [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [3]]
        try environment.write { (txn) throws in for key in keys.shuffled() { try txn.put(table, key: key, value: key) }
        }
        func collect(from start: [UInt8] = [], prefix: [UInt8] = [], limit: Int = .max) throws -> [[UInt8]] {
            var seen: [[UInt8]] = []
            try environment.read { (txn) throws in
                try txn.forEach(in: table, from: start, prefix: prefix) { key, value in
                    #expect(Array(key) == Array(value))
                    seen.append(Array(key))
                    return seen.count < limit
                }
            }
            return seen
        }
        #expect(try collect() == keys)
        #expect(try collect(prefix: [1]) == [[1, 1], [1, 2], [1, 3]])
        #expect(try collect(from: [1, 2], prefix: [1]) == [[1, 2], [1, 3]])
        #expect(try collect(from: [2]) == [[2, 1], [2, 2], [3]])
        #expect(try collect(prefix: [4]).isEmpty)
        #expect(try collect(limit: 2) == [[1, 1], [1, 2]])
    }

    @Test("the map grows on MDB_MAP_FULL, within one transaction and across many, losing nothing")
    func mapGrowth() throws {
        let (environment, tables) = try makeEnvironment(initialMapSize: 64 << 10)
        let table = tables[0]
        let startSize = environment.mapSize
        let value = [UInt8](repeating: 0xab, count: 10_000)
        // One transaction far larger than the initial map: it is retried after growing.
        try environment.write { (txn) throws in
            for index in 0..<1000 {
                try txn.put(table, key: withUnsafeBytes(of: UInt32(index).bigEndian, Array.init), value: value)
            }
        }
        // Many small transactions.
        for index in 1000..<1500 {
            try environment.write { (txn) throws in
                try txn.put(table, key: withUnsafeBytes(of: UInt32(index).bigEndian, Array.init), value: value)
            }
        }
        #expect(environment.growths > 0)
        #expect(environment.mapSize > startSize)
        try environment.read { (txn) throws in
            #expect(try txn.count(table) == 1500)
            #expect(try txn.get(table, key: withUnsafeBytes(of: UInt32(1234).bigEndian, Array.init)) == value)
        }
    }

    @Test("readers on other threads keep working while writers grow the map")
    func concurrentGrowth() throws {
        let (environment, tables) = try makeEnvironment(initialMapSize: 64 << 10)
        let table = tables[0]
        try environment.write { (txn) throws in try txn.put(table, key: [0], value: [0]) }
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            do {
                for round in 0..<100 {
                    if worker % 2 == 0 {
                        try environment.write { (txn) throws in
                            try txn.put(
                                table,
                                key: [UInt8(worker), UInt8(round)],
                                value: [UInt8](repeating: 1, count: 4000)
                            )
                        }
                    } else {
                        let value = try environment.read { (txn) throws in try txn.get(table, key: [0]) }
                        if value != [0] { failures.record("reader saw \(String(describing: value))") }
                    }
                }
            } catch {
                failures.record("\(error)")
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all)")
        #expect(try environment.read { try $0.count(table) } == 1 + 4 * 100)
        #expect(environment.growths > 0)
    }

    /// Starts the fixture process in `mode` on the test directory and waits until it is ready.
    func startFixture(_ mode: String) throws -> Process {
        let process = Process()
        process.executableURL = try Products.executable("coffer-test-fixture")
        process.arguments = [mode, directory.url.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        #expect(line.hasPrefix("ready"), "fixture said: \(line)")
        return process
    }

    func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    @Test("a reader slot left by a killed process is cleared when the environment next opens")
    func staleReaderCheck() throws {
        let (environment, _) = try makeEnvironment()
        environment.close()
        // Another process keeps the environment open, so LMDB does not reset the reader table when the
        // crashed reader's slot is looked at: the situation mdb_reader_check exists for.
        let holder = try startFixture("hold-open")
        defer { stop(holder) }
        stop(try startFixture("hold-reader"))

        let reopened = try Environment(directory: directory.url, options: .init())
        #expect(reopened.staleReadersCleared == 1)
        reopened.close()
        let again = try Environment(directory: directory.url, options: .init())
        #expect(again.staleReadersCleared == 0)
    }

    @Test("a reader killed inside its transaction while a writer runs does not make the file grow without bound")
    func killedReaderPinsNothing() throws {
        let (environment, tables) = try makeEnvironment()
        let table = tables[0]
        func rewriteAll(_ round: Int) throws {
            try environment.write { (txn) throws in
                for key in 0..<256 {
                    try txn.put(
                        table,
                        key: [UInt8(key)],
                        value: [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 2000)
                    )
                }
            }
        }
        try rewriteAll(0)
        // This process keeps the environment open throughout, as a long-running app would: the
        // check at open never runs again.
        stop(try startFixture("hold-reader"))
        let dataFile = directory.path("data.mdb").path
        func fileSize() throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: dataFile)[.size] as? NSNumber)?.intValue ?? 0
        }
        let before = try fileSize()
        // 200 rounds overwrite about 200 MiB of pages in all; the live data stays about 1 MiB. With the
        // dead slot left in place, the file grew by 202 MiB; with the periodic check, by 13 MiB.
        for round in 1...200 { try rewriteAll(round) }
        let growth = try fileSize() - before
        #expect(growth < 24 << 20, "data.mdb grew by \(growth >> 20) MiB (about 200 MiB were overwritten)")
        #expect(environment.staleReadersClearedSinceOpen == 1)
        #expect(
            try environment.read { (txn) throws in try txn.get(table, key: [7]) }
                == [UInt8](repeating: 200, count: 2000)
        )
    }

    @Test("when the reader table is full of dead processes' slots, a new reader clears them and proceeds")
    func readersFullRecovery() throws {
        let environment = try Environment(
            directory: directory.url,
            options: .init(createIfMissing: true, maximumReaders: 2)
        )
        let table = try environment.openTables(["t"], create: true)[0]
        let holder = try startFixture("hold-open")
        defer { stop(holder) }
        stop(try startFixture("hold-reader"))
        stop(try startFixture("hold-reader"))
        #expect(try environment.read { (txn) throws in try txn.get(table, key: [1]) } == nil)
        #expect(environment.staleReadersClearedSinceOpen == 2)
    }

    @Test("opening a directory without data.mdb fails with noSuchFile and creates nothing")
    func openMissing() throws {
        let error = #expect(throws: LMDBError.self) { _ = try Environment(directory: directory.url, options: .init()) }
        #expect(error?.code == .noSuchFile)
        #expect(TemporaryDirectory.listing(directory.url).isEmpty)
        let missing = directory.path("absent")
        #expect(throws: LMDBError.self) {
            _ = try Environment(directory: missing, options: .init(createIfMissing: true))
        }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test("opening a data.mdb that is not LMDB fails with invalid and leaves no lock file behind")
    func openGarbage() throws {
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 * 31) })
        try garbage.write(to: directory.path("data.mdb"))
        let error = #expect(throws: LMDBError.self) { _ = try Environment(directory: directory.url, options: .init()) }
        #expect(error?.code == .invalid)
        #expect(TemporaryDirectory.listing(directory.url) == ["data.mdb"])
        #expect(try Data(contentsOf: directory.path("data.mdb")) == garbage)
    }

    @Test("opening a missing table fails with notFound naming it; create makes it")
    func missingTable() throws {
        let (environment, _) = try makeEnvironment()
        let error = #expect(throws: LMDBError.self) { _ = try environment.openTables(["other"], create: false) }
        #expect(error?.code == .notFound)
        #expect(error?.operation.contains("other") == true)
        #expect(try environment.openTables(["other"], create: true).count == 1)
    }

    @Test("files are created with mode 0600")
    func fileModes() throws {
        _ = try makeEnvironment()
        for name in ["data.mdb", "lock.mdb", "space-reserve"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.path(name).path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(name)")
        }
    }

    /// `name`'s size and the bytes of its allocated blocks.
    func allocation(_ name: String) throws -> (size: Int, allocated: Int) {
        var status = stat()
        #expect(stat(directory.path(name).path, &status) == 0, "\(name)")
        return (Int(status.st_size), Int(status.st_blocks) * 512)
    }

    @Test("lock.mdb has every block allocated, and the first commit makes an allocated space reserve")
    func allocatedFiles() throws {
        let (environment, _) = try makeEnvironment()
        let lock = try allocation("lock.mdb")
        #expect(lock.size > 0 && lock.allocated >= lock.size, "a sparse lock.mdb can kill a process on a full disk")
        let reserve = try allocation("space-reserve")
        #expect(reserve.size == SpaceReserve.smallest && reserve.allocated >= reserve.size, "a nearly empty file")
        // Deleted, it is made again by the next environment's first commit.
        try FileManager.default.removeItem(at: directory.path("space-reserve"))
        environment.close()
        let reopened = try Environment(directory: directory.url, options: .init())
        let table = try reopened.openTables(["t"], create: false)[0]
        try reopened.write { txn in try txn.put(table, key: [1], value: [2]) }
        #expect(try allocation("space-reserve").allocated >= SpaceReserve.smallest)
    }

    @Test("the space reserve's size: every tree page, the free list's share and a margin, within bounds")
    func spaceReserveSizes() {
        let page = 4096
        #expect(SpaceReserve.size(treePages: 3, dataPages: 8, pageSize: page) == 256 << 10)
        // The vault of 2,000 small files after `compact`: 95 tree pages in a data file of 916.
        #expect(SpaceReserve.size(treePages: 95, dataPages: 916, pageSize: page) == 113 * page)
        #expect(SpaceReserve.size(treePages: 600, dataPages: 25_000, pageSize: page) == 2 << 20)
    }

    @Test("the space reserve grows with the data file's trees, at the commit that grew it, and shrinks with them")
    func spaceReserveFollowsTrees() throws {
        let (environment, tables) = try makeEnvironment(initialMapSize: 16 << 20)
        #expect(try allocation("space-reserve").size == SpaceReserve.smallest)
        func reopenAndWrite(_ change: (Transaction, Table) throws -> Void) throws -> Int {
            let reopened = try Environment(directory: directory.url, options: .init())
            defer { reopened.close() }
            let table = try reopened.openTables(["t"], create: false)[0]
            try reopened.write { txn in try change(txn, table) }
            #expect(try reopened.spaceReserveSize().bytes == allocation("space-reserve").size)
            return try allocation("space-reserve").size
        }
        // 1 MiB of small records: some 300 leaf pages, as many as a deletion of them all copies.
        try environment.write { txn in
            for index in 0..<10_000 {
                try txn.put(tables[0], key: Array("key \(index)".utf8), value: [UInt8](repeating: 7, count: 80))
            }
        }
        // The data file grew by far more than an eighth: the commit that grew it sized the reserve.
        let sizedAtOnce = try allocation("space-reserve").size
        #expect(sizedAtOnce > 1 << 20, "\(sizedAtOnce)")
        environment.close()
        let grown = try reopenAndWrite { txn, table in try txn.put(table, key: [0], value: [0]) }
        #expect(grown > 1 << 20 && grown <= SpaceReserve.largest, "\(grown)")
        #expect(try allocation("space-reserve").allocated >= grown, "allocated in full")
        let shrunk = try reopenAndWrite { txn, table in
            for index in 0..<10_000 { try txn.delete(table, key: Array("key \(index)".utf8)) }
        }
        // The deleted leaves are free pages now: the trees, and so the reserve, are small again.
        #expect(shrunk < grown / 2, "\(shrunk) of \(grown)")
    }

    @Test("after close, transactions fail with closed; closing twice is harmless")
    func closed() throws {
        let (environment, tables) = try makeEnvironment()
        environment.close()
        environment.close()
        #expect(environment.isClosed)
        let error = #expect(throws: LMDBError.self) { try environment.read { try $0.get(tables[0], key: [1]) } }
        #expect(error?.code == .closed)
        #expect(error?.description.contains("closed") == true)
    }

    @Test("LMDB error codes carry LMDB's own text")
    func errorText() {
        #expect(LMDBError.Code.mapFull.description.contains("MDB_MAP_FULL"))
        #expect(LMDBError(.notFound, operation: "mdb_get(items)").description.hasPrefix("mdb_get(items): "))
    }
}
