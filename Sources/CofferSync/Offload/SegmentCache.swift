import Foundation

/// Opened stream segments of bundle objects, kept within a byte budget, so the chunks that share a
/// segment (about four to a 256 KiB segment) cost one fetch, and a reader going through an object in
/// order reads ahead: a fetch that continues the segments already asked for of that object takes a
/// window of ``window`` segments at once, and while the reader opens what one window brought, the
/// next ``windowsAhead`` windows are fetched in the background (at most ``fetchesInBackground`` at
/// a time), so the network and the opening of chunks overlap.
///
/// A segment being fetched is *claimed*: another reader that wants it meanwhile waits for it rather
/// than fetching it again. A fetch that fails releases its claims; a reader waiting for them then
/// fetches them itself and sees the failure itself (a background fetch's error is reported by no
/// one else).
final class SegmentCache: @unchecked Sendable {
    /// Segments a fetch that continues an object's earlier ones takes at once.
    static let window: UInt64 = 32
    /// Windows fetched in the background ahead of a reader going through an object in order.
    static let windowsAhead: UInt64 = 2
    /// Background fetches in flight at most, whatever the number of objects read.
    static let fetchesInBackground = 4

    /// Fetches segments `range` of one object and returns each one's plaintext, in order.
    typealias Fetch = @Sendable (ClosedRange<UInt64>) throws(CofferError) -> [[UInt8]]

    private let budget: Int
    /// Guards `state`; readers waiting for a claimed segment wait on it.
    private let condition = NSCondition()
    private var state = State()

    private struct State {
        var slots: [Key: Slot] = [:]
        /// Filled segments in the order they were kept, with their sizes: the oldest go first.
        var kept: [(key: Key, bytes: Int)] = []
        var bytes = 0
        /// Per object, the last segment claimed, and whether the reads of it go in order.
        var claimedThrough: [String: UInt64] = [:]
        var inOrder: Set<String> = []
        var fetchesInBackground = 0
    }

    private enum Slot {
        case claimed
        case filled([UInt8])
    }

    private struct Key: Hashable {
        let object: String
        let segment: UInt64
    }

    /// A cache of at most `budget` bytes of plaintext (besides the segments being fetched).
    init(budget: Int) { self.budget = budget }

    /// The plaintexts of segments `first...last` of `object` (`count` segments in all), fetching those
    /// not held with `fetch` (asked for more than `first...last` when reading ahead).
    func segments(
        _ first: UInt64,
        _ last: UInt64,
        of object: String,
        count: UInt64,
        fetch: @escaping Fetch
    ) throws(CofferError) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = first
        condition.lock()
        defer { condition.unlock() }
        while index <= last {
            switch state.slots[Key(object: object, segment: index)] {
            case .filled(let plaintext):
                result.append(plaintext)
                index += 1
            case .claimed:
                condition.wait()
            case nil:
                let claimed = claim(from: index, through: last, of: object, count: count)
                condition.unlock()
                let fetched: [[UInt8]]
                do {
                    fetched = try fetch(claimed)
                } catch {
                    condition.lock()
                    release(claimed, of: object)
                    throw error
                }
                condition.lock()
                guard keep(fetched, as: claimed, of: object) else {
                    throw CofferError(.internalError, "a fetch of \(claimed.count) segments returned \(fetched.count)")
                }
                for (offset, plaintext) in fetched.enumerated() where index + UInt64(offset) <= last {
                    result.append(plaintext)
                }
                index = min(last, claimed.upperBound) + 1
            }
        }
        readAhead(of: object, after: last, count: count, fetch: fetch)
        return result
    }

    /// Claims the segments a reader that lacks segment `index` fetches: through `last`, or a whole
    /// window when it continues the segments claimed before, stopping short of any already held or
    /// claimed. (Holds the lock.)
    private func claim(
        from index: UInt64,
        through last: UInt64,
        of object: String,
        count: UInt64
    ) -> ClosedRange<UInt64> {
        let inOrder = state.claimedThrough[object].map { index <= $0 + 1 && index + 1 >= $0 } ?? false
        if inOrder { state.inOrder.insert(object) } else { state.inOrder.remove(object) }
        var end = min(count - 1, inOrder ? max(last, index + Self.window - 1) : last)
        for segment in index...end where segment > index && state.slots[Key(object: object, segment: segment)] != nil {
            end = segment - 1
            break
        }
        for segment in index...end { state.slots[Key(object: object, segment: segment)] = .claimed }
        state.claimedThrough[object] = end
        return index...end
    }

    /// Starts fetching the next window of an object read in order when fewer than ``windowsAhead``
    /// windows past `last` are claimed. (Holds the lock.)
    private func readAhead(of object: String, after last: UInt64, count: UInt64, fetch: @escaping Fetch) {
        guard state.inOrder.contains(object), let claimed = state.claimedThrough[object], claimed + 1 < count,
            claimed < last + Self.window * Self.windowsAhead,
            state.fetchesInBackground < Self.fetchesInBackground
        else { return }
        let first = claimed + 1
        var end = min(count - 1, claimed + Self.window)
        for segment in first...end where state.slots[Key(object: object, segment: segment)] != nil {
            end = segment - 1
            break
        }
        guard end >= first else { return }
        for segment in first...end { state.slots[Key(object: object, segment: segment)] = .claimed }
        state.claimedThrough[object] = end
        state.fetchesInBackground += 1
        let range = first...end
        // A thread of its own, not Dispatch's global queue: readers called through the async forms
        // run there (offload), and a reader waiting for these segments must not hold the thread
        // that would fetch them.
        Thread.detachNewThread {
            nameCurrentThread("coffer-ahead")
            let fetched = try? fetch(range)
            self.condition.lock()
            defer { self.condition.unlock() }
            self.state.fetchesInBackground -= 1
            if let fetched {
                _ = self.keep(fetched, as: range, of: object)
            } else {
                // The store may be gone: read no further ahead until the reader's own fetch succeeds.
                self.state.inOrder.remove(object)
                self.release(range, of: object)
            }
        }
    }

    /// Gives up the claims of a fetch that failed, and wakes the readers waiting for them. (Holds
    /// the lock.)
    private func release(_ range: ClosedRange<UInt64>, of object: String) {
        for segment in range { state.slots.removeValue(forKey: Key(object: object, segment: segment)) }
        if state.claimedThrough[object] == range.upperBound {
            state.claimedThrough[object] = range.lowerBound > 0 ? range.lowerBound - 1 : nil
        }
        condition.broadcast()
    }

    /// Keeps what a fetch of the segments `range` brought, drops the oldest segments past the
    /// budget, and wakes the readers waiting for them; `false`, with the claims released, if the
    /// fetch did not bring one plaintext for each. (Holds the lock.)
    private func keep(_ fetched: [[UInt8]], as range: ClosedRange<UInt64>, of object: String) -> Bool {
        guard fetched.count == range.count else {
            release(range, of: object)
            return false
        }
        for (offset, plaintext) in fetched.enumerated() {
            let key = Key(object: object, segment: range.lowerBound + UInt64(offset))
            state.slots[key] = .filled(plaintext)
            state.kept.append((key, plaintext.count))
            state.bytes += plaintext.count
        }
        var dropped = 0
        while state.bytes > budget, dropped < state.kept.count {
            let oldest = state.kept[dropped]
            dropped += 1
            state.slots.removeValue(forKey: oldest.key)
            state.bytes -= oldest.bytes
        }
        state.kept.removeFirst(dropped)
        condition.broadcast()
        return true
    }
}
