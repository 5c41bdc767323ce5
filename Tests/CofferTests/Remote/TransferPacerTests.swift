import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The pacing behind `--limit-upload` and `--limit-download`, on a given clock (no sleeping, no
/// timing): each request waits for the bytes before it.
@Suite("Transfer limits: requests spaced so their bytes average the rate")
struct TransferPacerTests {
    @Test("Requests wait for the bytes before them; an idle gap is not saved up")
    func schedule() {
        let pacer = TransferPacer(bytesPerSecond: 1000)
        #expect(pacer.delay(for: 500, now: 0) == 0)
        #expect(pacer.delay(for: 500, now: 0) == 500_000_000)
        #expect(pacer.delay(for: 2000, now: 250_000_000) == 750_000_000)
        // Booked through 3 s: at 3.5 s nothing waits, and the pause is not credited.
        #expect(pacer.delay(for: 1000, now: 3_500_000_000) == 0)
        #expect(pacer.delay(for: 1, now: 3_500_000_000) == 1_000_000_000)
    }

    @Test("Over any run of requests the rate holds", arguments: [1, 7, 1024, 1 << 20])
    func averageRate(bytesPerSecond: Int) {
        let pacer = TransferPacer(bytesPerSecond: bytesPerSecond)
        var generator = SplitMix64(seed: UInt64(bytesPerSecond))
        var now: UInt64 = 0
        var before = 0
        for _ in 0..<200 {
            let bytes = Int(generator.next() % 100_000) + 1
            now += pacer.delay(for: bytes, now: now)
            // When a request starts, every byte before it has had its time at the rate (each
            // booking rounds down by less than a nanosecond).
            #expect(Double(before) <= Double(bytesPerSecond) * (Double(now) + 200) / 1e9)
            before += bytes
        }
    }
}
