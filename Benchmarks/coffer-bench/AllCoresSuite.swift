import Coffer
import Foundation

/// The blob path's primitives on every core at once, each beside the same work on one core in the
/// same rounds: the ratio says how well it scales (ideally the number of cores), and the figure is
/// what the parallel write pipeline can draw on.
enum AllCoresSuite {
    /// One primitive over 64 KiB messages: its single-core figure's name and the work of one core.
    enum Primitive: CaseIterable {
        case aesSeal
        case sha256
        case hmac
        case zstd3
        case fastCDC

        var singleCoreName: String {
            switch self {
            case .aesSeal: return "crypto/aes-256-gcm seal 64 KiB (reused context)"
            case .sha256: return "crypto/sha-256 64 KiB"
            case .hmac: return "crypto/hmac-sha256 64 KiB (chunk id)"
            case .zstd3: return "compression/zstd-3 64 KiB text"
            case .fastCDC: return "chunking/fastcdc 16/64/256 KiB, random data"
            }
        }

        /// Units of work per core per run, as many as the single-core figure does: 64 KiB messages, or
        /// for the chunker passes over ``CryptoSuite/randomData``.
        func messages(repeats: Int, quick: Bool) -> Int {
            switch self {
            case .zstd3: return repeats / 4
            case .fastCDC: return quick ? 1 : 4
            default: return repeats
            }
        }

        /// The bytes one unit of work covers.
        var unitBytes: Int { self == .fastCDC ? CryptoSuite.randomData.count : 64 << 10 }

        /// Does one core's share, with contexts of its own.
        func work(messages: Int) throws {
            switch self {
            case .aesSeal:
                let cipher = try AESGCM()
                let key = SecureBytes.random(count: 32)
                for _ in 0..<messages { _ = try cipher.seal(CryptoSuite.chunk, key: key, authenticating: [1, 2, 3]) }
            case .sha256:
                let hasher = try SHA256()
                for _ in 0..<messages {
                    try hasher.update(CryptoSuite.chunk)
                    _ = try hasher.finalize()
                }
            case .hmac:
                let mac = try HMACSHA256(key: SecureBytes.random(count: 32))
                for _ in 0..<messages { _ = try mac.authenticationCode(for: CryptoSuite.chunk) }
            case .zstd3:
                let compressor = try ZstdCompressor(level: 3)
                for _ in 0..<messages { _ = try compressor.compress(CryptoSuite.text) }
            case .fastCDC:
                let chunker = FastCDC(gear: try GearTable(seed: SecureBytes.random(count: 32)))
                for _ in 0..<messages { _ = CryptoSuite.randomData.withUnsafeBytes { chunker.chunkLengths(of: $0) } }
            }
        }
    }

    static func benchmarks(quick: Bool) -> [any Benchmark] {
        let repeats = quick ? 64 : 512
        return Primitive.allCases.map {
            AllCores(primitive: $0, messagesPerCore: $0.messages(repeats: repeats, quick: quick))
        }
    }

    struct AllCores: Benchmark {
        let primitive: Primitive
        let messagesPerCore: Int
        let cores = ProcessInfo.processInfo.activeProcessorCount

        var name: String { primitive.singleCoreName + ", all \(cores) cores" }
        var reference: String? { primitive.singleCoreName }
        var bytesPerRun: Int { cores * messagesPerCore * primitive.unitBytes }

        mutating func run() throws {
            let failures = Failures()
            let (primitive, messages) = (primitive, messagesPerCore)
            DispatchQueue.concurrentPerform(iterations: cores) { _ in
                do { try primitive.work(messages: messages) } catch { failures.record(error) }
            }
            if let error = failures.first { throw error }
        }
    }

    /// The first error a worker thread met.
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var errors: [any Error] = []

        func record(_ error: any Error) { lock.withLock { errors.append(error) } }
        var first: (any Error)? { lock.withLock { errors.first } }
    }
}
