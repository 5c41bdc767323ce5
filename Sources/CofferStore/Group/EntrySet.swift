/// A set of a membership log's entries, by their index in canonical order, kept as a bitset: what an
/// entry's author knew (its ancestors), or the entries whose effect is decided.
///
/// A log holds at most ``GroupLog/maximumEntries`` entries, so a set takes at most 512 bytes, and
/// asking whether it holds an entry takes constant time (a log's graph keeps one per entry: 2 MiB
/// at most).
struct EntrySet: Hashable, Sequence {
    private var words: [UInt64]

    /// The empty set, of a log of `count` entries.
    init(count: Int) { words = [UInt64](repeating: 0, count: (count + 63) / 64) }

    /// The entries `range`, of a log of `count` entries.
    init(_ range: Range<Int>, count: Int) {
        self.init(count: count)
        for index in range { insert(index) }
    }

    /// Whether the set holds entry `index`.
    func contains(_ index: Int) -> Bool {
        let word = index >> 6
        return word < words.count && words[word] & (1 << UInt64(index & 63)) != 0
    }

    /// Adds entry `index`, which must be an entry of the log.
    mutating func insert(_ index: Int) { words[index >> 6] |= 1 << UInt64(index & 63) }

    /// Takes entry `index` out.
    mutating func remove(_ index: Int) { words[index >> 6] &= ~(1 << UInt64(index & 63)) }

    /// Adds every entry of `other`, a set of the same log.
    mutating func formUnion(_ other: EntrySet) {
        for word in words.indices { words[word] |= other.words[word] }
    }

    /// The entries of this set that `other`, a set of the same log, does not hold.
    func subtracting(_ other: EntrySet) -> EntrySet {
        var result = self
        for word in words.indices { result.words[word] &= ~other.words[word] }
        return result
    }

    /// Whether `other`, a set of the same log, holds every entry of this one.
    func isSubset(of other: EntrySet) -> Bool {
        words.indices.allSatisfy { words[$0] & ~other.words[$0] == 0 }
    }

    /// How many entries the set holds.
    var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// Whether the set holds no entry.
    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    /// The latest entry of the set (the largest index), if any.
    var last: Int? {
        for word in words.indices.reversed() where words[word] != 0 {
            return word << 6 + 63 - words[word].leadingZeroBitCount
        }
        return nil
    }

    /// The entries in canonical order.
    func makeIterator() -> Iterator { Iterator(words: words) }

    /// The entries of an ``EntrySet`` in canonical order.
    struct Iterator: IteratorProtocol {
        fileprivate let words: [UInt64]
        private var word = 0
        private var remaining: UInt64 = 0

        fileprivate init(words: [UInt64]) {
            self.words = words
            remaining = words.first ?? 0
        }

        mutating func next() -> Int? {
            while remaining == 0 {
                word += 1
                guard word < words.count else { return nil }
                remaining = words[word]
            }
            let bit = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            return word << 6 + bit
        }
    }
}
