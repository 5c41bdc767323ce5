/// How much of the map the pages a kind of work touches may leave mapped before the environment drops
/// the map's pages (``Environment/noteScatteredTouch(_:)``), and how often it looks.
///
/// Dropping trades memory for faults: a page dropped and touched again faults in again (on Linux 6 a
/// fault maps the whole folio around the page, up to 2 MiB). Work that reads each page once, such as a
/// blob's chunk records, loses nothing by a drop, so its budget is small; work that reads the same
/// pages again and again, such as the keychain's tables, pays a fault for every page it touches again
/// after each drop, so its budget is larger: with the small one, batched adds of 10,000 items into a
/// vault growing to 90,000 ran at 9,300 items a second, with the larger one at 39,700 (`coffer-bench
/// --filter keychain`, release build), each drop having been followed by faulting in again the tree
/// pages the last lookups had used.
package enum MappedPageBudget: Int, Sendable, Comparable {
    /// For pages read once: a blob's chunk records, a write's pending entries, an export's records.
    case readOnce
    /// For pages read again and again: the keychain's items and blind index, whose upper tree pages
    /// every lookup walks and whose leaves a vault of up to about a hundred thousand items revisits.
    case reused

    /// How many bytes of the map may be mapped beyond what was mapped right after the last drop.
    package var bytes: Int {
        switch self {
        case .readOnce: 16 << 20
        case .reused: 64 << 20
        }
    }

    /// How many scattered touches pass between two readings of what is mapped (one `pread` of
    /// `/proc/self/statm`, about a microsecond): one lookup in a vault of gigabytes can map 6-8 MiB
    /// (three or four folios), so reading every `bytes / 8 MiB` touches keeps what is mapped within
    /// twice the budget.
    package var checkInterval: Int { bytes / (8 << 20) }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
