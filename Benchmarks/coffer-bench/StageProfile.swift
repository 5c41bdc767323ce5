import Coffer
import Foundation

/// `--profile-stages`: where a backup's time goes, thread by thread. While a backup of the real tree
/// runs, a sampler reads every thread's scheduler statistics (`/proc/self/task/*/schedstat`: time on
/// a CPU and time runnable but waiting for one, in nanoseconds) and name, so each stage of the
/// pipeline is accounted for without a counter in the library: the calling thread (the walk), the
/// `coffer-reader-N` threads (each file's extended attributes, open, read and chunking), the
/// `coffer-worker-N` threads (hashing, compression, encryption),
/// the `coffer-committer` (the LMDB writes, the tree) and the `coffer-flusher` (the data file's
/// syncs). A thread's lifetime less its CPU and run-queue time is the time it was blocked (on a
/// semaphore of the pipeline, a lock, or the disk).
enum StageProfile {
    /// One thread's totals over its life within the backup.
    struct ThreadTotals {
        let id: Int
        var name: String
        var cpuNanoseconds: UInt64 = 0
        var queuedNanoseconds: UInt64 = 0
        var firstSeen: UInt64
        var lastSeen: UInt64
    }

    /// One stage: the threads of one kind, summed.
    struct Stage: Encodable {
        let stage: String
        let threads: Int
        let cpuSeconds: Double
        let runQueueSeconds: Double
        let blockedSeconds: Double
        /// CPU milliseconds per MB of the tree.
        let cpuMillisecondsPerMB: Double
        /// CPU time over the backup's wall time: 1.0 for one thread busy all along.
        let busy: Double
    }

    /// One backup's profile.
    struct Profile: Encodable {
        let treeBytes: Int
        let wallSeconds: Double
        let stages: [Stage]
        let totalCPUSeconds: Double
        /// The CPU of the busiest stage that has one thread (the walk or the committer) over all CPU:
        /// the serial fraction, as the pipeline could at best overlap everything else with it.
        let serialFraction: Double
        /// The speed-up that serial fraction allows at 4, 8, 16 cores and without limit.
        let predicted: [String: Double]
    }

    /// Samples `/proc/self/task` every few milliseconds while `body` runs.
    final class Sampler: @unchecked Sendable {
        private let lock = NSLock()
        private var totals: [Int: ThreadTotals] = [:]
        private var running = true
        private let done = DispatchSemaphore(value: 0)

        func start() {
            let thread = Thread { [self] in
                nameCurrentThread("bench-sampler")
                while lock.withLock({ running }) {
                    sample()
                    usleep(5000)
                }
                sample()
                done.signal()
            }
            thread.start()
        }

        func stop() -> [ThreadTotals] {
            lock.withLock { running = false }
            done.wait()
            return lock.withLock { Array(totals.values) }
        }

        private func sample() {
            let now = DispatchTime.now().uptimeNanoseconds
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return }
            for task in tasks {
                guard let id = Int(task),
                    let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
                    let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                else { continue }
                let fields = stat.split(separator: " ").compactMap {
                    UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                guard fields.count >= 2 else { continue }
                lock.withLock {
                    var entry =
                        totals[id]
                        ?? ThreadTotals(
                            id: id,
                            name: name.trimmingCharacters(in: .whitespacesAndNewlines),
                            firstSeen: now,
                            lastSeen: now
                        )
                    entry.cpuNanoseconds = fields[0]
                    entry.queuedNanoseconds = fields[1]
                    entry.lastSeen = now
                    totals[id] = entry
                }
            }
        }
    }

    /// The stage a thread belongs to, by its name.
    static func stage(of name: String, isCaller: Bool) -> String? {
        if isCaller { return "walk (calling thread)" }
        if name.hasPrefix("coffer-reader") { return "xattrs, open, read, chunk (coffer-reader-N)" }
        if name.hasPrefix("coffer-worker") { return "hash, compress, encrypt (coffer-worker-N)" }
        if name.hasPrefix("coffer-committe") { return "LMDB writes, tree (coffer-committer)" }
        if name.hasPrefix("coffer-flusher") { return "data file syncs (coffer-flusher)" }
        if name.hasPrefix("bench-sampler") { return nil }
        return "other (\(name))"
    }

    /// Backs up `tree` `runs` times into a fresh vault (the previous snapshot forgotten each time),
    /// profiling each, and prints the median run's profile.
    static func run(tree: SnapshotSuite.Tree, runs: Int, jsonPath: String?) throws {
        try tree.prepare()
        defer { tree.remove() }
        let scratch = try BlobSuite.Scratch()
        defer { scratch.remove() }
        // `/proc/thread-self` links to `<pid>/task/<tid>` of the thread reading it.
        guard
            let callerID = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))
                .flatMap({ $0.split(separator: "/").last.flatMap { Int($0) } })
        else { throw BenchmarkError("cannot read /proc/thread-self") }
        var profiles: [Profile] = []
        print("profiling \(runs) backups of \(tree.path) (\(tree.bytes / 1_000_000) MB) after a warm-up")
        for run in 0...runs {
            for snapshot in try scratch.vault.snapshots.list() { try scratch.vault.snapshots.forget(snapshot.id) }
            try tree.warm()
            let before = try String(contentsOfFile: "/proc/self/task/\(callerID)/schedstat", encoding: .utf8)
            let sampler = Sampler()
            sampler.start()
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try scratch.vault.snapshots.backup(directory: URL(fileURLWithPath: tree.path), name: "bench")
            let wall = DispatchTime.now().uptimeNanoseconds - start
            var threads = sampler.stop()
            // The calling thread lived before the backup: only its change counts.
            let previous = before.split(separator: " ").compactMap {
                UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            for position in threads.indices where threads[position].id == callerID && previous.count >= 2 {
                threads[position].cpuNanoseconds -= min(previous[0], threads[position].cpuNanoseconds)
                threads[position].queuedNanoseconds -= min(previous[1], threads[position].queuedNanoseconds)
                threads[position].firstSeen = start
            }
            guard run > 0 else { continue }
            profiles.append(profile(threads: threads, callerID: callerID, wall: wall, bytes: tree.bytes))
        }
        let median = profiles.sorted { $0.wallSeconds < $1.wallSeconds }[profiles.count / 2]
        printProfile(median)
        if let jsonPath {
            try reportJSON(["median": median]).write(to: URL(fileURLWithPath: jsonPath))
        }
    }

    static func profile(threads: [ThreadTotals], callerID: Int, wall: UInt64, bytes: Int) -> Profile {
        var grouped: [String: [ThreadTotals]] = [:]
        for thread in threads {
            guard let stage = stage(of: thread.name, isCaller: thread.id == callerID) else { continue }
            grouped[stage, default: []].append(thread)
        }
        let wallSeconds = Double(wall) / 1e9
        let stages = grouped.map { name, threads in
            let cpu = Double(threads.reduce(0) { $0 + $1.cpuNanoseconds }) / 1e9
            let queued = Double(threads.reduce(0) { $0 + $1.queuedNanoseconds }) / 1e9
            let life = Double(threads.reduce(0) { $0 + min($1.lastSeen - $1.firstSeen, wall) }) / 1e9
            return Stage(
                stage: name,
                threads: threads.count,
                cpuSeconds: cpu,
                runQueueSeconds: queued,
                blockedSeconds: max(life - cpu - queued, 0),
                cpuMillisecondsPerMB: cpu * 1000 / (Double(bytes) / 1e6),
                busy: cpu / wallSeconds
            )
        }.sorted { $0.cpuSeconds > $1.cpuSeconds }
        let total = stages.reduce(0) { $0 + $1.cpuSeconds }
        let serial = stages.filter { $0.threads == 1 }.map(\.cpuSeconds).max() ?? 0
        let fraction = total > 0 ? serial / total : 0
        var predicted: [String: Double] = [:]
        for count in [4, 8, 16] { predicted["\(count)"] = 1 / (fraction + (1 - fraction) / Double(count)) }
        predicted["limit"] = fraction > 0 ? 1 / fraction : .infinity
        return Profile(
            treeBytes: bytes,
            wallSeconds: wallSeconds,
            stages: stages,
            totalCPUSeconds: total,
            serialFraction: fraction,
            predicted: predicted
        )
    }

    static func printProfile(_ profile: Profile) {
        let width = max(profile.stages.map(\.stage.count).max() ?? 0, 5)
        print(
            String(
                format: "median backup: %.2f s wall, %.2f s CPU, %.1f MB/s",
                profile.wallSeconds,
                profile.totalCPUSeconds,
                Double(profile.treeBytes) / 1e6 / profile.wallSeconds
            )
        )
        print(
            "stage".padding(toLength: width, withPad: " ", startingAt: 0)
                + " threads    CPU s  queued s  blocked s  CPU ms/MB  busy (CPU/wall)"
        )
        for stage in profile.stages {
            print(
                stage.stage.padding(toLength: width, withPad: " ", startingAt: 0)
                    + String(
                        format: " %7d %8.2f %9.2f %10.2f %10.2f %16.2f",
                        stage.threads,
                        stage.cpuSeconds,
                        stage.runQueueSeconds,
                        stage.blockedSeconds,
                        stage.cpuMillisecondsPerMB,
                        stage.busy
                    )
            )
        }
        print(
            String(
                format:
                    "serial fraction (busiest one-thread stage's CPU / all CPU): %.3f; Amdahl predicts ×%.2f at 4 cores, "
                    + "×%.2f at 8, ×%.2f at 16, ×%.2f at most",
                profile.serialFraction,
                profile.predicted["4"] ?? 0,
                profile.predicted["8"] ?? 0,
                profile.predicted["16"] ?? 0,
                profile.predicted["limit"] ?? 0
            )
        )
    }
}
