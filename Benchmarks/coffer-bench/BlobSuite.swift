import Coffer
import Foundation

/// The blob tier on a corpus of files: write (new content), re-write of unchanged content (all dedup),
/// and read, each beside its pipeline bound measured in the same rounds: for writes the same chunking,
/// hashing, compression and encryption on all cores with no storage (``PipelineBound``), for reads
/// the same opening (AES-GCM, zstd, id check) and digest of chunks sealed in memory
/// (``ReadPipelineBound``).
///
/// The generated corpus mixes three kinds of content in equal parts: text-like (words, compresses
/// about 3×), binary-like (structured records with noise, about 1.5×) and incompressible (random).
/// `--corpus DIR` measures the regular files under DIR instead.
enum BlobSuite {
    static let bound = "blobs/pipeline bound (chunk+hash+zstd+AES, all cores, no storage)"
    static let readBound = "blobs/read pipeline bound (AES open+zstd+id check+digest, all cores, no storage)"

    static func benchmarks(quick: Bool, corpusDirectory: String?) -> [any Benchmark] {
        let corpus = Corpus(directory: corpusDirectory, partSize: quick ? 16 << 20 : 96 << 20)
        let incompressible = IncompressibleFile(size: quick ? 64 << 20 : 512 << 20)
        return [
            DiskWrite(file: incompressible, name: diskWrite),
            PutBound(file: incompressible),
            DurablePut(file: incompressible),
            Bound(corpus: corpus),
            ReadBound(corpus: corpus),
            Write(corpus: corpus, mode: .new),
            Write(corpus: corpus, mode: .sealedToClassKey),
            Write(corpus: corpus, mode: .unchanged),
            Read(corpus: corpus),
            LargeBound(corpus: corpus),
            DiskWrite(file: LargeFile(corpus: corpus), name: largeDiskWrite),
            LargeToFile(corpus: corpus),
            Rekey(corpus: corpus),
        ]
    }

    /// The files measured, generated into a scratch directory unless given.
    final class Corpus {
        let givenDirectory: String?
        let partSize: Int
        private(set) var files: [String] = []
        private(set) var totalBytes = 0
        private var generated: URL?

        init(directory: String?, partSize: Int) {
            givenDirectory = directory
            self.partSize = partSize
        }

        /// Lists or generates the files (once, however many benchmarks share the corpus).
        func prepare() throws {
            guard files.isEmpty else { return }
            if let givenDirectory {
                let root = URL(fileURLWithPath: givenDirectory)
                guard
                    let walker = FileManager.default.enumerator(
                        at: root,
                        includingPropertiesForKeys: [.isRegularFileKey]
                    )
                else { throw BenchmarkError("cannot read the corpus directory \(givenDirectory)") }
                for case let url as URL in walker
                where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                    files.append(url.path)
                }
                files.sort()
                guard !files.isEmpty else {
                    throw BenchmarkError("the corpus directory \(givenDirectory) has no files")
                }
            } else {
                let directory = scratchDirectory()
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                generated = directory
                for (name, bytes) in [
                    ("text", Self.textLike(partSize)), ("binary", Self.binaryLike(partSize)),
                    ("random", Self.random(partSize)),
                ] {
                    let url = directory.appendingPathComponent(name)
                    try Data(bytes).write(to: url)
                    files.append(url.path)
                }
            }
            totalBytes = try files.reduce(0) { total, path in
                total + ((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
            }
        }

        func remove() {
            if let generated { try? FileManager.default.removeItem(at: generated) }
            if let concatenated { try? FileManager.default.removeItem(atPath: concatenated) }
            concatenated = nil
        }

        /// The corpus's files one after another, as one large file (made once, removed with the corpus).
        private(set) var concatenated: String?

        /// ``concatenated``, made if it is not yet.
        func largeFile() throws -> String {
            if let concatenated { return concatenated }
            try prepare()
            let path = scratchDirectory().path + ".large"
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let output = FileHandle(forWritingAtPath: path)
            else { throw BenchmarkError("cannot create \(path)") }
            defer { try? output.close() }
            for file in files { try output.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: file))) }
            concatenated = path
            return path
        }

        static func textLike(_ count: Int) -> [UInt8] {
            var generator = SystemRandomNumberGenerator()
            let words = (0..<2000).map { _ in
                String(
                    (0..<Int.random(in: 2...10, using: &generator)).map { _ in
                        Character(UnicodeScalar(UInt8.random(in: 97...122, using: &generator)))
                    }
                )
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count + 16)
            while bytes.count < count {
                bytes.append(contentsOf: words[Int.random(in: 0..<words.count, using: &generator)].utf8)
                bytes.append(Int.random(in: 0..<12, using: &generator) == 0 ? 10 : 32)
            }
            return Array(bytes.prefix(count))
        }

        static func binaryLike(_ count: Int) -> [UInt8] {
            var generator = SystemRandomNumberGenerator()
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count + 32)
            var counter: UInt32 = 0
            while bytes.count < count {
                counter &+= UInt32.random(in: 1...4, using: &generator)
                withUnsafeBytes(of: counter.littleEndian) { bytes.append(contentsOf: $0) }
                withUnsafeBytes(of: UInt16(counter % 977).littleEndian) { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: [0, 0, 0x7F, 0xFF])
                for _ in 0..<6 { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
            }
            return Array(bytes.prefix(count))
        }

        static func random(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            var generator = SystemRandomNumberGenerator()
            bytes.withUnsafeMutableBytes { raw in
                for index in stride(from: 0, to: count - 7, by: 8) {
                    raw.storeBytes(of: generator.next() as UInt64, toByteOffset: index, as: UInt64.self)
                }
            }
            return bytes
        }
    }

    /// A vault in a temporary directory with a cheap KDF, removed at tear-down.
    struct Scratch {
        let directory: URL
        let vault: Vault

        init() throws {
            directory = scratchDirectory()
            var configuration = Vault.Configuration()
            configuration.kdf = .insecureFastForTesting
            configuration.initialMapSize = 4 << 30
            vault = try Vault.create(at: directory, passphrase: "bench", configuration: configuration)
        }

        func remove() {
            vault.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct Bound: Benchmark {
        let corpus: Corpus
        var name: String { BlobSuite.bound }
        var bytesPerRun: Int { corpus.totalBytes }
        mutating func setUp() throws { try corpus.prepare() }
        mutating func tearDown() throws { corpus.remove() }
        mutating func run() throws {
            for file in corpus.files { _ = try PipelineBound.run(file: file) }
        }
    }

    struct ReadBound: Benchmark {
        let corpus: Corpus
        var sealed: [ReadPipelineBound] = []
        var name: String { BlobSuite.readBound }
        var bytesPerRun: Int { corpus.totalBytes }
        mutating func setUp() throws {
            try corpus.prepare()
            sealed = try corpus.files.map { try ReadPipelineBound(file: $0) }
        }
        mutating func tearDown() throws {
            sealed = []
            corpus.remove()
        }
        mutating func run() throws {
            for bound in sealed { try bound.run() }
        }
    }

    static let write = "blobs/write (new content)"

    /// Writes of the corpus: new content; new content sealed to the class key (`completeUnlessOpen`,
    /// a key agreement per blob and chunk keys of its own, as a write-only client writes), beside
    /// the ordinary write; and unchanged content.
    struct Write: Benchmark {
        enum Mode { case new, sealedToClassKey, unchanged }
        let corpus: Corpus
        let mode: Mode
        var scratch: Scratch?
        var name: String {
            switch mode {
            case .new: return BlobSuite.write
            case .sealedToClassKey: return "blobs/write completeUnlessOpen (new content, sealed to the class key)"
            case .unchanged: return "blobs/re-write (unchanged content, all dedup)"
            }
        }
        var bytesPerRun: Int { corpus.totalBytes }
        var reference: String? { BlobSuite.bound }
        var references: [String] { [BlobSuite.bound] + (mode == .sealedToClassKey ? [BlobSuite.write] : []) }
        private var options: BlobWriteOptions {
            BlobWriteOptions(protection: mode == .sealedToClassKey ? .completeUnlessOpen : .afterFirstUnlock)
        }

        mutating func setUp() throws {
            try corpus.prepare()
            scratch = try Scratch()
        }

        mutating func tearDown() throws { scratch?.remove() }

        mutating func prepareRun() throws {
            let blobs = scratch!.vault.blobs
            switch mode {
            case .new, .sealedToClassKey:
                // Start empty, so every chunk is new.
                for blob in try blobs.list() { try blobs.delete(blob.name) }
            case .unchanged:
                for file in corpus.files where try !blobs.contains(file) {
                    try blobs.write(file, contentsOf: URL(fileURLWithPath: file))
                }
            }
        }

        mutating func run() throws {
            for file in corpus.files {
                try scratch!.vault.blobs.write(file, contentsOf: URL(fileURLWithPath: file), options: options)
            }
        }
    }

    struct Read: Benchmark {
        let corpus: Corpus
        var scratch: Scratch?
        var name: String { "blobs/read (whole blobs, digest checked)" }
        var bytesPerRun: Int { corpus.totalBytes }
        var reference: String? { BlobSuite.readBound }
        var sink: FileHandle?

        mutating func setUp() throws {
            try corpus.prepare()
            scratch = try Scratch()
            for file in corpus.files { try scratch!.vault.blobs.write(file, contentsOf: URL(fileURLWithPath: file)) }
            sink = FileHandle(forWritingAtPath: "/dev/null")
        }

        mutating func tearDown() throws { scratch?.remove() }

        mutating func run() throws {
            for file in corpus.files {
                try scratch!.vault.blobs.read(file, toFileDescriptor: sink!.fileDescriptor)
            }
        }
    }
}

extension BlobSuite {
    static let largeBound = "blobs/read pipeline bound, one large blob"

    /// The read pipeline bound of the corpus as one large file: the reference of ``LargeToFile``.
    struct LargeBound: Benchmark {
        let corpus: Corpus
        var sealed: ReadPipelineBound?
        var name: String { BlobSuite.largeBound }
        var bytesPerRun: Int { corpus.totalBytes }
        mutating func setUp() throws { sealed = try ReadPipelineBound(file: try corpus.largeFile()) }
        mutating func tearDown() throws {
            sealed = nil
            corpus.remove()
        }
        mutating func run() throws { try sealed!.run() }
    }

    /// A `get` of one large blob (the corpus as one file) to a file on disk, as `coffer get NAME FILE`
    /// does it: written under a temporary name, `fsync`ed and moved into place; beside the read
    /// pipeline with no storage, and beside the disk writing the same bytes durably.
    struct LargeToFile: Benchmark {
        let corpus: Corpus
        var scratch: Scratch?
        var target: URL?
        var name: String { "blobs/get of one large blob to a file" }
        var bytesPerRun: Int { corpus.totalBytes }
        var reference: String? { BlobSuite.largeBound }
        var references: [String] { [BlobSuite.largeBound, BlobSuite.largeDiskWrite] }

        mutating func setUp() throws {
            scratch = try Scratch()
            try scratch!.vault.blobs.write("large", contentsOf: URL(fileURLWithPath: try corpus.largeFile()))
            target = scratchDirectory()
        }

        mutating func tearDown() throws {
            scratch?.remove()
            if let target { try? FileManager.default.removeItem(at: target) }
            corpus.remove()
        }

        mutating func prepareRun() throws {
            if let target { try? FileManager.default.removeItem(at: target) }
            sync()
        }

        mutating func run() throws { _ = try scratch!.vault.blobs.read("large", to: target!) }
    }

    /// `rekey` of a vault holding the corpus as device-bound blobs: every chunk and manifest opened and
    /// sealed again under a fresh device root, in batches (each run starts another generation).
    struct Rekey: Benchmark {
        let corpus: Corpus
        var scratch: Scratch?
        var name: String { "blobs/rekey (device-bound corpus sealed again under a fresh root)" }
        var bytesPerRun: Int { corpus.totalBytes }
        var reference: String? { "blobs/read (whole blobs, digest checked)" }

        mutating func setUp() throws {
            try corpus.prepare()
            scratch = try Scratch()
            var options = BlobWriteOptions()
            options.scope = .deviceBound
            for file in corpus.files {
                try scratch!.vault.blobs.write(file, contentsOf: URL(fileURLWithPath: file), options: options)
            }
        }

        mutating func tearDown() throws { scratch?.remove() }

        mutating func run() throws { try scratch!.vault.rekey(passphrase: "bench") }
    }
}

/// A benchmark could not be set up.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
