import Foundation

/// The previous snapshot's entries, read on a thread of their own in step with a backup's walk, so
/// that memory stays bounded whatever the tree's size (a map of a million entries took 706 MiB).
/// Both are in walk order (depth first, names in byte order), so each lookup only moves forward.
///
/// A previous tree that cannot be read (damaged) counts as absent from there on: the files it
/// would have matched are read again, which is always correct.
package final class PreviousTree: @unchecked Sendable {
    /// Entries read ahead of the walk, at most this many.
    private static let readAhead = 4096

    private let channel = BoundedChannel<TreeEntry>(capacity: PreviousTree.readAhead)
    private let done = DispatchSemaphore(value: 0)
    private let reading: Bool
    /// The next entry not yet passed (touched by the walk's thread only).
    private var head: TreeEntry?
    private var ended = false

    /// Starts reading `record`'s tree; with no record, every lookup finds nothing.
    package init(store: SnapshotStore, record: SnapshotRecord?) {
        guard let record else {
            reading = false
            ended = true
            return
        }
        reading = true
        let channel = channel
        let done = done
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                try store.forEachEntry(of: record) { (entry) throws(CofferError) in
                    guard channel.send(entry) else { throw CofferError(.userCanceled, "the backup ended") }
                }
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
    }

    /// The previous entry at `path`, if there is one. Paths must be asked for in walk order.
    package func entry(at path: [UInt8]) -> TreeEntry? {
        while !ended {
            if head == nil {
                do {
                    head = try channel.receive()
                } catch {
                    head = nil
                }
                if head == nil {
                    ended = true
                    return nil
                }
            }
            guard let current = head else { return nil }
            if current.path == path { return current }
            guard Self.walkOrder(current.path, precedes: path) else { return nil }
            head = nil
        }
        return nil
    }

    /// Stops the reader and waits for its thread.
    package func close() {
        guard reading else { return }
        channel.cancel()
        done.wait()
    }

    /// Whether `a` comes before `b` in a walk: component by component, each in byte order, a
    /// directory before what is under it (a `/` sorts before every byte).
    static func walkOrder(_ a: [UInt8], precedes b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            if x == UInt8(ascii: "/") { return true }
            if y == UInt8(ascii: "/") { return false }
            return x < y
        }
        return a.count < b.count
    }
}
