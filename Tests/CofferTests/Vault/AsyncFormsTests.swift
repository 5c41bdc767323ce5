import CofferTestSupport
import Dispatch
import Foundation
import Testing

@testable import Coffer

/// The async forms run their work off Swift's cooperative pool, whose width is the core count: more
/// calls in flight than the pool has threads, with a task on the pool still running, can only happen
/// if no call holds a pool thread while it works. A blocking form would fill the pool and stop both.
///
/// The tasks run on an executor of their own as wide as the cooperative pool (``PoolLikeExecutor``):
/// tests running in parallel that block the real pool's threads cannot starve it, and a blocking form
/// starves it as it would the pool (checked by making `offload` run its body in place: both tests fail).
@Suite("Async forms: off the cooperative pool")
struct AsyncFormsTests {
    /// The cooperative pool's width: one thread per core.
    static let poolWidth = ProcessInfo.processInfo.activeProcessorCount

    /// Where the tasks run: `poolWidth` threads, as the cooperative pool.
    let pool = PoolLikeExecutor(width: poolWidth)

    /// More calls than the pool has threads, and few enough that their scrypt memory stays modest.
    static let calls = poolWidth + 4

    @Test("opens and scrypt unlocks, more than the pool's threads at once, while a task keeps ticking")
    func unlocksLeaveThePoolFree() async throws {
        var slowKDF = Vault.Configuration()
        // Each unlock costs tens of milliseconds (16 MiB of scrypt), so the calls overlap.
        slowKDF.kdf = KDFParameters(logN: 14, r: 8, p: 1)
        let configuration = slowKDF
        let directory = try TemporaryDirectory()
        let url = directory.path("vault")
        try await Vault.create(at: url, passphrase: "correct horse battery staple", configuration: configuration)
            .close()
        let calls = Self.calls
        let width = Self.poolWidth
        let inFlight = Locked((now: 0, peak: 0))
        let started = Gate(count: calls)
        let ticker = Ticker(on: pool) { inFlight.withLock { $0.now } > width }
        let vaults = try await withThrowingTaskGroup(of: Vault.self) { group in
            for _ in 0..<calls {
                group.addTask(executorPreference: pool) {
                    let vault = try await Vault.open(at: url, configuration: configuration)
                    // Every unlock starts together, once every task is running.
                    await started.arrive()
                    inFlight.withLock { state in
                        state.now += 1
                        state.peak = max(state.peak, state.now)
                    }
                    defer { inFlight.withLock { $0.now -= 1 } }
                    try await vault.unlock(passphrase: "correct horse battery staple")
                    return vault
                }
            }
            var vaults: [Vault] = []
            for try await vault in group { vaults.append(vault) }
            return vaults
        }
        let ticks = await ticker.stop()
        #expect(vaults.allSatisfy { !$0.isLocked })
        for vault in vaults { vault.close() }
        let peak = inFlight.withLock { $0.peak }
        #expect(peak > width, "at most \(peak) unlocks ran at once on a pool of \(width) threads")
        #expect(ticks > 0, "the ticking task never ran while more than \(width) unlocks were in flight")
    }

    @Test("blob writes, more than the pool's threads stopped midway at once, let a task on the pool run")
    func writesLeaveThePoolFree() async throws {
        let vault = try VaultFixture().create()
        let calls = Self.calls
        // Each write stops in its progress report, after its content is stored and before it
        // commits, until a task on the cooperative pool has seen every write stopped there.
        let gate = Locked((stopped: 0, isOpen: false, timedOut: 0))
        let release = DispatchSemaphore(value: 0)
        let progress: BlobProgress = { _ in
            let stops = gate.withLock { state in
                if !state.isOpen { state.stopped += 1 }
                return !state.isOpen
            }
            guard stops else { return }
            if release.wait(timeout: .now() + 30) == .timedOut { gate.withLock { $0.timedOut += 1 } }
        }
        let opener = Task(executorPreference: pool) {
            var ticks = 0
            while gate.withLock({ $0.stopped }) < calls {
                ticks += 1
                try await Task.sleep(for: .milliseconds(1))
            }
            gate.withLock { $0.isOpen = true }
            for _ in 0..<calls { release.signal() }
            return ticks
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<calls {
                group.addTask(executorPreference: pool) {
                    let content = Content.random(256 << 10, seed: UInt64(index))
                    let info = try await vault.blobs.write("w\(index)", data: Data(content), progress: progress)
                    #expect(info.size == 256 << 10)
                }
            }
            try await group.waitForAll()
        }
        let ticks = try await opener.value
        #expect(gate.withLock { $0.timedOut } == 0, "writes waited on a pool that never ran the task releasing them")
        #expect(ticks > 0)
        #expect(try await vault.blobs.list(prefix: "w").count == calls)
    }

    @Test("the async forms give the sync forms' results and errors")
    func sameSemantics() async throws {
        let fixture = try VaultFixture()
        let created = try await Vault.create(
            at: fixture.vaultURL,
            passphrase: "correct horse battery staple",
            configuration: fixture.configuration
        )
        let recovery = try await created.recoveryKey()
        created.close()
        let vault = try await Vault.open(at: fixture.vaultURL, configuration: fixture.configuration)
        let wrong = await #expect(throws: CofferError.self) { try await vault.unlock(passphrase: "wrong") }
        #expect(wrong?.code == .authFailed)
        try await vault.unlock(recoveryKey: recovery)
        try await vault.changePassphrase(to: "a new passphrase")
        vault.lock()
        try await vault.unlock(passphrase: "a new passphrase")

        let blobs = vault.blobs
        let source = fixture.directory.path("source.bin")
        try Data(Content.random(100_000, seed: 9)).write(to: source)
        try await blobs.write("file", contentsOf: source)
        try await blobs.write("data", data: Data([1, 2, 3]))
        try await blobs.write("settings", encoding: ["theme": "dark"])
        #expect(try await blobs.value("settings", as: [String: String].self) == ["theme": "dark"])
        let target = fixture.directory.path("target.bin")
        try await blobs.read("file", to: target)
        #expect(try Data(contentsOf: target) == Data(contentsOf: source))
        #expect(try await blobs.data("data", range: 1..<3) == Data([2, 3]))
        try await blobs.rename("data", to: "data2")
        #expect(try await blobs.contains("data2"))
        try await blobs.delete("data2")
        let missing = await #expect(throws: CofferError.self) { try await blobs.stat("data2") }
        #expect(missing?.code == .itemNotFound)
        #expect(try await blobs.verify(readingData: true).isHealthy)

        try await vault.keychain.setPassword("pw", service: "mail", account: "ann")
        #expect(try await vault.keychain.deletePassword(service: "mail", account: "ann"))
        #expect(try await !vault.keychain.deletePassword(service: "mail", account: "ann"))

        let tree = fixture.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: tree.appendingPathComponent("a.txt"))
        let backup = try await vault.snapshots.backup(directory: tree, options: BackupOptions(name: "tree"))
        #expect(try await vault.snapshots.list().map(\.id) == [backup.snapshot.id])
        #expect(try await vault.snapshots.entries(of: "tree").map(\.path) == [".", "a.txt"])
        let restored = fixture.directory.path("restored")
        _ = try await vault.snapshots.restore("tree", to: restored)
        #expect(try Data(contentsOf: restored.appendingPathComponent("a.txt")) == Data("hello".utf8))
        try await vault.snapshots.forget("tree")
        let forgotten = await #expect(throws: CofferError.self) { try await vault.snapshots.snapshot("tree") }
        #expect(forgotten?.code == .itemNotFound)
        vault.close()
    }
}

/// Lets tasks through once `count` of them have arrived.
private actor Gate {
    private let count: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { self.count = count }

    func arrive() async {
        await withCheckedContinuation { continuation in
            waiting.append(continuation)
            if waiting.count == count {
                for waiter in waiting { waiter.resume() }
                waiting = []
            }
        }
    }
}

/// A task on `executor` that wakes every millisecond and counts the wake-ups at which `counts` holds.
private struct Ticker {
    private let task: Task<Int, Never>

    init(on executor: PoolLikeExecutor, counts: @escaping @Sendable () -> Bool) {
        task = Task(executorPreference: executor) {
            var ticks = 0
            while !Task.isCancelled {
                if counts() { ticks += 1 }
                try? await Task.sleep(for: .milliseconds(1))
            }
            return ticks
        }
    }

    /// Stops the task; the ticks it counted.
    func stop() async -> Int {
        task.cancel()
        return await task.value
    }
}

/// A task executor that runs jobs on at most `width` threads at once, as Swift's cooperative pool
/// does, but for these tests alone.
final class PoolLikeExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = OperationQueue()

    /// An executor running at most `width` jobs at once.
    init(width: Int) {
        queue.maxConcurrentOperationCount = width
    }

    /// Runs `job` once one of the `width` threads is free.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.addOperation { job.runSynchronously(on: executor) }
    }
}
