/// The entries of a log that may come next in canonical order (every parent placed), smallest hash
/// first: a binary heap, so ordering a log whose entries are side by side by the thousand (a crafted
/// mesh) takes n log n comparisons, not n² (red team round 14, F6).
struct ReadyEntries {
    private var heap: [Int] = []
    private let hashes: [[UInt8]]

    /// No entry yet, of a log whose entries have `hashes`.
    init(hashes: [[UInt8]]) { self.hashes = hashes }

    /// Adds the entry `index`.
    mutating func insert(_ index: Int) {
        heap.append(index)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Takes out the ready entry with the smallest hash.
    mutating func removeFirst() -> Int? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            let right = left + 1
            let smaller = right < heap.count && precedes(heap[right], heap[left]) ? right : left
            guard precedes(heap[smaller], heap[parent]) else { break }
            heap.swapAt(smaller, parent)
            parent = smaller
        }
        return first
    }

    private func precedes(_ lhs: Int, _ rhs: Int) -> Bool { hashes[lhs].lexicographicallyPrecedes(hashes[rhs]) }
}
