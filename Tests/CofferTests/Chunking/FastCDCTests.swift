import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("FastCDC chunking")
struct FastCDCTests {
    static let seed = SecureBytes(copying: [UInt8](repeating: 0x42, count: 32))
    let chunker: FastCDC

    init() throws { chunker = FastCDC(gear: try GearTable(seed: Self.seed)) }

    func lengths(_ data: [UInt8]) -> [Int] { data.withUnsafeBytes { chunker.chunkLengths(of: $0) } }

    @Test("chunks stay within 16 KiB and 256 KiB (the last may be shorter) and cover the input exactly")
    func bounds() {
        let data = SplitMix64.bytes(8 << 20, seed: 1)
        let sizes = lengths(data)
        #expect(sizes.reduce(0, +) == data.count)
        #expect(sizes.dropLast().allSatisfy { $0 >= 16 << 10 && $0 <= 256 << 10 })
        // Long runs of one byte have no cut points: they cut at the maximum.
        let flat = [UInt8](repeating: 0, count: 1 << 20)
        #expect(lengths(flat) == [256 << 10, 256 << 10, 256 << 10, 256 << 10])
    }

    @Test("the average chunk on random data is near 64 KiB (normalized chunking)")
    func average() {
        let data = SplitMix64.bytes(32 << 20, seed: 2)
        let sizes = lengths(data)
        let mean = data.count / sizes.count
        #expect(mean > 48 << 10 && mean < 96 << 10, "mean \(mean)")
        let small = sizes.filter { $0 < 32 << 10 }.count
        #expect(small * 10 < sizes.count, "normalization keeps few chunks far below the average")
    }

    @Test("tiny inputs: empty gives no chunk, anything up to the minimum one chunk")
    func tiny() {
        #expect(lengths([]).isEmpty)
        #expect(lengths([7]) == [1])
        #expect(lengths([UInt8](repeating: 1, count: 16 << 10)) == [16 << 10])
    }

    @Test("cutting a stream in arbitrary pieces gives the same chunks as cutting the whole buffer")
    func streaming() {
        let data = SplitMix64.bytes(4 << 20, seed: 3)
        var pending: [UInt8] = []
        var streamed: [Int] = []
        var generator = SplitMix64(seed: 9)
        var offset = 0
        while offset < data.count {
            let piece = Int(generator.next() % 200_000) + 1
            pending += data[offset..<min(offset + piece, data.count)]
            offset += piece
            let isFinal = offset >= data.count
            while let length = pending.withUnsafeBytes({ chunker.cut($0, isFinal: isFinal) }) {
                streamed.append(length)
                pending.removeFirst(length)
            }
        }
        #expect(pending.isEmpty)
        #expect(streamed == lengths(data))
    }

    @Test("an insertion in the middle changes only the chunks around it")
    func editResilience() {
        let original = SplitMix64.bytes(8 << 20, seed: 4)
        var edited = original
        edited.insert(contentsOf: [UInt8](repeating: 0xEE, count: 100), at: 4 << 20)
        func chunks(_ data: [UInt8]) -> [ArraySlice<UInt8>] {
            var offset = 0
            return lengths(data).map { length in
                defer { offset += length }
                return data[offset..<(offset + length)]
            }
        }
        let before = Set(chunks(original).map(Array.init))
        let after = chunks(edited)
        let reused = after.filter { before.contains(Array($0)) }.count
        #expect(after.count - reused <= 3, "\(after.count - reused) of \(after.count) chunks changed")
    }

    @Test("another seed cuts the same data elsewhere")
    func seedMatters() throws {
        let data = SplitMix64.bytes(2 << 20, seed: 5)
        let other = FastCDC(gear: try GearTable(seed: SecureBytes(copying: [UInt8](repeating: 0x43, count: 32))))
        let otherLengths = data.withUnsafeBytes { other.chunkLengths(of: $0) }
        #expect(otherLengths != lengths(data))
    }

    @Test("pinned boundaries: these lengths are part of the format (dedup against existing vaults)")
    func knownAnswer() {
        let sizes = lengths(SplitMix64.bytes(1 << 20, seed: 6))
        #expect(sizes == FastCDCTests.pinned, "\(sizes)")
    }

    /// Computed once by this implementation (seed 0x42×32, SplitMix64 seed 6, 1 MiB) and pinned.
    static let pinned = [
        66475, 80438, 55715, 100_300, 94617, 124_730, 140_429, 67199, 84933, 66933, 73164, 25292, 33853, 34498,
    ]
}
