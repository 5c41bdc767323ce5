import Foundation

/// A snapshot's tree read on a thread of its own, entry by entry in walk order (depth first, names
/// in byte order), at most 4,096 entries ahead of its reader, so that memory stays bounded whatever
/// the tree's size. A backup looks up the previous snapshot's entries through it in step with its
/// walk (a map of a million entries took 706 MiB); `diff` merges two of them.
package final class TreeStream: @unchecked Sendable {
    /// Entries read ahead, at most this many.
    private static let readAhead = 4096

    private let channel = BoundedChannel<TreeEntry>(capacity: TreeStream.readAhead)
    private let done = DispatchSemaphore(value: 0)
    private let reading: Bool
    /// The next entry not yet passed (touched by the reader's thread only).
    private var head: TreeEntry?
    private var ended = false
    /// Why the tree could not be read to its end, if it could not.
    package private(set) var failure: CofferError?

    /// Starts reading `record`'s tree; with no record, the stream is empty.
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
                    guard channel.send(entry) else { throw CofferError(.userCanceled, "the reader stopped") }
                }
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
    }

    /// The next entry, or `nil` at the end (or at a failure, which ``failure`` then holds).
    package func next() -> TreeEntry? {
        defer { head = nil }
        return peek()
    }

    /// The entry at `path`, if the tree holds one. Paths must be asked for in walk order; entries
    /// before `path` are passed. A backup asks this of the previous snapshot: a tree that cannot be
    /// read counts as absent from there on, so the files it would have matched are read again.
    package func entry(at path: [UInt8]) -> TreeEntry? {
        while let current = peek() {
            if current.path == path { return current }
            guard Self.walkOrder(current.path, precedes: path) else { return nil }
            head = nil
        }
        return nil
    }

    /// The next entry without passing it.
    private func peek() -> TreeEntry? {
        if head == nil, !ended {
            do {
                head = try channel.receive()
            } catch {
                failure = CofferError.wrapping(error, while: "reading a snapshot's tree")
            }
            if head == nil { ended = true }
        }
        return head
    }

    /// Stops the reader and waits for its thread.
    package func close() {
        guard reading else { return }
        channel.cancel()
        done.wait()
    }

    /// Whether `a` comes before `b` in a walk: component by component, each in byte order, a
    /// directory before what is under it (a `/` sorts before every byte).
    package static func walkOrder(_ a: [UInt8], precedes b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            if x == UInt8(ascii: "/") { return true }
            if y == UInt8(ascii: "/") { return false }
            return x < y
        }
        return a.count < b.count
    }
}
