import Foundation
import Testing

@testable import Coffer

@Suite("zstd")
struct ZstdTests {
    @Test("compress then decompress returns the input, compressible or not", arguments: [0, 1, 100, 65_536, 1 << 20])
    func roundTrip(size: Int) throws {
        let compressor = try ZstdCompressor()
        let decompressor = try ZstdDecompressor()
        let text = [UInt8]((0..<size).map { UInt8(ascii: "a") + UInt8($0 % 7) })
        let random = SecureRandom.bytes(count: size)
        for input in [text, random] {
            let frame = try compressor.compress(input)
            #expect(try decompressor.decompress(frame, limit: size) == input)
        }
        if size >= 65_536 { #expect(try compressor.compress(text).count < size / 10) }
    }

    @Test("a decompression bomb is refused by the size cap before any large allocation")
    func bomb() throws {
        let frame = try ZstdCompressor(level: 19).compress([UInt8](repeating: 0, count: 64 << 20))
        #expect(frame.count < 64 << 10)
        let error = #expect(throws: CompressionError.self) {
            _ = try ZstdDecompressor().decompress(frame, limit: 1 << 20)
        }
        #expect(error?.kind == .exceedsLimit)
        // One byte under the declared size is still refused.
        let exact = try ZstdCompressor().compress([UInt8](repeating: 7, count: 1000))
        #expect(throws: CompressionError.self) { _ = try ZstdDecompressor().decompress(exact, limit: 999) }
        #expect(try ZstdDecompressor().decompress(exact, limit: 1000).count == 1000)
    }

    @Test("garbage and truncated frames fail with a corrupt-data error, not a crash")
    func corrupt() throws {
        let decompressor = try ZstdDecompressor()
        let error = #expect(throws: CompressionError.self) {
            _ = try decompressor.decompress([1, 2, 3, 4, 5, 6, 7, 8], limit: 100)
        }
        #expect(error?.kind == .corrupt)
        let frame = try ZstdCompressor().compress(SecureRandom.bytes(count: 5000))
        #expect(throws: CompressionError.self) {
            _ = try decompressor.decompress(Array(frame.dropLast(10)), limit: 5000)
        }
    }

    @Test("a level outside zstd's range is refused with the range in the message")
    func levels() {
        let error = #expect(throws: CompressionError.self) { _ = try ZstdCompressor(level: 99) }
        #expect(error?.kind == .invalidArgument)
        #expect(error?.description.contains("outside") == true)
        #expect(ZstdCompressor.levels.contains(ZstdCompressor.defaultLevel))
    }
}
