import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Blob round trips")
struct BlobRoundTripTests {
    let fixture: VaultFixture
    let vault: Vault

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
    }

    @Test(
        "content of every size around the chunk bounds reads back exactly, with its digest",
        arguments: [0, 1, 100, 16_383, 16_384, 16_385, 65_536, 262_143, 262_144, 262_145, 1_048_583, 3_000_001]
    )
    func sizes(size: Int) throws {
        let content = Content.mixed(size, seed: UInt64(size))
        let info = try vault.blobs.write("blob-\(size)", data: content)
        #expect(info.size == Int64(size))
        #expect(info.sha256 == (try SHA256.hash(content)))
        #expect(try [UInt8](vault.blobs.data("blob-\(size)")) == content)
        let random = Content.random(size, seed: UInt64(size) + 1)
        try vault.blobs.write("random-\(size)", data: random)
        #expect(try [UInt8](vault.blobs.data("random-\(size)")) == random)
    }

    @Test("random sizes and contents round-trip (property)")
    func randomContents() throws {
        var generator = SplitMix64(seed: 42)
        for round in 0..<12 {
            let size = Int(generator.next() % 2_000_000)
            let content =
                round % 2 == 0
                ? Content.mixed(size, seed: generator.next()) : Content.random(size, seed: generator.next())
            try vault.blobs.write("r", data: content)
            #expect(try [UInt8](vault.blobs.data("r")) == content, "size \(size)")
        }
    }

    @Test("100 MiB streams from a file to a file, and the vault stays the same after a second write")
    func largeFile() throws {
        let input = fixture.directory.path("input")
        var content = Content.mixed(60 << 20, seed: 7)
        content += Content.random(40 << 20, seed: 8)
        try Data(content).write(to: input)
        let info = try vault.blobs.write("large", contentsOf: input)
        #expect(info.size == 100 << 20)
        #expect(info.chunkCount > 256, "large blobs use indirect chunk lists")
        let output = fixture.directory.path("output")
        try vault.blobs.read("large", to: output)
        #expect(try Data(contentsOf: output) == Data(content))
        let before = try vault.blobs.statistics()
        try vault.blobs.write("large", contentsOf: input)
        let after = try vault.blobs.statistics()
        #expect(after.storedBytes == before.storedBytes, "rewriting unchanged content stores nothing new")
    }

    @Test("byte ranges read exactly the bytes asked for, across chunk and list-chunk boundaries")
    func ranges() throws {
        let small = try VaultFixture.smallChunks()
        let vault = try small.create()
        let content = Content.mixed(9 << 20, seed: 3)
        let info = try vault.blobs.write("ranged", data: content)
        #expect(info.chunkCount > ChunkList.entriesPerListChunk, "spans several list chunks")
        var generator = SplitMix64(seed: 9)
        var cases: [Range<Int>] = [0..<0, 0..<1, 0..<content.count, content.count - 1..<content.count]
        for _ in 0..<20 {
            let a = Int(generator.next() % UInt64(content.count))
            let b = Int(generator.next() % UInt64(content.count))
            cases.append(min(a, b)..<max(a, b))
        }
        for range in cases {
            let read = try vault.blobs.data("ranged", range: Int64(range.lowerBound)..<Int64(range.upperBound))
            #expect([UInt8](read) == Array(content[range]), "range \(range)")
        }
        let error = #expect(throws: CofferError.self) {
            _ = try vault.blobs.data("ranged", range: 10..<Int64(content.count + 1))
        }
        #expect(error?.code == .param)
    }

    @Test("async sequences in and out")
    func asyncStreams() async throws {
        let content = Content.mixed(5 << 20, seed: 11)
        let pieces = stride(from: 0, to: content.count, by: 100_000).map {
            Data(content[$0..<min($0 + 100_000, content.count)])
        }
        let sequence = AsyncStream<Data> { continuation in
            for piece in pieces { continuation.yield(piece) }
            continuation.finish()
        }
        let info = try await vault.blobs.write("async", from: sequence)
        #expect(info.size == Int64(content.count))
        var collected = Data()
        for try await piece in vault.blobs.bytes("async") { collected.append(piece) }
        #expect([UInt8](collected) == content)
        var ranged = Data()
        for try await piece in vault.blobs.bytes("async", range: 1000..<2_000_000) { ranged.append(piece) }
        #expect([UInt8](ranged) == Array(content[1000..<2_000_000]))
    }

    @Test("a reader that stops early releases the reading thread")
    func earlyStop() async throws {
        try await vault.blobs.write("long", data: Content.random(20 << 20, seed: 12))
        var pieces = 0
        for try await _ in vault.blobs.bytes("long") {
            pieces += 1
            if pieces == 2 { break }
        }
        #expect(pieces == 2)
        // The abandoned stream's thread must end (it holds no transaction), so writes and close proceed.
        try await vault.blobs.write("after", data: [1, 2, 3])
        #expect(try await [UInt8](vault.blobs.data("after")) == [1, 2, 3])
        vault.close()
    }

    @Test("a failing async sequence stores nothing")
    func failingSequence() async throws {
        struct Broken: Error {}
        let sequence = AsyncThrowingStream<Data, any Error> { continuation in
            continuation.yield(Data(Content.random(1 << 20, seed: 1)))
            continuation.finish(throwing: Broken())
        }
        let error = await #expect(throws: CofferError.self) { try await vault.blobs.write("broken", from: sequence) }
        #expect(error?.code == .io)
        #expect(try await !vault.blobs.contains("broken"))
        let stats = try await vault.blobs.statistics()
        #expect(stats.chunkCount == 0, "the chunks stored before the failure were released")
    }
}
