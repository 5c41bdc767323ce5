internal import Synchronization

/// The process's account of the map pages its open environments leave mapped, kept for all of them at
/// once.
///
/// `/proc/self/statm` counts the file pages of every map of the process together, so a budget kept per
/// environment cannot work once two are open: the pages one environment mapped count against the
/// other, whose drops of its own map then free nothing and repeat at every check while the first
/// environment's pages stay (a vault idle beside a busy one made every second lookup of the busy one
/// drop its map and fault it in again). So the budget is the process's: what counts is what all
/// maps hold beyond the floor (the least the process had mapped right after a drop: its libraries),
/// and a drop drops every open environment's map.
package final class MappedPageLedger: Sendable {
    /// The ledger of this process.
    package static let shared = MappedPageLedger()

    /// The process's resident file pages; `nil` without procfs.
    private let residentFilePages = ResidentFilePages()
    /// The least resident file bytes seen right after a drop: about what the process maps outside
    /// the environments' maps. The least, not the last: another thread's lookups right after a drop
    /// would otherwise raise the floor drop by drop.
    private let floor = Atomic<Int>(Int.max)
    /// The open environments, by identity, held weakly.
    private let environments = Locked<[ObjectIdentifier: WeakEnvironment]>([:])

    private struct WeakEnvironment: @unchecked Sendable {
        weak var environment: Environment?
    }

    /// Whether what is mapped can be measured (procfs is there).
    package var canMeasure: Bool { residentFilePages != nil }

    /// Counts `environment`'s map in the process's budget until ``remove(_:)``.
    package func add(_ environment: Environment) {
        environments.withLock { $0[ObjectIdentifier(environment)] = WeakEnvironment(environment: environment) }
    }

    /// Stops counting `environment`'s map (it is closing).
    package func remove(_ environment: Environment) {
        environments.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(environment)) }
    }

    /// Whether the maps of the process hold more than `budget` beyond the floor; `true` where that
    /// cannot be measured, so a caller falls back to dropping by the size of its map alone.
    package func isOverBudget(_ budget: MappedPageBudget) -> Bool {
        guard let residentFilePages else { return true }
        guard let bytes = residentFilePages.bytes() else { return false }
        return bytes - floor.load(ordering: .relaxed) > budget.bytes
    }

    /// Drops the map pages of every open environment: `current`'s through `dropCurrent` (its caller
    /// holds its gate already), every other one's only if its gate is free for a reader at once
    /// (one resizing or closing is skipped: its map may be going away), then lowers the floor.
    package func dropAll(current: Environment, dropCurrent: () -> Void) {
        let others = environments.withLock { registered in
            registered.values.compactMap(\.environment).filter { $0 !== current }
        }
        dropCurrent()
        for other in others { other.releaseMappedPagesIfIdle() }
        noteDropped()
    }

    /// Lowers the floor to what is mapped now, right after a drop.
    package func noteDropped() {
        guard let bytes = residentFilePages?.bytes() else { return }
        var seen = floor.load(ordering: .relaxed)
        while bytes < seen {
            let (exchanged, original) = floor.compareExchange(
                expected: seen,
                desired: bytes,
                ordering: .relaxed
            )
            if exchanged { return }
            seen = original
        }
    }
}
