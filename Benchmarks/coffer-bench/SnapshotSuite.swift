import Coffer
import Foundation

/// Backup and restore of a directory tree: Coffer's snapshots beside restic and borg doing the same
/// (each with its own repository in a temporary directory), when they are installed. Every run is a
/// full backup into an empty repository (Coffer: the previous snapshot forgotten first, so nothing is
/// skipped as unchanged) and a restore into an empty directory.
///
/// The generated tree mixes many small text files, some medium binary-like ones and a few large
/// ones; `--corpus DIR` backs up DIR instead. Every backup starts with the tree in the page cache.
enum SnapshotSuite {
    static let restic = "snapshots/restic backup"
    static let resticRestore = "snapshots/restic restore"
    static let coffer = "snapshots/coffer backup"
    static let cofferRestore = "snapshots/coffer restore"

    /// The peers left out of this run, with why (or how to install them).
    static func skippedPeers(quick: Bool) -> [String] {
        // The peers take most of a run's time, so --quick (which must stay under a minute) leaves
        // them out and says so.
        if quick { return ["restic, borg and sqlcipher (run without --quick to measure them)"] }
        return [
            Peer.find("restic") == nil ? "restic (install: apt-get install restic)" : nil,
            Peer.find("borg") == nil ? "borg (install: apt-get install borgbackup)" : nil,
        ].compactMap { $0 }
    }

    static func benchmarks(quick: Bool, corpusDirectory: String?) -> [any Benchmark] {
        let tree = Tree(directory: corpusDirectory, scale: quick ? 1 : 3)
        var benchmarks: [any Benchmark] = []
        let hasRestic = !quick && Peer.find("restic") != nil
        let hasBorg = !quick && Peer.find("borg") != nil
        benchmarks.append(CofferBackup(tree: tree, reference: hasRestic ? restic : nil))
        benchmarks.append(CofferRestore(tree: tree, reference: hasRestic ? resticRestore : nil))
        if hasRestic {
            benchmarks.append(PeerRun(tree: tree, tool: .restic, restoring: false))
            benchmarks.append(PeerRun(tree: tree, tool: .restic, restoring: true))
        }
        if hasBorg {
            benchmarks.append(PeerRun(tree: tree, tool: .borg, restoring: false))
            benchmarks.append(PeerRun(tree: tree, tool: .borg, restoring: true))
        }
        return benchmarks
    }

    /// The tree measured: generated once into a scratch directory unless given.
    final class Tree {
        let given: String?
        let scale: Int
        private(set) var path = ""
        private(set) var bytes = 0
        private var generated: URL?

        init(directory: String?, scale: Int) {
            given = directory
            self.scale = scale
        }

        func prepare() throws {
            guard path.isEmpty else { return }
            if let given {
                path = URL(fileURLWithPath: given).standardizedFileURL.path
            } else {
                let root = scratchDirectory()
                generated = root
                path = root.path
                try generate(at: root)
            }
            bytes = try Self.size(of: path)
        }

        func remove() {
            if let generated { try? FileManager.default.removeItem(at: generated) }
        }

        /// Per `scale`: 500 small text files (2–32 KiB) in 30 directories, 20 binary-like files of
        /// 256 KiB to 1 MiB, and 2 files of 8 MiB (one compressible, one random): about 40 MB.
        private func generate(at root: URL) throws {
            var generator = SystemRandomNumberGenerator()
            let text = BlobSuite.Corpus.textLike(4 << 20)
            let binary = BlobSuite.Corpus.binaryLike(4 << 20)
            for copy in 0..<scale {
                for index in 0..<500 {
                    let directory = root.appendingPathComponent("set\(copy)/dir\(index % 30)")
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let length = Int.random(in: 2048...32768, using: &generator)
                    let start = Int.random(in: 0..<(text.count - length), using: &generator)
                    try Data(text[start..<(start + length)]).write(
                        to: directory.appendingPathComponent("note\(index).txt")
                    )
                }
                for index in 0..<20 {
                    let length = Int.random(in: 256 << 10...1 << 20, using: &generator)
                    let start = Int.random(in: 0..<(binary.count - length), using: &generator)
                    try Data(binary[start..<(start + length)]).write(
                        to: root.appendingPathComponent("set\(copy)/data\(index).bin")
                    )
                }
                for index in 0..<2 {
                    let bytes = index % 2 == 0 ? BlobSuite.Corpus.textLike(8 << 20) : BlobSuite.Corpus.random(8 << 20)
                    try Data(bytes).write(to: root.appendingPathComponent("set\(copy)/large\(index).dat"))
                }
            }
        }

        /// Reads every file of the tree, so the next backup finds it in the page cache whoever read it
        /// last: borg drops each file it reads from the cache (`posix_fadvise(DONTNEED)`), which left
        /// the backup after it reading from the disk while the others read from memory.
        func warm() throws {
            guard let walker = FileManager.default.enumerator(atPath: path) else {
                throw BenchmarkError("cannot read \(path)")
            }
            while let relative = walker.nextObject() as? String {
                let file = path + "/" + relative
                if (try FileManager.default.attributesOfItem(atPath: file))[.type] as? FileAttributeType == .typeRegular
                {
                    _ = try Data(contentsOf: URL(fileURLWithPath: file))
                }
            }
        }

        static func size(of path: String) throws -> Int {
            var total = 0
            guard let walker = FileManager.default.enumerator(atPath: path) else {
                throw BenchmarkError("cannot read \(path)")
            }
            while let relative = walker.nextObject() as? String {
                let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + relative)
                if attributes[.type] as? FileAttributeType == .typeRegular { total += attributes[.size] as? Int ?? 0 }
            }
            return total
        }
    }

    struct CofferBackup: Benchmark {
        let tree: Tree
        let reference: String?
        var scratch: BlobSuite.Scratch?
        var name: String { SnapshotSuite.coffer }
        var bytesPerRun: Int { tree.bytes }

        mutating func setUp() throws {
            try tree.prepare()
            scratch = try BlobSuite.Scratch()
        }

        mutating func tearDown() throws {
            scratch?.remove()
            // Tear-down comes after every run of every benchmark, so the shared tree can go now.
            tree.remove()
        }

        mutating func prepareRun() throws {
            for snapshot in try scratch!.vault.snapshots.list() { try scratch!.vault.snapshots.forget(snapshot.id) }
            try tree.warm()
        }

        mutating func run() throws {
            _ = try scratch!.vault.snapshots.backup(directory: URL(fileURLWithPath: tree.path), name: "bench")
        }
    }

    struct CofferRestore: Benchmark {
        let tree: Tree
        let reference: String?
        var scratch: BlobSuite.Scratch?
        var target: URL?
        var name: String { SnapshotSuite.cofferRestore }
        var bytesPerRun: Int { tree.bytes }

        mutating func setUp() throws {
            try tree.prepare()
            scratch = try BlobSuite.Scratch()
            _ = try scratch!.vault.snapshots.backup(directory: URL(fileURLWithPath: tree.path), name: "bench")
        }

        mutating func tearDown() throws {
            scratch?.remove()
            if let target { try? FileManager.default.removeItem(at: target) }
            tree.remove()
        }

        mutating func prepareRun() throws {
            if let target { try FileManager.default.removeItem(at: target) }
            target = scratchDirectory()
        }

        mutating func run() throws {
            _ = try scratch!.vault.snapshots.restore("bench", to: target!)
        }
    }

    /// restic or borg, run as their users run them.
    enum Peer {
        case restic
        case borg

        static func find(_ name: String) -> String? {
            ["/usr/bin/", "/usr/local/bin/", "/bin/"].map { $0 + name }.first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
        }
    }

    struct PeerRun: Benchmark {
        let tree: Tree
        let tool: Peer
        let restoring: Bool
        var work: URL?
        var name: String {
            switch (tool, restoring) {
            case (.restic, false): return SnapshotSuite.restic
            case (.restic, true): return SnapshotSuite.resticRestore
            case (.borg, false): return "snapshots/borg backup"
            case (.borg, true): return "snapshots/borg restore"
            }
        }
        var reference: String? {
            tool == .borg ? (restoring ? SnapshotSuite.cofferRestore : SnapshotSuite.coffer) : nil
        }
        var bytesPerRun: Int { tree.bytes }

        var repository: URL { work!.appendingPathComponent("repo") }
        var target: URL { work!.appendingPathComponent("restored") }

        var environment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["RESTIC_PASSWORD"] = "bench"
            environment["RESTIC_CACHE_DIR"] = work!.appendingPathComponent("cache").path
            environment["BORG_PASSPHRASE"] = "bench"
            environment["BORG_BASE_DIR"] = work!.appendingPathComponent("borg-home").path
            environment["BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK"] = "yes"
            return environment
        }

        mutating func setUp() throws {
            try tree.prepare()
            work = scratchDirectory()
            try FileManager.default.createDirectory(at: work!, withIntermediateDirectories: true)
            if restoring { try freshRepository(withBackup: true) }
        }

        mutating func tearDown() throws {
            if let work { try? FileManager.default.removeItem(at: work) }
            tree.remove()
        }

        mutating func prepareRun() throws {
            if restoring {
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            } else {
                try freshRepository(withBackup: false)
                try tree.warm()
            }
        }

        mutating func run() throws {
            switch (tool, restoring) {
            case (.restic, false):
                try execute(["restic", "-r", repository.path, "backup", "-q", tree.path])
            case (.restic, true):
                try execute(["restic", "-r", repository.path, "restore", "latest", "-q", "--target", target.path])
            case (.borg, false):
                try execute(["borg", "create", repository.path + "::bench", tree.path])
            case (.borg, true):
                try execute(["borg", "extract", repository.path + "::bench"], in: target)
            }
        }

        private func freshRepository(withBackup: Bool) throws {
            try? FileManager.default.removeItem(at: repository)
            switch tool {
            case .restic: try execute(["restic", "-r", repository.path, "init", "-q"])
            case .borg: try execute(["borg", "init", "-e", "repokey", repository.path])
            }
            if withBackup {
                switch tool {
                case .restic: try execute(["restic", "-r", repository.path, "backup", "-q", tree.path])
                case .borg: try execute(["borg", "create", repository.path + "::bench", tree.path])
                }
            }
        }

        private func execute(_ arguments: [String], in directory: URL? = nil) throws {
            try runPeer(arguments, environment: environment, directory: directory)
        }
    }
}
