import CofferTestSupport
import Foundation
import Testing

/// The remote kill loop (issue 23): `coffer push`, `pull` and `remote compact` SIGKILLed at random
/// moments against a real SeaweedFS, then every acknowledged item must be on every vault and on a new
/// one joining from the store. `Tools/remote-kill-loop` runs the same loop for longer (100 iterations
/// by default).
@Suite("Remote kill loop: push, pull and compact killed at random moments lose nothing acknowledged")
struct RemoteKillLoopTests {
    /// `COFFER_REMOTE_KILL_ITERATIONS`, else 20 (the bound for CI).
    static var iterations: Int {
        ProcessInfo.processInfo.environment["COFFER_REMOTE_KILL_ITERATIONS"].flatMap { Int($0) } ?? 20
    }

    @Test("SIGKILL at random moments of push, pull and remote compact")
    func randomKills() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let seed = ProcessInfo.processInfo.environment["COFFER_REMOTE_KILL_SEED"] ?? "\(UInt32.random(in: 1...999_999))"
        let result = try Products.run(
            root.appendingPathComponent("Tools/remote-kill-loop"),
            ["\(Self.iterations)", seed],
            environment: ProcessInfo.processInfo.environment.merging([
                "COFFER_BIN": try Products.executable("coffer").path
            ]) { _, new in new }
        )
        #expect(result.status == 0, "replay with COFFER_REMOTE_KILL_SEED=\(seed): \(result.output) \(result.error)")
        #expect(result.output.contains("0 failures"), "\(result.output)")
    }
}
