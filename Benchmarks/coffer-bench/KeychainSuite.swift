import Coffer
import Foundation

/// The keychain tier, each operation beside the same work on raw LMDB through the storage layer with
/// no cryptography: the same keys (32 B ids), records of the same size, the same index entries, the
/// same transactions. The ratio is what encryption, the blind index and decoding cost.
enum KeychainSuite {
    enum Operation: String, CaseIterable {
        case addBatched = "add (batched, one transaction)"
        case addDurable = "add (one durable transaction each)"
        case get = "get by primary key"
        case find = "find by attribute (1 of 20)"
        case update = "update value"
        case delete = "delete"
    }

    static func benchmarks(quick: Bool) -> [any Benchmark] {
        let count = quick ? 2000 : 10_000
        return Operation.allCases.flatMap { operation -> [any Benchmark] in
            // Operations that commit a durable transaction each are bounded by fsync, not by the work.
            let durable = [.addDurable, .update, .delete].contains(operation)
            let operations = durable ? (quick ? 200 : 1000) : count
            return [
                RawOperation(operation: operation, count: operations),
                KeychainOperation(operation: operation, count: operations),
            ]
        }
    }

    static func rawName(_ operation: Operation) -> String { "keychain/raw LMDB \(operation.rawValue)" }

    /// The name of the keychain's own figure for `operation`.
    static func name(_ operation: Operation) -> String { "keychain/\(operation.rawValue)" }

    /// A vault in a temporary directory with a cheap KDF (unlock cost is not what is measured).
    struct Scratch {
        let directory: URL
        let vault: Vault
        let keychain: Keychain

        init() throws {
            directory = scratchDirectory()
            var configuration = Vault.Configuration()
            configuration.kdf = .insecureFastForTesting
            configuration.accessGroups = ["bench"]
            configuration.initialMapSize = 1 << 30
            vault = try Vault.create(at: directory, passphrase: "bench", configuration: configuration)
            keychain = vault.keychain
        }

        func remove() {
            vault.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func item(_ index: Int, generation: Int = 0) -> KeychainItem {
        var item = KeychainItem(.genericPassword, value: Data("token-\(index)-\(generation)-0123456789abcdef".utf8))
        item.attributes.service = "service-\(index % 20)"
        item.attributes.account = "account-\(index)"
        item.attributes.label = "Benchmark item \(index)"
        return item
    }

    struct KeychainOperation: Benchmark {
        let operation: Operation
        let count: Int
        var name: String { KeychainSuite.name(operation) }
        var reference: String? { rawName(operation) }
        var operationsPerRun: Int { count }
        var scratch: Scratch?
        var generation = 0

        mutating func setUp() throws {
            let scratch = try Scratch()
            if operation != .addBatched && operation != .addDurable && operation != .delete {
                try scratch.keychain.add(contentsOf: (0..<count).map { item($0) })
            }
            self.scratch = scratch
        }

        /// Delete consumes its items: put them back before each run, untimed.
        mutating func prepareRun() throws {
            if operation == .delete { try scratch!.keychain.add(contentsOf: (0..<count).map { item($0) }) }
        }

        mutating func tearDown() throws { scratch?.remove() }

        mutating func run() throws {
            let keychain = scratch!.keychain
            generation += 1
            let base = generation * count
            switch operation {
            case .addBatched:
                try keychain.add(contentsOf: (0..<count).map { item(base + $0) })
            case .addDurable:
                for index in 0..<count { try keychain.add(item(base + index)) }
            case .get:
                for index in 0..<count {
                    _ = try keychain.password(service: "service-\(index % 20)", account: "account-\(index)")
                }
            case .find:
                for index in 0..<count {
                    var query = ItemQuery(.genericPassword)
                    query.attributes.account = "account-\(index)"
                    _ = try keychain.find(query)
                }
            case .update:
                for index in 0..<count {
                    var query = ItemQuery.genericPassword(service: "service-\(index % 20)", account: "account-\(index)")
                    query.limit = .all
                    try keychain.update(query, with: ItemUpdate(value: Data("new-\(generation)".utf8)))
                }
            case .delete:
                for index in 0..<count {
                    try keychain.delete(.genericPassword(service: "service-\(index % 20)", account: "account-\(index)"))
                }
            }
        }
    }

    /// The same work without cryptography: ids and index keys are plain hashes of the attributes,
    /// records are stored as plain bytes of the size a sealed record has, and each lookup is noted
    /// to the storage layer as the keychain notes it (``MappedPageBudget/reused``), so both live
    /// under the same bound on mapped pages.
    struct RawOperation: Benchmark {
        let operation: Operation
        let count: Int
        var name: String { rawName(operation) }
        var operationsPerRun: Int { count }
        var scratch: StorageSuite.Scratch?
        var index: Table?
        var generation = 0
        /// The size of a sealed benchmark item, measured once.
        static let recordSize = 5 + AESGCM.overhead + 24 + 3 * 30 + 50

        /// 32 bytes that look random, as a keyed hash's do: the keychain's ids and index prefixes land
        /// at random places in their trees, so the reference's keys must too (sequential keys would
        /// insert into one hot leaf page and measure a cheaper B-tree workload).
        static func hashBytes(_ seed: UInt64, count: Int) -> [UInt8] {
            var state = seed
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count)
            while bytes.count < count {
                // SplitMix64: a cheap mixer whose outputs are uniformly spread.
                state &+= 0x9E37_79B9_7F4A_7C15
                var mixed = state
                mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
                mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
                mixed ^= mixed >> 31
                withUnsafeBytes(of: mixed) { bytes.append(contentsOf: $0.prefix(count - bytes.count)) }
            }
            return bytes
        }

        static func id(_ index: Int) -> [UInt8] { hashBytes(UInt64(index), count: 32) }

        static func indexKeys(_ index: Int) -> [[UInt8]] {
            // Class, service, account, label, group entries: 16-byte prefix ‖ id, as in the keychain,
            // the prefix a hash of the tag and the value (one value for every item's class and group,
            // 20 services, one account and label per item).
            (0..<5).map { tag in
                let value = tag == 1 ? index % 20 : (tag == 0 || tag == 4 ? 0 : index)
                return hashBytes(UInt64(tag) << 56 ^ UInt64(value) ^ 0x5eed_0000_0000, count: 16) + id(index)
            }
        }

        let record = [UInt8](repeating: 0x5a, count: recordSize)

        mutating func setUp() throws {
            let scratch = try StorageSuite.Scratch()
            index = try scratch.environment.openTables(["index"], create: true)[0]
            self.scratch = scratch
            if operation != .addBatched && operation != .addDurable && operation != .delete { try put(0..<count) }
        }

        mutating func prepareRun() throws {
            if operation == .delete { try put(0..<count) }
        }

        mutating func tearDown() throws { scratch?.remove() }

        func put(_ range: Range<Int>) throws {
            let scratch = self.scratch!
            let index = self.index!
            let record = self.record
            try scratch.environment.write { txn in
                for item in range {
                    txn.noteScatteredTouch(.reused)
                    try txn.put(scratch.table, key: Self.id(item), value: record)
                    for key in Self.indexKeys(item) {
                        txn.noteScatteredTouch(.reused)
                        try txn.put(index, key: key, value: [UInt8]())
                    }
                }
            }
        }

        mutating func run() throws {
            let scratch = self.scratch!
            let table = scratch.table
            let index = self.index!
            generation += 1
            let base = generation * count
            switch operation {
            case .addBatched:
                try put(base..<(base + count))
            case .addDurable:
                for item in base..<(base + count) { try put(item..<(item + 1)) }
            case .get:
                for item in 0..<count {
                    _ = try scratch.environment.read { txn in
                        txn.noteScatteredTouch(.reused)
                        return try txn.get(table, key: Self.id(item))
                    }
                }
            case .find:
                for item in 0..<count {
                    let prefix = Array(Self.indexKeys(item)[2].prefix(16))
                    _ = try scratch.environment.read { txn in
                        var records: [[UInt8]] = []
                        txn.noteScatteredTouch(.reused)
                        try txn.forEach(in: index, prefix: prefix) { key, _ in
                            txn.noteScatteredTouch(.reused)
                            if let record = try txn.get(table, key: Array(key.dropFirst(16))) { records.append(record) }
                            return true
                        }
                        return records
                    }
                }
            case .update:
                for item in 0..<count {
                    try scratch.environment.write { txn in
                        txn.noteScatteredTouch(.reused)
                        guard var record = try txn.get(table, key: Self.id(item)) else { return }
                        record[0] ^= 1
                        for key in Self.indexKeys(item) {
                            txn.noteScatteredTouch(.reused)
                            try txn.delete(index, key: key)
                        }
                        txn.noteScatteredTouch(.reused)
                        try txn.put(table, key: Self.id(item), value: record)
                        for key in Self.indexKeys(item) {
                            txn.noteScatteredTouch(.reused)
                            try txn.put(index, key: key, value: [UInt8]())
                        }
                    }
                }
            case .delete:
                for item in 0..<count {
                    try scratch.environment.write { txn in
                        txn.noteScatteredTouch(.reused)
                        _ = try txn.get(table, key: Self.id(item))
                        try txn.delete(table, key: Self.id(item))
                        for key in Self.indexKeys(item) {
                            txn.noteScatteredTouch(.reused)
                            try txn.delete(index, key: key)
                        }
                    }
                }
            }
        }
    }
}
