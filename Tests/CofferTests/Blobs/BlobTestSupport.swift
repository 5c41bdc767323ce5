import CofferTestSupport
import Foundation

@testable import Coffer

/// Test content that compresses like real files: runs of words with random bytes mixed in.
enum Content {
    /// `count` bytes, the same for the same `seed`.
    static func mixed(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8]()
        bytes.reserveCapacity(count)
        let words = ["vault ", "chunk ", "coffer ", "secret ", "backup ", "restore ", "\n", "0123456789 "]
        while bytes.count < count {
            if generator.next() % 4 == 0 {
                for _ in 0..<16 { bytes.append(UInt8(truncatingIfNeeded: generator.next())) }
            } else {
                bytes.append(contentsOf: words[Int(generator.next() % UInt64(words.count))].utf8)
            }
        }
        return Array(bytes.prefix(count))
    }

    /// `count` incompressible bytes, the same for the same `seed`.
    static func random(_ count: Int, seed: UInt64) -> [UInt8] { SplitMix64.bytes(count, seed: seed) }
}

extension VaultFixture {
    /// A fixture whose vaults cut small chunks (256 B – 4 KiB), so modest test data spans thousands
    /// of chunks and indirect chunk lists.
    static func smallChunks() throws -> VaultFixture {
        let base = try VaultFixture()
        var configuration = base.configuration
        configuration.chunkSizes = try ChunkSizes(minimum: 256, average: 1024, maximum: 4096)
        return VaultFixture(directory: base.directory, configuration: configuration)
    }
}
