import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Lock-state observation: vault.lockStates()")
struct LockStateTests {
    @Test("the current state first, then unlocks, locks and the close, after which the stream ends")
    func lockUnlockClose() async throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let states = ChangeCollector(vault.lockStates())
        defer { states.stop() }
        #expect(await states.wait(for: 1) == [.unlocked])
        vault.lock()
        vault.lock()  // already locked: nothing to report
        try await vault.unlock(passphrase: "correct horse battery staple")
        try await vault.unlock(passphrase: "correct horse battery staple")  // already unlocked: nothing
        vault.lock()
        vault.close()
        #expect(await states.waitForEnd(), "the stream ends at close")
        #expect(await states.wait(for: 5) == [.unlocked, .locked, .unlocked, .locked, .closed])
        #expect(vault.lockState == .closed)
    }

    @Test("an opened vault starts locked; a stream made after close reports closed and ends")
    func openedAndClosed() async throws {
        let fixture = try VaultFixture()
        try fixture.create().close()
        let vault = try fixture.open()
        #expect(vault.lockState == .locked)
        let states = ChangeCollector(vault.lockStates())
        defer { states.stop() }
        #expect(await states.wait(for: 1) == [.locked])
        let error = await #expect(throws: CofferError.self) { try await vault.unlock(passphrase: "wrong") }
        #expect(error?.code == .authFailed)
        vault.close()
        #expect(await states.waitForEnd())
        #expect(await states.wait(for: 2) == [.locked, .closed], "a failed unlock reports nothing")
        let late = ChangeCollector(vault.lockStates())
        #expect(await late.waitForEnd())
        #expect(await late.wait(for: 1) == [.closed])
    }

    @Test("an auto-lock after the idle timeout is reported as such")
    func autoLock() async throws {
        let fixture = try VaultFixture.configured { $0.autoLockInterval = .milliseconds(200) }
        let vault = try fixture.create()
        defer { vault.close() }
        let states = ChangeCollector(vault.lockStates())
        defer { states.stop() }
        let seen = await states.wait(for: 2, seconds: 10)
        #expect(seen == [.unlocked, .autoLocked])
        #expect(vault.lockState == .autoLocked)
        #expect(vault.isLocked && vault.lockState.isLocked)
        try await vault.unlock(passphrase: "correct horse battery staple")
        #expect(await states.wait(for: 3, seconds: 10).prefix(3) == [.unlocked, .autoLocked, .unlocked])
    }

    @Test("a second stream sees the same states; a cancelled consumer no longer holds one")
    func severalStreams() async throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        defer { vault.close() }
        let first = ChangeCollector(vault.lockStates())
        let second = ChangeCollector(vault.lockStates())
        #expect(await first.wait(for: 1) == [.unlocked])
        #expect(await second.wait(for: 1) == [.unlocked])
        first.stop()
        #expect(await first.waitForEnd())
        vault.lock()
        #expect(await second.wait(for: 2) == [.unlocked, .locked])
        second.stop()
    }
}
