import CofferTestSupport
import Foundation
import Glibc
import Testing

@testable import Coffer

/// A file written behind in 4 MiB pieces (``WriteBehindFile``): whatever the size and however the
/// bytes arrive, with direct I/O or through the page cache, the file holds exactly them once committed,
/// and nothing but the old file (or nothing) when dropped before.
@Suite("Write-behind files: exact content, direct or buffered, nothing left behind")
struct WriteBehindFileTests {
    static let piece = WriteBehindFile.pieceSize
    static let sizes = [0, 1, 4095, 4096, 65_537, piece - 1, piece, piece + 1, 3 * piece + 12_345, 5 * piece]

    @Test(
        "sizes around the piece and block boundaries, in random writes, direct and buffered",
        arguments: [true, false]
    )
    func roundTrip(directIO: Bool) throws {
        let directory = try TemporaryDirectory()
        let takesDirectIO = Self.takesDirectIO(directory.path("probe").path)
        for seed in ModelSeeds.seeds("COFFER_WRITE_BEHIND_SEEDS", defaults: [3, 2026]) {
            var random = SplitMix64(seed: seed)
            for size in Self.sizes {
                let content = SplitMix64.bytes(size, seed: seed &+ UInt64(size))
                let url = directory.path("out")
                let file = try WriteBehindFile(path: url.path, directIO: directIO)
                #expect(file.isDirect == (directIO && takesDirectIO))
                var offset = 0
                while offset < size {
                    // Writes from a byte to a piece and a half, as chunks of any size arrive.
                    let count = min(size - offset, Int.random(in: 1...(Self.piece * 3 / 2), using: &random))
                    try content[offset..<(offset + count)].withUnsafeBytes { try file.write($0) }
                    offset += count
                }
                try file.commit()
                let written = try Data(contentsOf: url)
                #expect(written.count == size, "seed \(seed), size \(size)")
                #expect(written == Data(content), "seed \(seed), size \(size)")
                #expect(TemporaryDirectory.listing(directory.url) == ["out"], "seed \(seed): a temporary file is left")
            }
        }
    }

    /// Whether the file system at `path` lets a file be opened for direct I/O (most do; tmpfs before
    /// Linux 6.6 does not).
    static func takesDirectIO(_ path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | __O_DIRECT, 0o600)
        defer {
            if descriptor >= 0 { close(descriptor) }
            unlink(path)
        }
        return descriptor >= 0
    }

    @Test("dropped before commit, mid-piece or after several: the old file stays, no temporary is left")
    func dropped() throws {
        let directory = try TemporaryDirectory()
        let url = directory.path("out")
        try Data("old".utf8).write(to: url)
        for count in [0, 100, 2 * Self.piece + 100] {
            do {
                let file = try WriteBehindFile(path: url.path)
                try SplitMix64.bytes(count, seed: 9).withUnsafeBytes { try file.write($0) }
            }
            #expect(try Data(contentsOf: url) == Data("old".utf8), "after \(count) bytes")
            #expect(TemporaryDirectory.listing(directory.url) == ["out"], "after \(count) bytes")
        }
    }

    @Test("a directory that does not exist is named in the error")
    func missingDirectory() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("absent/out").path
        #expect {
            _ = try WriteBehindFile(path: path)
        } throws: { error in
            (error as? CofferError)?.message.contains(directory.path("absent").path) == true
        }
    }
}
