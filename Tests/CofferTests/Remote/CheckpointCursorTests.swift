import Testing

@testable import Coffer

/// How far a checkpoint's cut moves a device's cursor (docs/FORMAT.md, "Compaction"): across changes
/// the store holds in no listed bundle of the device's chain, never past one nor past its head.
@Suite("Checkpoint cursors: a cut moves a cursor only across what no listed bundle holds")
struct CheckpointCursorTests {
    typealias Name = RemoteLayout.BundleName

    @Test("An honest cut over deleted bundles moves the cursor to its through")
    func acrossDeletedBundles() {
        let chain = Vault.Chain(bundles: [Name(first: 11, last: 12)], end: 12)
        #expect(chain.cursorAfterCheckpoint(10, applied: 0) == 10)
        #expect(chain.cursorAfterCheckpoint(10, applied: 4) == 10)
    }

    @Test("A cut claiming changes a listed bundle holds stops before that bundle")
    func neverPastAListedBundle() {
        let chain = Vault.Chain(bundles: [Name(first: 5, last: 6), Name(first: 7, last: 9)], end: 9)
        #expect(chain.cursorAfterCheckpoint(9, applied: 0) == 4)
        #expect(chain.cursorAfterCheckpoint(9, applied: 6) == 6)
        #expect(chain.cursorAfterCheckpoint(3, applied: 0) == 3)
    }

    @Test("A cut claiming past the head stops at the head (red team round 23; copies model seed 25894)")
    func neverPastTheHead() {
        let chain = Vault.Chain(bundles: [], end: 8)
        #expect(chain.cursorAfterCheckpoint(1 << 40, applied: 0) == 8)
        #expect(chain.cursorAfterCheckpoint(RemoteLayout.largestSequence, applied: 8) == 8)
    }

    @Test("Without a head this vault trusts, a cut moves nothing")
    func nothingWithoutAHead() {
        #expect(Vault.Chain().cursorAfterCheckpoint(1 << 40, applied: 0) == 0)
        #expect(Vault.Chain().cursorAfterCheckpoint(1 << 40, applied: 3) == 0)
    }

    @Test("Answer-only bundles (first past last) continue nothing")
    func answerOnlyBundlesIgnored() {
        let chain = Vault.Chain(bundles: [Name(first: 4, last: 3)], end: 3)
        #expect(chain.cursorAfterCheckpoint(3, applied: 0) == 3)
    }
}
