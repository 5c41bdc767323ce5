import Foundation
import Testing

@testable import Coffer

@Suite("Thread names the operating system shows")
struct ThreadNameTests {
    @Test("a thread's name shows in /proc, cut to 15 bytes")
    func nameShowsInProc() throws {
        let done = DispatchSemaphore(value: 0)
        let seen = Locked<[String]>([])
        let thread = Thread {
            nameCurrentThread("coffer-worker-3")
            let short = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            nameCurrentThread("coffer-committer-and-more")
            let long = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            seen.withLock { $0 = [short ?? "", long ?? ""] }
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(seen.withLock { $0 } == ["coffer-worker-3\n", "coffer-committe\n"])
    }
}
