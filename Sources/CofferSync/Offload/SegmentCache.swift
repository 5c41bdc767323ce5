import Foundation

/// Opened stream segments of bundle objects, kept within a byte budget, so the chunks that share a
/// segment (about four to a 256 KiB segment) cost one fetch, and a reader going through an object in
/// order reads ahead: a fetch that starts where the last one of that object ended takes
/// ``readAhead`` segments at once.
///
/// Each segment has a slot; the thread that fills it holds the slot's lock, so another that wants the
/// same segment meanwhile waits for it rather than fetching it again.
final class SegmentCache: Sendable {
    /// Segments a fetch that continues an object's last one takes at once.
    static let readAhead = 32
    private let budget: Int
    private let state = Locked(State())

    private struct State {
        var slots: [Key: Slot] = [:]
        /// Keys in the order their segments were kept, with their sizes: the oldest go first.
        var kept: [(key: Key, bytes: Int)] = []
        var bytes = 0
        var lastFetched: [String: UInt64] = [:]
    }

    struct Key: Hashable {
        let object: String
        let segment: UInt64
    }

    /// One segment's plaintext, once filled.
    final class Slot: @unchecked Sendable {
        let lock = NSLock()
        var plaintext: [UInt8]?
    }

    /// A cache of at most `budget` bytes of plaintext.
    init(budget: Int) { self.budget = budget }

    /// The plaintexts of segments `first...last` of `object` (`count` segments in all), fetching those
    /// not held with `fetch`, which is given a range of segments (wider than asked when reading
    /// ahead) and returns each one's plaintext in order.
    func segments(
        _ first: UInt64,
        _ last: UInt64,
        of object: String,
        count: UInt64,
        fetch: (ClosedRange<UInt64>) throws(CofferError) -> [[UInt8]]
    ) throws(CofferError) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = first
        while index <= last {
            let slot = self.slot(Key(object: object, segment: index))
            slot.lock.lock()
            if let plaintext = slot.plaintext {
                slot.lock.unlock()
                result.append(plaintext)
                index += 1
                continue
            }
            // Not held: fetch from here to `last`, or further when reading on from the last fetch.
            let sequential = state.withLock {
                $0.lastFetched[object].map { index <= $0 + 1 && index + 1 >= $0 } ?? false
            }
            let end = min(count - 1, sequential ? max(last, index + UInt64(Self.readAhead) - 1) : last)
            let fetched: [[UInt8]]
            do {
                fetched = try fetch(index...end)
            } catch {
                slot.lock.unlock()
                throw error
            }
            slot.plaintext = fetched[0]
            slot.lock.unlock()
            store(fetched, from: index, of: object)
            for (offset, plaintext) in fetched.enumerated() where index + UInt64(offset) <= last {
                result.append(plaintext)
            }
            index = min(last, end) + 1
        }
        return result
    }

    private func slot(_ key: Key) -> Slot {
        state.withLock { state in
            if let slot = state.slots[key] { return slot }
            let slot = Slot()
            state.slots[key] = slot
            return slot
        }
    }

    /// Keeps what a fetch brought, and drops the oldest segments past the budget. (Never takes a
    /// slot's lock: a thread filling a slot may be waiting for this state's.)
    private func store(_ fetched: [[UInt8]], from first: UInt64, of object: String) {
        state.withLock { state in
            state.lastFetched[object] = first + UInt64(fetched.count) - 1
            for (offset, plaintext) in fetched.enumerated() {
                let key = Key(object: object, segment: first + UInt64(offset))
                if offset > 0 {
                    guard state.slots[key] == nil else { continue }
                    let slot = Slot()
                    slot.plaintext = plaintext
                    state.slots[key] = slot
                } else if state.slots[key] == nil {
                    continue  // dropped while it was being filled
                }
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
        }
    }
}
