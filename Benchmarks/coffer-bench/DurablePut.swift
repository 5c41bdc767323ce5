import Coffer
import Foundation

extension BlobSuite {
    static let diskWrite = "blobs/disk sequential write (the put's file, 4 MiB writes, one fdatasync)"
    static let putBound = "blobs/pipeline bound of the put's file (chunk+hash+AES, all cores, no storage)"
    static let largeDiskWrite = "blobs/disk sequential write (the large blob's bytes, 4 MiB writes, one fdatasync)"

    /// A file on disk that figures read, with its size known once prepared.
    protocol SourceFile: SharedFixture {
        var path: String { get }
        var size: Int { get }
    }

    /// A file of random bytes (nothing to compress or deduplicate), made once for the figures that
    /// share it and removed by the last.
    final class IncompressibleFile: SourceFile {
        let size: Int
        let path = scratchDirectory().path + ".random"
        private var users = 0

        init(size: Int) { self.size = size }

        func prepare() throws {
            users += 1
            guard users == 1 else { return }
            try Data(Corpus.random(size)).write(to: URL(fileURLWithPath: path))
        }

        func release() {
            users -= 1
            if users == 0 { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// The corpus as one large file (``Corpus/largeFile()``), the content of the large blob's get.
    final class LargeFile: SourceFile {
        let corpus: Corpus
        private(set) var path = ""
        var size: Int { corpus.totalBytes }

        init(corpus: Corpus) { self.corpus = corpus }

        func prepare() throws { path = try corpus.largeFile() }
        func release() { corpus.remove() }
    }

    /// `coffer put` of incompressible data, durable, into a fresh vault each run (so every chunk is
    /// new), beside the disk writing the same file the way `dd bs=4M conv=fdatasync` does, and beside
    /// the write pipeline on the same file with no storage (what the two cores can do at best).
    struct DurablePut: Benchmark {
        let file: IncompressibleFile
        var scratch: Scratch?
        var name: String { "blobs/put of incompressible data (a fresh vault, durable)" }
        var bytesPerRun: Int { file.size }
        var reference: String? { BlobSuite.diskWrite }
        var references: [String] { [BlobSuite.diskWrite, BlobSuite.putBound] }

        mutating func setUp() throws { try file.prepare() }

        mutating func prepareRun() throws {
            scratch?.remove()
            scratch = try Scratch()
            // The last round's writes still on their way to the disk would slow this one's syncs.
            sync()
        }

        mutating func run() throws {
            try scratch!.vault.blobs.write("put", contentsOf: URL(fileURLWithPath: file.path))
        }

        mutating func tearDown() throws {
            scratch?.remove()
            file.release()
        }
    }

    /// The write pipeline bound of ``DurablePut``'s file: chunking, ids, the compressibility
    /// estimate, zstd where it would pay, AES-GCM and the content digest on all cores, no storage.
    struct PutBound: Benchmark {
        let file: IncompressibleFile
        var name: String { BlobSuite.putBound }
        var bytesPerRun: Int { file.size }
        mutating func setUp() throws { try file.prepare() }
        mutating func tearDown() throws { file.release() }
        mutating func run() throws { _ = try PipelineBound.run(file: file.path) }
    }

    /// The disk's bound for writing a file's bytes durably (``DurablePut``, and a get to a file, which
    /// also ends with an `fsync`): the same file read and written in 4 MiB pieces to a new file
    /// beside the vaults, then `fdatasync`ed once.
    struct DiskWrite: Benchmark {
        let file: any SourceFile
        let name: String
        private let target = scratchDirectory()
        var bytesPerRun: Int { file.size }

        init(file: any SourceFile, name: String) {
            self.file = file
            self.name = name
        }

        mutating func setUp() throws { try file.prepare() }

        mutating func prepareRun() throws {
            try? FileManager.default.removeItem(at: target)
            // Every durable write starts with nothing of an earlier round left to write back.
            sync()
        }

        mutating func run() throws {
            let input = open(file.path, O_RDONLY)
            guard input >= 0 else { throw BenchmarkError("cannot open \(file.path)") }
            defer { close(input) }
            let output = open(target.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard output >= 0 else { throw BenchmarkError("cannot create \(target.path)") }
            defer { close(output) }
            var buffer = [UInt8](repeating: 0, count: 4 << 20)
            try buffer.withUnsafeMutableBytes { raw in
                while true {
                    let count = Glibc.read(input, raw.baseAddress, raw.count)
                    guard count >= 0 else { throw BenchmarkError("reading \(file.path) failed") }
                    if count == 0 { break }
                    var written = 0
                    while written < count {
                        let step = Glibc.write(output, raw.baseAddress! + written, count - written)
                        guard step > 0 else { throw BenchmarkError("writing \(target.path) failed") }
                        written += step
                    }
                }
            }
            guard fdatasync(output) == 0 else { throw BenchmarkError("fdatasync failed") }
        }

        mutating func tearDown() throws {
            try? FileManager.default.removeItem(at: target)
            file.release()
        }
    }
}
