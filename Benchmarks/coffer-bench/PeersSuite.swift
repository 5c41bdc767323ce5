import Foundation

/// Small encrypted records in SQLCipher (SQLite with page encryption), driven through its command-line
/// shell, beside the keychain's batched add and get in the same run. Each run starts the shell once
/// (its key derivation included) and runs one script: a transaction of inserts of 200-byte values
/// under 32-byte keys (the size of a keychain record and id), or a select by key for each of them.
/// Measured only when `sqlcipher` is installed, and not with `--quick`.
enum PeersSuite {
    static let installHint = "sqlcipher (install: apt-get install sqlcipher)"

    static func skippedPeers(quick: Bool) -> [String] {
        if quick { return [] }
        return SnapshotSuite.Peer.find("sqlcipher") == nil ? [installHint] : []
    }

    static func benchmarks(quick: Bool) -> [any Benchmark] {
        guard !quick, let shell = SnapshotSuite.Peer.find("sqlcipher") else { return [] }
        let database = Database(shell: shell, count: 10_000)
        return [Insert(database: database), Select(database: database)]
    }

    /// A database in a scratch directory, its keys and the two scripts.
    final class Database {
        let shell: String
        let count: Int
        let directory = scratchDirectory()
        /// The database the inserts recreate each run, and the one the selects read.
        var insertFile: URL { directory.appendingPathComponent("insert.db") }
        var selectFile: URL { directory.appendingPathComponent("select.db") }
        private(set) var insertScript = Data()
        private(set) var selectScript = Data()
        private var users = 0

        init(shell: String, count: Int) {
            self.shell = shell
            self.count = count
        }

        func prepare() throws {
            users += 1
            guard insertScript.isEmpty else { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let keys = (0..<count).map { _ in hex(BlobSuite.Corpus.random(32)) }
            var insert = "PRAGMA key='coffer-bench';\nCREATE TABLE items(id BLOB PRIMARY KEY, value BLOB);\nBEGIN;\n"
            for key in keys {
                insert += "INSERT INTO items VALUES(X'\(key)', X'\(hex(BlobSuite.Corpus.random(200)))');\n"
            }
            insert += "COMMIT;\n"
            insertScript = Data(insert.utf8)
            var select = "PRAGMA key='coffer-bench';\n"
            for key in keys { select += "SELECT length(value) FROM items WHERE id = X'\(key)';\n" }
            selectScript = Data(select.utf8)
        }

        func release() {
            users -= 1
            if users == 0 { try? FileManager.default.removeItem(at: directory) }
        }

        /// Runs the shell on `file` with `script` on standard input (an error message is a failure).
        func run(_ script: Data, on file: URL) throws {
            try runPeer([shell, file.path], input: script, strict: true)
        }

        private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    }

    struct Insert: Benchmark {
        let database: Database
        var name: String { "peers/sqlcipher insert (batched, one transaction, via its shell)" }
        var operationsPerRun: Int { database.count }
        var reference: String? { KeychainSuite.name(.addBatched) }
        mutating func setUp() throws { try database.prepare() }
        mutating func tearDown() throws { database.release() }
        mutating func prepareRun() throws { try? FileManager.default.removeItem(at: database.insertFile) }
        mutating func run() throws { try database.run(database.insertScript, on: database.insertFile) }
    }

    struct Select: Benchmark {
        let database: Database
        var name: String { "peers/sqlcipher select by primary key (via its shell)" }
        var operationsPerRun: Int { database.count }
        var reference: String? { KeychainSuite.name(.get) }
        mutating func setUp() throws {
            try database.prepare()
            try database.run(database.insertScript, on: database.selectFile)
        }
        mutating func tearDown() throws { database.release() }
        mutating func run() throws { try database.run(database.selectScript, on: database.selectFile) }
    }
}
