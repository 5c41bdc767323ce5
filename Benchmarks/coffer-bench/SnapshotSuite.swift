import Coffer
import Foundation

/// Backup and restore of directory trees: Coffer's snapshots beside restic and borg doing the same
/// (each with its own repository in a temporary directory), when they are installed, and beside the
/// job's physical bounds measured in the same rounds: `tar | zstd` at Coffer's level on every core
/// (compression alone, for a backup) and `cp -a` of the tree (the file system's copy, for a
/// restore). Every run is a full backup into an empty repository (Coffer: the previous snapshot
/// forgotten first, so nothing is skipped as unchanged) and a restore into an empty directory.
///
/// Two trees: a generated one (many small text files, some medium binary-like ones and a few large
/// ones; `--corpus DIR` backs up DIR instead), and a real one (`--tree DIR`, else assembled from files
/// every machine with the toolchain has: the toolchain's libraries, `/usr/share/doc`, mostly gzip
/// files already, and `/usr/include`, text), whose figures are named "(real tree)": a generated
/// corpus flatters, as restic is slowest on many tiny files. Every backup starts with the tree in
/// the page cache.
enum SnapshotSuite {
    /// A figure's name for `tree`: `snapshots/<job>`, then " (real tree)" for the real one.
    static func name(_ job: String, _ tree: Tree) -> String { "snapshots/\(job)\(tree.label)" }
    static let resticBackup = "restic backup"
    static let resticRestore = "restic restore"
    static let cofferBackup = "coffer backup"
    static let cofferRestore = "coffer restore"
    static let compression = "tar | zstd -3, all cores (compression alone)"
    static let copy = "cp -a (the file system's copy)"

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

    static func benchmarks(quick: Bool, corpusDirectory: String?, realTree: String?) -> [any Benchmark] {
        let generated = Tree(
            source: corpusDirectory.map { .given($0) } ?? .generated(scale: quick ? 1 : 3),
            label: ""
        )
        let real = Tree(
            source: realTree.map { .given($0) } ?? .assembled(budget: quick ? 48 << 20 : 256 << 20),
            label: " (real tree)"
        )
        // A --cores run keeps restic even with --quick: its curve is one of the references.
        let hasRestic = (!quick || pinnedCores != nil) && Peer.find("restic") != nil
        let hasBorg = !quick && Peer.find("borg") != nil
        var benchmarks: [any Benchmark] = []
        for tree in [generated, real] {
            benchmarks.append(CofferBackup(tree: tree, hasRestic: hasRestic))
            benchmarks.append(CofferRestore(tree: tree, hasRestic: hasRestic))
            benchmarks.append(Bound(tree: tree, job: .compression))
            benchmarks.append(Bound(tree: tree, job: .copy))
            if hasRestic {
                benchmarks.append(PeerRun(tree: tree, tool: .restic, restoring: false))
                benchmarks.append(PeerRun(tree: tree, tool: .restic, restoring: true))
            }
            if hasBorg {
                benchmarks.append(PeerRun(tree: tree, tool: .borg, restoring: false))
                benchmarks.append(PeerRun(tree: tree, tool: .borg, restoring: true))
            }
        }
        return benchmarks
    }

    /// A tree measured: generated or assembled once into a scratch directory, unless given.
    final class Tree {
        /// Where the tree comes from.
        enum Source {
            /// Made up, `scale` times the base set.
            case generated(scale: Int)
            /// Copied from files every machine with the toolchain has, up to `budget` bytes.
            case assembled(budget: Int)
            /// A directory given on the command line, backed up where it is.
            case given(String)
        }

        let source: Source
        /// Appended to the figures' names.
        let label: String
        private(set) var path = ""
        private(set) var bytes = 0
        private var made: URL?

        init(source: Source, label: String) {
            self.source = source
            self.label = label
        }

        func prepare() throws {
            guard path.isEmpty else { return }
            switch source {
            case .given(let directory):
                path = URL(fileURLWithPath: directory).standardizedFileURL.path
            case .generated(let scale):
                let root = scratchDirectory()
                made = root
                path = root.path
                try generate(at: root, scale: scale)
            case .assembled(let budget):
                let root = scratchDirectory()
                made = root
                path = root.path
                try assemble(at: root, budget: budget)
            }
            bytes = try Self.size(of: path)
        }

        func remove() {
            if let made { try? FileManager.default.removeItem(at: made) }
        }

        /// Per `scale`: 500 small text files (2–32 KiB) in 30 directories, 20 binary-like files of
        /// 256 KiB to 1 MiB, and 2 files of 8 MiB (one compressible, one random): about 40 MB.
        private func generate(at root: URL, scale: Int) throws {
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

        /// Copies regular files, in name order, from the toolchain's libraries, `/usr/share/doc` and
        /// `/usr/include`, an equal share of `budget` from each (the same tree on every run of a
        /// machine), keeping their relative paths.
        private func assemble(at root: URL, budget: Int) throws {
            let sources = ([Self.toolchainLibraries()].compactMap { $0 } + ["/usr/share/doc", "/usr/include"])
                .filter { FileManager.default.fileExists(atPath: $0) }
            guard !sources.isEmpty else { throw BenchmarkError("no directory to assemble a real tree from") }
            let share = budget / sources.count
            for (index, source) in sources.enumerated() {
                let top = root.appendingPathComponent("\(index)-" + URL(fileURLWithPath: source).lastPathComponent)
                var used = 0
                for (relative, size) in try Self.regularFiles(under: source) where used + size <= share {
                    let target = top.appendingPathComponent(relative)
                    try FileManager.default.createDirectory(
                        at: target.deletingLastPathComponent(),
                        withIntermediateDirectories: true
                    )
                    try FileManager.default.copyItem(atPath: source + "/" + relative, toPath: target.path)
                    used += size
                }
            }
        }

        /// The regular files under `directory` (not through symbolic links), by relative path, sorted.
        private static func regularFiles(under directory: String) throws -> [(String, Int)] {
            guard let walker = FileManager.default.enumerator(atPath: directory) else {
                throw BenchmarkError("cannot read \(directory)")
            }
            var files: [(String, Int)] = []
            while let relative = walker.nextObject() as? String {
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + relative),
                    attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                files.append((relative, attributes[.size] as? Int ?? 0))
            }
            return files.sorted { $0.0 < $1.0 }
        }

        /// The Swift toolchain's runtime libraries (`lib/swift/linux` beside the `swift` on PATH).
        private static func toolchainLibraries() -> String? {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            for directory in path.split(separator: ":") {
                let swift = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift")
                guard FileManager.default.isExecutableFile(atPath: swift.path) else { continue }
                let libraries = swift.resolvingSymlinksInPath().deletingLastPathComponent()
                    .appendingPathComponent("../lib/swift/linux").standardizedFileURL.path
                if FileManager.default.fileExists(atPath: libraries) { return libraries }
            }
            return nil
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
        let hasRestic: Bool
        var scratch: BlobSuite.Scratch?
        var name: String { SnapshotSuite.name(SnapshotSuite.cofferBackup, tree) }
        var reference: String? { references.first }
        var references: [String] {
            (hasRestic ? [SnapshotSuite.name(SnapshotSuite.resticBackup, tree)] : [])
                + [SnapshotSuite.name(SnapshotSuite.compression, tree)]
        }
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
        let hasRestic: Bool
        var scratch: BlobSuite.Scratch?
        var target: URL?
        var name: String { SnapshotSuite.name(SnapshotSuite.cofferRestore, tree) }
        var reference: String? { references.first }
        var references: [String] {
            (hasRestic ? [SnapshotSuite.name(SnapshotSuite.resticRestore, tree)] : [])
                + [SnapshotSuite.name(SnapshotSuite.copy, tree)]
        }
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

    /// A job's physical bound on the same tree: `tar | zstd` at Coffer's default level on every core,
    /// to `/dev/null` (compression alone), or `cp -a` into an empty directory (the file system's copy).
    struct Bound: Benchmark {
        enum Job { case compression, copy }
        let tree: Tree
        let job: Job
        var target: URL?
        var name: String {
            SnapshotSuite.name(job == .compression ? SnapshotSuite.compression : SnapshotSuite.copy, tree)
        }
        var bytesPerRun: Int { tree.bytes }

        mutating func setUp() throws { try tree.prepare() }

        mutating func tearDown() throws {
            if let target { try? FileManager.default.removeItem(at: target) }
            tree.remove()
        }

        mutating func prepareRun() throws {
            switch job {
            case .compression:
                try tree.warm()
            case .copy:
                if let target { try FileManager.default.removeItem(at: target) }
                target = scratchDirectory()
            }
        }

        mutating func run() throws {
            switch job {
            case .compression:
                let cores = pinnedCores ?? ProcessInfo.processInfo.activeProcessorCount
                try runPeer([
                    "bash", "-o", "pipefail", "-c", "tar -cf - -C \"$0\" . | zstd -q -T\"$1\" -3 > /dev/null",
                    tree.path, "\(cores)",
                ])
            case .copy:
                try runPeer(["cp", "-a", tree.path, target!.path])
            }
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
            case (.restic, false): return SnapshotSuite.name(SnapshotSuite.resticBackup, tree)
            case (.restic, true): return SnapshotSuite.name(SnapshotSuite.resticRestore, tree)
            case (.borg, false): return SnapshotSuite.name("borg backup", tree)
            case (.borg, true): return SnapshotSuite.name("borg restore", tree)
            }
        }
        var reference: String? {
            tool == .borg
                ? SnapshotSuite.name(restoring ? SnapshotSuite.cofferRestore : SnapshotSuite.cofferBackup, tree) : nil
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
