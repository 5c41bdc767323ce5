import Coffer
import Foundation

/// The primitives of the blob write path, per core: what a 64 KiB chunk costs at each stage.
enum CryptoSuite {
    static let chunk = SecureRandom.bytes(count: 64 << 10)
    /// Random data for the chunker (no cut points are cheaper to find in real files).
    static let randomData = SecureRandom.bytes(count: 16 << 20)
    /// The size of a small keychain record.
    static let record = SecureRandom.bytes(count: 256)
    /// Log-like text: compressible, but not trivially.
    static let text: [UInt8] = {
        var bytes: [UInt8] = []
        var line = 0
        while bytes.count < 64 << 10 {
            bytes += Array("\(line) GET /files/\(line * 7919 % 1000).dat 200 \(line * 104_729 % 65_536) bytes\n".utf8)
            line += 1
        }
        return Array(bytes.prefix(64 << 10))
    }()

    static func benchmarks(quick: Bool) -> [any Benchmark] {
        let repeats = quick ? 64 : 512
        return [
            AESSeal(name: "64 KiB", message: chunk, repeats: repeats, reuse: true),
            AESSeal(name: "64 KiB", message: chunk, repeats: repeats, reuse: false),
            AESSeal(name: "256 B", message: record, repeats: repeats * 64, reuse: true),
            AESSeal(name: "256 B", message: record, repeats: repeats * 64, reuse: false),
            SmallMAC(repeats: repeats * 64),
            SmallOpen(repeats: repeats * 64),
            Digest(name: "crypto/sha-256 64 KiB", repeats: repeats),
            MAC(name: "crypto/hmac-sha256 64 KiB (chunk id)", repeats: repeats, reference: "crypto/sha-256 64 KiB"),
            Compress(level: 1, repeats: repeats / 4, reference: "compression/zstd-3 64 KiB text"),
            Compress(level: 3, repeats: repeats / 4, reference: nil),
            Compress(level: 9, repeats: repeats / 16, reference: "compression/zstd-3 64 KiB text"),
            Compress(level: 19, repeats: max(1, repeats / 128), reference: "compression/zstd-3 64 KiB text"),
            Chunking(passes: quick ? 1 : 4),
            KDF(),
        ]
    }

    struct AESSeal: Benchmark {
        let name: String
        let message: [UInt8]
        let repeats: Int
        let reuse: Bool
        var reference: String? = nil
        var bytesPerRun: Int { repeats * message.count }
        let key = SecureBytes.random(count: 32)
        var gcm: AESGCM?

        /// Sealing `message` `repeats` times; the new-context variant is compared with the reused one.
        init(name size: String, message: [UInt8], repeats: Int, reuse: Bool) {
            let reused = "crypto/aes-256-gcm seal \(size) (reused context)"
            self.name = reuse ? reused : "crypto/aes-256-gcm seal \(size) (new context each)"
            self.reference = reuse ? nil : reused
            self.message = message
            self.repeats = repeats
            self.reuse = reuse
        }

        mutating func setUp() throws { gcm = try AESGCM() }

        mutating func run() throws {
            for _ in 0..<repeats {
                let context = reuse ? gcm! : try AESGCM()
                _ = try context.seal(message, key: key, authenticating: [1, 2, 3])
            }
        }
    }

    /// What computing one item id costs: HMAC-SHA256 of a 60-byte canonical key, reused context.
    struct SmallMAC: Benchmark {
        let name = "crypto/hmac-sha256 60 B (item id)"
        let repeats: Int
        var operationsPerRun: Int { repeats }
        var mac: HMACSHA256?
        let message = [UInt8](repeating: 7, count: 60)
        mutating func setUp() throws { mac = try HMACSHA256(key: SecureBytes.random(count: 32)) }
        mutating func run() throws {
            for _ in 0..<repeats { _ = try mac!.authenticationCode(of: message) }
        }
    }

    /// What opening one item record costs: AES-256-GCM open of 200 bytes, reused context.
    struct SmallOpen: Benchmark {
        let name = "crypto/aes-256-gcm open 200 B (item record)"
        let repeats: Int
        var operationsPerRun: Int { repeats }
        let key = SecureBytes.random(count: 32)
        var gcm: AESGCM?
        var sealed: [UInt8] = []
        mutating func setUp() throws {
            gcm = try AESGCM()
            sealed = try gcm!.seal([UInt8](repeating: 1, count: 200), key: key, authenticating: [1, 2, 3])
        }
        mutating func run() throws {
            for _ in 0..<repeats { _ = try gcm!.open(sealed, key: key, authenticating: [1, 2, 3]) }
        }
    }

    struct Digest: Benchmark {
        let name: String
        let repeats: Int
        var bytesPerRun: Int { repeats * chunk.count }
        mutating func run() throws {
            let hasher = try SHA256()
            for _ in 0..<repeats {
                try hasher.update(chunk)
                _ = try hasher.finalize()
            }
        }
    }

    struct MAC: Benchmark {
        let name: String
        let repeats: Int
        let reference: String?
        var bytesPerRun: Int { repeats * chunk.count }
        mutating func run() throws {
            let mac = try HMACSHA256(key: SecureBytes.random(count: 32))
            for _ in 0..<repeats { _ = try mac.authenticationCode(for: chunk) }
        }
    }

    /// zstd at one level; the other levels are compared with level 3, Coffer's default.
    struct Compress: Benchmark {
        let level: Int
        let repeats: Int
        let reference: String?
        var name: String { "compression/zstd-\(level) 64 KiB text" }
        var bytesPerRun: Int { repeats * text.count }
        var compressor: ZstdCompressor?
        mutating func setUp() throws { compressor = try ZstdCompressor(level: level) }
        mutating func run() throws {
            for _ in 0..<repeats { _ = try compressor!.compress(text) }
        }
    }

    /// FastCDC over random data (no cut points are cheaper to find in real files).
    struct Chunking: Benchmark {
        let name = "chunking/fastcdc 16/64/256 KiB, random data"
        let passes: Int
        var chunker: FastCDC?
        var bytesPerRun: Int { passes * randomData.count }

        mutating func setUp() throws {
            chunker = FastCDC(gear: try GearTable(seed: SecureBytes.random(count: 32)))
        }

        mutating func run() throws {
            let chunker = self.chunker!
            for _ in 0..<passes { _ = randomData.withUnsafeBytes { chunker.chunkLengths(of: $0) } }
        }
    }

    struct KDF: Benchmark {
        let name = "crypto/scrypt unlock (N=2^15 r=8 p=1)"
        mutating func run() throws {
            _ = try Scrypt.deriveKey(
                password: Array("passphrase".utf8),
                salt: [UInt8](repeating: 1, count: 32),
                logN: 15,
                r: 8,
                p: 1
            )
        }
    }
}
