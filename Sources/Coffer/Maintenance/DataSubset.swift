/// A part of the stored chunks for ``Blobs/verify(readingDataSubset:)-3zhpn`` to read, as restic's
/// `check --read-data-subset` takes it: a fixed slice, so `count` runs with the slices 1 to `count`
/// read every chunk once, or a random share, a different one each run.
public enum DataSubset: Sendable, Hashable, CustomStringConvertible {
    /// Slice `index` (from 1) of `count` equal slices, chosen by chunk id: the same chunks every time.
    case slice(Int, of: Int)
    /// About this share of the chunks (greater than 0, at most 1), chosen at random each run.
    case fraction(Double)

    /// Parses `2/5` (a slice) or `10%` (a share).
    ///
    /// - Throws: ``CofferError`` `.param` naming the text and the forms it may take.
    public init(_ text: String) throws(CofferError) {
        let malformed = CofferError(
            .param,
            "'\(text)' is not a subset: give N/M (slice N of M, e.g. 1/5) or a percentage (e.g. 10%)"
        )
        if text.hasSuffix("%") {
            guard let percent = Double(text.dropLast()), percent > 0, percent <= 100 else { throw malformed }
            self = .fraction(percent / 100)
            return
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
            (1...count).contains(index)
        else { throw malformed }
        self = .slice(index, of: count)
    }

    /// `2/5` or `10%`.
    public var description: String {
        switch self {
        case .slice(let index, let count): return "\(index)/\(count)"
        case .fraction(let share): return "\(share * 100)%"
        }
    }

    /// Whether the chunk stored under `key` (its 32-byte id) is in the subset. Ids are keyed hashes,
    /// so their first bytes spread the chunks evenly over the slices.
    func contains(chunkKey key: UnsafeRawBufferPointer, random: inout some RandomNumberGenerator) -> Bool {
        switch self {
        case .slice(let index, let count):
            let prefix = key.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return prefix % UInt64(count) == UInt64(index - 1)
        case .fraction(let share):
            return Double.random(in: 0..<1, using: &random) < share
        }
    }
}
