import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The estimate may call a chunk incompressible only when zstd would not shrink it worth having;
/// it must never skip data zstd compresses well.
@Suite("Compressibility estimate")
struct CompressibilityEstimateTests {
    private func estimate(_ bytes: [UInt8]) throws -> Bool {
        let compressor = try ZstdCompressor()
        return bytes.withUnsafeBytes { CompressibilityEstimate.isLikelyIncompressible($0, trial: compressor) }
    }

    /// How much zstd at the default level saves on `bytes`, as a fraction of its size.
    private func zstdSaving(_ bytes: [UInt8]) throws -> Double {
        1 - Double(try ZstdCompressor().compress(bytes).count) / Double(bytes.count)
    }

    @Test("random bytes and zstd's own output are called incompressible, and zstd agrees", arguments: [1, 2, 3])
    func incompressible(seed: UInt64) throws {
        let random = SplitMix64.bytes(70_000 + Int(seed) * 9_000, seed: seed)
        let randomIsSkipped = try estimate(random)
        #expect(randomIsSkipped)
        #expect(try zstdSaving(random) < 0.01)
        let text = Array(String(repeating: "the vault keeps what it was given, chunk by chunk. ", count: 40_000).utf8)
        let frame = try ZstdCompressor(level: 19).compress(text + SplitMix64.bytes(200_000, seed: seed))
        let frameIsSkipped = try estimate(frame)
        #expect(frameIsSkipped)
        #expect(try zstdSaving(frame) < 0.02)
    }

    @Test("text, zeros, binaries and repeated random blocks are offered to zstd")
    func compressible() throws {
        let text = Array(String(repeating: "Coffer stores secrets and large data. ", count: 3_000).utf8)
        let textIsSkipped = try estimate(text)
        #expect(!textIsSkipped)
        let zerosAreSkipped = try estimate([UInt8](repeating: 0, count: 100_000))
        #expect(!zerosAreSkipped)
        // A random 1 KiB block repeated at the samples' stride: every byte value is equally common,
        // but the samples repeat (and LZ matching finds the repeats).
        let block = SplitMix64.bytes(1024, seed: 9)
        let repeated = Array([[UInt8]](repeating: block, count: 128).joined().prefix(127 * 1024 + 64))
        let repeatedIsSkipped = try estimate(repeated)
        #expect(!repeatedIsSkipped)
        #expect(try zstdSaving(repeated) > 0.9)
        // Bytes counting up by a stride: LZ matching finds the period.
        let counting = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let countingIsSkipped = try estimate(counting)
        #expect(!countingIsSkipped)
        #expect(try zstdSaving(counting) > 0.9)
        // A random block of 7,600 bytes repeated: too long for the sampled histogram to look any less
        // flat than random bytes, and no two samples begin alike; the 8 KiB trial slice spans a
        // repeat and finds it.
        let oddRepeat = Array([[UInt8]](repeating: SplitMix64.bytes(7600, seed: 8), count: 14).joined())
        let oddRepeatFlat = oddRepeat.withUnsafeBytes { CompressibilityEstimate.hasFlatHistogram($0) }
        #expect(oddRepeatFlat)
        let oddRepeatIsSkipped = try estimate(oddRepeat)
        #expect(!oddRepeatIsSkipped)
        #expect(try zstdSaving(oddRepeat) > 0.8)
        // Half random, half text: the histogram is skewed enough to try.
        let mixed = SplitMix64.bytes(40_000, seed: 4) + text.prefix(40_000)
        let mixedIsSkipped = try estimate(mixed)
        #expect(!mixedIsSkipped)
        #expect(try zstdSaving(mixed) > 0.3)
    }

    @Test("chunks under the minimum size are always offered to zstd")
    func small() throws {
        let justUnder = try estimate(SplitMix64.bytes(CompressibilityEstimate.minimumSize - 1, seed: 5))
        #expect(!justUnder)
        let atMinimum = try estimate(SplitMix64.bytes(CompressibilityEstimate.minimumSize, seed: 5))
        #expect(atMinimum)
        let empty = try estimate([])
        #expect(!empty)
    }

    @Test("on real files, a chunk called incompressible loses less than 3% by being stored as is")
    func realFiles() throws {
        // Whatever this machine has: compressed documentation, shared libraries, headers.
        let roots = ["/usr/share/doc", "/usr/lib/x86_64-linux-gnu", "/usr/include"]
        var checked = 0
        var skipped = 0
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            for case let relative as String in walker where checked < 400 {
                let path = root + "/" + relative
                guard let data = FileManager.default.contents(atPath: path), data.count >= 64 << 10 else { continue }
                let chunk = [UInt8](data.prefix(64 << 10))
                checked += 1
                if try estimate(chunk) {
                    skipped += 1
                    #expect(try zstdSaving(chunk) < 0.03, "\(path): called incompressible, but zstd saves more")
                }
            }
        }
        #expect(checked > 0, "no real files to check on this machine")
    }
}
