import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Keychain: concurrency")
struct KeychainConcurrencyTests {
    @Test("many threads add, read and update at once: nothing lost, nothing torn")
    func threads() throws {
        let vault = try VaultFixture().create()
        let keychain = vault.keychain
        try keychain.setPassword("0", service: "shared", account: "counter")
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            do {
                for round in 0..<40 {
                    try keychain.add(Items.password("w\(worker)", "r\(round)", value: "\(worker)-\(round)"))
                    if let value = try keychain.password(service: "w\(worker)", account: "r\(round)"),
                        value != "\(worker)-\(round)"
                    {
                        failures.record("read \(value)")
                    }
                    try keychain.setPassword("\(worker)", service: "shared", account: "counter")
                    if round % 10 == 0 {
                        do {
                            _ = try keychain.find(Items.query(service: "w\((worker + 1) % 8)"))
                        } catch KeychainError.Code.itemNotFound {
                            // The neighbour may not have added its first item yet.
                        }
                    }
                }
            } catch {
                failures.record("\(error)")
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all)")
        for worker in 0..<8 { #expect(try keychain.find(Items.query(service: "w\(worker)")).count == 40) }
        #expect(try keychain.find(Items.query(service: "shared")).count == 1)
    }

    @Test("many tasks use the async API at once while the vault locks and unlocks")
    func tasks() async throws {
        let vault = try VaultFixture().create()
        let keychain = vault.keychain
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for index in 0..<20 {
                        try await keychain.add(
                            Items.password("t\(task)", "i\(index)", value: "\(index)", accessibility: .afterFirstUnlock)
                        )
                        #expect(try await keychain.password(service: "t\(task)", account: "i\(index)") == "\(index)")
                    }
                }
            }
            group.addTask {
                for _ in 0..<5 {
                    vault.lock()
                    try vault.unlock(passphrase: "correct horse battery staple")
                }
            }
            try await group.waitForAll()
        }
        #expect(try await keychain.find(ItemQuery(.genericPassword)).count == 16 * 20)
    }
}
