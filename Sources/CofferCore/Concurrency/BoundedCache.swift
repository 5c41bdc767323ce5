import Foundation

/// Values kept by key within a budget, the least recently used dropped first, shared between threads.
///
/// Each value has a cost (bytes, entries) counted against ``budget``; the newest value is always kept,
/// even alone over budget. Eviction scans for the oldest entry: the caches it serves hold a few
/// thousand values, and each insertion follows work (opening a chunk, reading a directory) that costs
/// far more than the scan.
package final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: (value: Value, cost: Int, used: UInt64)] = [:]
        var cost = 0
        var clock: UInt64 = 0
    }

    /// The most cost held.
    package let budget: Int
    private let state = Locked(State())

    /// A cache holding values whose costs add up to at most `budget`.
    package init(budget: Int) {
        self.budget = budget
    }

    /// The value kept for `key`, if any (marked as just used).
    package func value(for key: Key) -> Value? {
        state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.used = state.clock
            state.entries[key] = entry
            return entry.value
        }
    }

    /// Keeps `value` for `key` at `cost`, dropping the least recently used values beyond the budget.
    package func insert(_ value: Value, for key: Key, cost: Int) {
        state.withLock { state in
            state.clock += 1
            if let old = state.entries.updateValue((value, cost, state.clock), forKey: key) {
                state.cost -= old.cost
            }
            state.cost += cost
            while state.cost > budget, state.entries.count > 1 {
                guard let oldest = state.entries.min(by: { $0.value.used < $1.value.used }) else { break }
                state.cost -= oldest.value.cost
                state.entries.removeValue(forKey: oldest.key)
            }
        }
    }

    /// Drops every value whose key `isDropped` says so.
    package func removeAll(where isDropped: (Key) -> Bool) {
        state.withLock { state in
            for (key, entry) in state.entries where isDropped(key) {
                state.cost -= entry.cost
                state.entries.removeValue(forKey: key)
            }
        }
    }

    /// The cost held now.
    package var heldCost: Int { state.withLock { $0.cost } }
}
