import Foundation

/// Counts the paths under a directory on a thread of its own, for a progress bar's total: the
/// directory itself and everything below it, without following symbolic links, as a backup walks.
enum TreeCount {
    /// Starts counting under `directory` and calls `done` with the count once it is complete (never,
    /// if the directory cannot be listed).
    static func start(_ directory: URL, done: @escaping @Sendable (Int64) -> Void) {
        let path = directory.path
        let thread = Thread {
            guard let enumerator = FileManager.default.enumerator(atPath: path) else { return }
            var count: Int64 = 1
            while enumerator.nextObject() != nil { count += 1 }
            done(count)
        }
        thread.name = "coffer-tree-count"
        thread.start()
    }
}
