/// The records changed after a cursor, each once, in the order of its first change there, with the
/// sequence of its last: what an incremental export writes, gathered from the change log.
///
/// Kept in flat arrays, not a dictionary of keys: 900,000 changes held that way (a heap array per
/// key, a hash table, a list of first appearances) took about 115 MB, the largest allocation of the
/// million-item scale stage; here they take 45 bytes each (40 MB), and finding each record's first
/// and last change is one sort of their positions by key.
package struct ChangedRecords {
    /// Every change's version key (`VersionEntry.key`), padded to `slotSize` bytes, in log order.
    private var keys: [UInt8] = []
    /// Every change's sequence, in log order; after ``finish()``, the record's last sequence at its
    /// first change and ``skipped`` at every other.
    private var sequences: [UInt64] = []
    private var finished = false

    /// An empty list.
    package init() {}

    /// The longest version key: a kind byte and a 32-byte id.
    private static let slotSize = 33
    private static let skipped = UInt64.max

    /// Notes one change, in log order.
    package mutating func append(sequence: UInt64, key: [UInt8]) {
        precondition(!finished && key.count <= Self.slotSize, "a change appended after finish, or too long a key")
        keys += key
        keys += repeatElement(0, count: Self.slotSize - key.count)
        sequences.append(sequence)
    }

    /// How many changes were appended (not how many records).
    package var changeCount: Int { sequences.count }

    /// Marks each record's first change with its last change's sequence, and every other change
    /// as one to skip.
    package mutating func finish() {
        finished = true
        let count = sequences.count
        guard count > 1 else { return }
        var order = Array(0..<UInt32(count))
        keys.withUnsafeBufferPointer { slots in
            order.sort { left, right in
                let compared = Self.compare(slots, left, right)
                return compared != 0 ? compared < 0 : left < right
            }
            var start = 0
            while start < count {
                var end = start + 1
                while end < count, Self.compare(slots, order[start], order[end]) == 0 { end += 1 }
                // Positions within a group ascend, and so do their sequences (the log is in order).
                let last = sequences[Int(order[end - 1])]
                for position in order[(start + 1)..<end] { sequences[Int(position)] = Self.skipped }
                sequences[Int(order[start])] = last
                start = end
            }
        }
    }

    /// The order of two keys' slots: negative, zero or positive, bytewise.
    private static func compare(_ slots: UnsafeBufferPointer<UInt8>, _ left: UInt32, _ right: UInt32) -> Int {
        let leftStart = Int(left) * slotSize
        let rightStart = Int(right) * slotSize
        for offset in 0..<slotSize where slots[leftStart + offset] != slots[rightStart + offset] {
            return Int(slots[leftStart + offset]) - Int(slots[rightStart + offset])
        }
        return 0
    }

    /// Calls `body` with each changed record's version key and last sequence, in the order of its
    /// first change.
    package func forEachRecord(_ body: (_ key: [UInt8], _ lastSequence: UInt64) throws -> Void) rethrows {
        precondition(finished || sequences.count <= 1, "forEachRecord before finish")
        for (position, sequence) in sequences.enumerated() where sequence != Self.skipped {
            let slot = keys[(position * Self.slotSize)..<((position + 1) * Self.slotSize)]
            let length = SyncRecordKind(rawValue: slot.first!).map { 1 + $0.idLength } ?? Self.slotSize
            try body(Array(slot.prefix(length)), sequence)
        }
    }
}
