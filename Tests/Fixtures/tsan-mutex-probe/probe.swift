// Why ThreadSanitizer cannot check Coffer's suite yet: two threads append to an array under Swift's
// Synchronization.Mutex, correctly locked, and TSan on Linux still reports a data race, because it
// does not see Mutex's futex-based lock. Run:
//   swiftc -sanitize=thread -O Tests/Fixtures/tsan-mutex-probe/probe.swift -o /tmp/probe && /tmp/probe
// (Not part of the package build.)
import Dispatch
import Foundation
import Synchronization

final class Holder<State>: @unchecked Sendable {
    let state: Mutex<State>
    init(_ s: sending State) { state = Mutex(s) }
}
let holder = Holder<[Int]>([])
let group = DispatchGroup()
for t in 0..<2 {
    group.enter()
    Thread.detachNewThread {
        for i in 0..<10_000 { holder.state.withLock { $0.append(t * 100_000 + i) } }
        group.leave()
    }
}
group.wait()
print(holder.state.withLock { $0.count })
