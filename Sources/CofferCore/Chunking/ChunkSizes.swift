/// The bounds FastCDC cuts blob content within, in bytes.
///
/// Smaller chunks find more duplicate data but cost more per byte (one id, one record, one list entry
/// each); the defaults (16, 64 and 256 KiB, after restic and kopia) suit backups. Chunk boundaries
/// depend on these sizes, so data written with other sizes does not deduplicate against earlier data.
public struct ChunkSizes: Sendable, Hashable {
    /// No chunk but the last is smaller.
    public let minimum: Int
    /// The size chunks centre on; a power of two.
    public let average: Int
    /// No chunk is larger.
    public let maximum: Int

    /// Coffer's sizes: 16 KiB, 64 KiB, 256 KiB (docs/FORMAT.md, pinned by the chunker's tests).
    public static let standard = ChunkSizes(uncheckedMinimum: 16 << 10, average: 64 << 10, maximum: 256 << 10)

    /// The largest maximum accepted: list entries and records assume chunks of at most 4 MiB.
    public static let largestMaximum = 4 << 20

    /// Creates bounds.
    ///
    /// - Throws: ``CofferError`` `.param` unless `64 ≤ minimum ≤ average ≤ maximum ≤ 4 MiB` and
    ///   `average` is a power of two.
    public init(minimum: Int, average: Int, maximum: Int) throws(CofferError) {
        guard average.nonzeroBitCount == 1 else {
            throw CofferError(.param, "the average chunk size must be a power of two, not \(average)")
        }
        guard 64 <= minimum, minimum <= average, average <= maximum, maximum <= Self.largestMaximum else {
            throw CofferError(
                .param,
                "chunk sizes must satisfy 64 ≤ minimum ≤ average ≤ maximum ≤ \(Self.largestMaximum); got \(minimum), \(average), \(maximum)"
            )
        }
        self.init(uncheckedMinimum: minimum, average: average, maximum: maximum)
    }

    private init(uncheckedMinimum minimum: Int, average: Int, maximum: Int) {
        self.minimum = minimum
        self.average = average
        self.maximum = maximum
    }
}
