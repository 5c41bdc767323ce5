import Foundation

/// A cheap guess, from a sample of its bytes, at whether zstd would shrink a chunk at all.
///
/// Already-compressed and encrypted data (media, archives, `.gz` documentation, random files) is
/// much of what a large put or a real tree holds, and zstd spends about as long failing to shrink
/// it as it spends on data it can: about 8% of a put's CPU time for a 1 GiB random file. The
/// estimate has two steps, the second only when the first finds nothing:
///
/// 1. It reads 64 bytes at 128 evenly spaced places (8 KiB of any chunk) and computes the Shannon
///    entropy of their byte histogram. Below ``entropyThreshold`` bits per byte, or when two samples
///    begin alike, the chunk is offered to zstd. On such a sample uniform random bytes give 7.973 to
///    7.983 and gzip output at least 7.971, where PNG images and PDF files (deflate streams between
///    clear headers, which zstd shrinks by 2 to 7%) give 7.944 to 7.972, and executables and text
///    4.5 to 6.5.
/// 2. A histogram cannot see repeats: bytes counting up by a stride, or a random block repeated,
///    have a flat histogram and compress a hundredfold. So one contiguous 8 KiB slice from the middle
///    of the chunk is compressed with the caller's compressor; the chunk is called incompressible
///    only if that saves less than 3%.
///
/// The two steps together cost about a sixth of compressing a 64 KiB chunk. The estimate errs one
/// way only, by design: a chunk called incompressible is stored as is, which costs a little space
/// when zstd would have found what neither step sees (repeats farther apart than 8 KiB within one
/// chunk; a clear header between compressed streams), and never costs correctness, since a chunk's
/// id and contents do not depend on its encoding. (btrfs's compression heuristic makes the same
/// trade with a histogram alone.)
package enum CompressibilityEstimate {
    /// Chunks smaller than this are always offered to zstd: too few bytes for a sure estimate, and
    /// compressing them is cheap.
    package static let minimumSize = 16 << 10
    /// Bits per byte of the sample at or above which a chunk counts as incompressible.
    package static let entropyThreshold = 7.97
    private static let sampleLength = 64
    private static let sampleCount = 128

    /// The slice step 2 compresses, and the saving below which it calls the chunk incompressible.
    private static let trialLength = 8 << 10
    private static let trialSavingPercent = 3

    /// Whether `bytes` is very likely not worth compressing (see the type's discussion); `trial`
    /// compresses the slice of step 2 (the caller's compressor, at its level).
    package static func isLikelyIncompressible(_ bytes: UnsafeRawBufferPointer, trial: ZstdCompressor) -> Bool {
        guard hasFlatHistogram(bytes) else { return false }
        let start = (bytes.count - trialLength) / 2
        guard
            let compressed = try? trial.compress(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + trialLength)]))
        else { return false }
        return compressed.count * 100 >= trialLength * (100 - trialSavingPercent)
    }

    /// Step 1: whether the sampled bytes are near uniform and no two samples begin alike.
    static func hasFlatHistogram(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= minimumSize else { return false }
        let stride = (bytes.count - sampleLength) / (sampleCount - 1)
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 256) { histogram in
            histogram.initialize(repeating: 0)
            var starts: [UInt64] = []
            starts.reserveCapacity(sampleCount)
            for sample in 0..<sampleCount {
                let offset = sample * stride
                for byte in bytes[offset..<(offset + sampleLength)] { histogram[Int(byte)] += 1 }
                starts.append(
                    bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        ^ bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self).byteSwapped
                )
            }
            starts.sort()
            for index in 1..<starts.count where starts[index] == starts[index - 1] { return false }
            let total = Double(sampleCount * sampleLength)
            var sum = 0.0
            for count in histogram where count > 0 {
                let value = Double(count)
                sum += value * log2(value)
            }
            return log2(total) - sum / total >= entropyThreshold
        }
    }
}
