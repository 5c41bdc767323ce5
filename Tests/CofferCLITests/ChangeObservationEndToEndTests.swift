import Coffer
import CofferTestSupport
import Foundation
import Glibc
import Testing

/// `vault.changes()` in this process, fed by `coffer` commands in others: every change arrives within
/// a second of the command ending, named, marked as another handle's, with the writer's process id.
@Suite("Change observation across processes")
struct ChangeObservationEndToEndTests {
    @Test("changes made by other processes reach an AsyncSequence consumer within a second")
    func otherProcesses() async throws {
        let cli = try CLIHarness()
        let file = cli.directory.path("note.txt")
        try Data("hello".utf8).write(to: file)
        let vault = try await Vault.open(at: cli.directory.path("vault"))
        try await vault.unlock(passphrase: "pw")
        defer { vault.close() }
        let received = Locked<[(VaultChange, Date)]>([])
        let sequence = vault.changes()
        // Its own executor: tests that block the cooperative pool's threads cannot starve it.
        let executor = DedicatedExecutor(label: "change-consumer")
        let consumer = Task(executorPreference: executor) {
            do {
                for try await change in sequence {
                    received.withLock { $0.append((change, Date())) }
                }
            } catch {}
        }
        defer { consumer.cancel() }
        var ended: [Date] = []
        for arguments in [
            ["put", "notes/hello.txt", file.path],
            ["item", "add", "--service", "mail", "--account", "ann", "--value", "pw1"],
            ["rm", "notes/hello.txt"],
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.error)")
            ended.append(Date())
        }
        let deadline = Date().addingTimeInterval(5)
        while received.withLock({ $0.count }) < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let changes = received.withLock { $0 }
        try #require(changes.count == 3, "\(changes.map(\.0))")
        #expect(changes.map(\.0.name) == ["notes/hello.txt", "mail", "notes/hello.txt"])
        #expect(changes.map(\.0.operation) == [.put, .put, .delete])
        #expect(changes.allSatisfy { $0.0.origin == .anotherHandle && $0.0.processID != getpid() })
        for (index, (change, arrived)) in changes.enumerated() {
            #expect(arrived.timeIntervalSince(ended[index]) < 1, "\(change.name ?? "") arrived late")
        }
    }
}
