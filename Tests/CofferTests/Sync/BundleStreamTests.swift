import Foundation
import Testing

@testable import Coffer

@Suite("Bundle STREAM: known answers, round trips, and every way a stream can be broken")
struct BundleStreamTests {
    static let root = SecureBytes(copying: (0..<32).map { UInt8($0) })

    /// The vectors' header: fixed salt, prefix and ids, of format version 1 (version 2 adds fields to
    /// the header; the stream over it is the same construction).
    static func header(first: UInt64 = 1, last: UInt64 = 42, segmentSize: Int = 65536) -> BundleHeader {
        var header = BundleHeader(
            syncGroupID: UUID(uuidString: "11111111-2222-3333-4444-555555555555")!,
            deviceID: UUID(uuidString: "66666666-7777-8888-9999-AAAAAAAAAAAA")!,
            firstSequence: first,
            lastSequence: last,
            salt: (100..<132).map { UInt8($0) },
            noncePrefix: (0xA0..<0xA7).map { UInt8($0) },
            segmentSize: segmentSize,
            joinBlock: []
        )
        header.version = 1
        return header
    }

    static func plaintext(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }

    static func seal(_ plaintext: [UInt8], header: BundleHeader, root: SecureBytes = root) throws -> [UInt8] {
        var writer = try BundleStreamWriter(header: header, key: try header.streamKey(syncRoot: root), sink: DataSink())
        // Feed in uneven pieces, as a real export does.
        var offset = 0
        var step = 1
        while offset < plaintext.count {
            let end = min(plaintext.count, offset + step)
            try plaintext[offset..<end].withUnsafeBytes { try writer.write($0) }
            offset = end
            step = step * 3 + 1
        }
        return [UInt8](try writer.finish().data)
    }

    static func open(_ bundle: [UInt8], root: SecureBytes = root) throws -> [UInt8] {
        var source = DataSource(bundle)
        let (header, bytes) = try BundleHeader.read(from: &source)
        var reader = try BundleStreamReader(
            source: source,
            header: header,
            headerBytes: bytes,
            key: try header.streamKey(syncRoot: root)
        )
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 10_000)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if count == 0 { break }
            output += buffer[0..<count]
        }
        return output
    }

    @Test("the writer matches vectors computed with Python's cryptography, and the reader opens them")
    func knownAnswers() throws {
        let text = try Vectors.text("coffer-bundle-stream.txt")
        var records: [[String: String]] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0] == "FIRST" { records.append([:]) }
            records[records.count - 1][parts[0]] = parts[1]
        }
        #expect(records.count == 4)
        for record in records {
            let header = Self.header(first: UInt64(record["FIRST"]!)!, last: UInt64(record["LAST"]!)!)
            let plaintext = Self.plaintext(Int(record["LENGTH"]!)!)
            let bundle = try Self.seal(plaintext, header: header)
            #expect(bundle.count == Int(record["BUNDLELENGTH"]!)!, "length \(plaintext.count)")
            #expect(try SHA256.hash(bundle).hex == record["SHA256"], "length \(plaintext.count)")
            #expect(Array(bundle.suffix(48)).hex == record["TAIL"])
            #expect(try Self.open(bundle) == plaintext)
        }
    }

    @Test(
        "round trips at every size around segment boundaries",
        arguments: [0, 1, 65535, 65536, 65537, 131072, 200_003]
    )
    func roundTrips(size: Int) throws {
        let plaintext = SecureRandom.bytes(count: size)
        let header = BundleHeader.fresh(
            syncGroupID: UUID(),
            deviceID: UUID(),
            firstSequence: 1,
            lastSequence: 5,
            segmentSize: 65536
        )
        #expect(try Self.open(try Self.seal(plaintext, header: header)) == plaintext)
    }

    @Test("truncation, reordering, splicing, bit flips, a wrong key and trailing bytes are all refused")
    func tampering() throws {
        let header = Self.header()
        let plaintext = Self.plaintext(3 * 65536 + 500)
        let bundle = try Self.seal(plaintext, header: header)
        let headerSize = header.encoded.count
        let sealed = 65536 + 16
        func refused(_ bytes: [UInt8], _ what: Comment, root: SecureBytes = Self.root) {
            #expect(throws: CofferError.self, what) { _ = try Self.open(bytes, root: root) }
        }
        // Truncated: anywhere, including exactly at a segment boundary (the last segment missing).
        for cut in [1, 16, 500, 500 + 16, 600, bundle.count - headerSize - 1] {
            refused(Array(bundle.dropLast(cut)), "cut \(cut)")
        }
        refused(Array(bundle.prefix(headerSize + 3 * sealed)), "last segment missing")
        refused(Array(bundle.prefix(headerSize + sealed)), "only the first segment")
        // Reordered segments.
        var swapped = Array(bundle.prefix(headerSize))
        swapped += bundle[(headerSize + sealed)..<(headerSize + 2 * sealed)]
        swapped += bundle[headerSize..<(headerSize + sealed)]
        swapped += bundle[(headerSize + 2 * sealed)...]
        refused(swapped, "segments 0 and 1 swapped")
        // A segment spliced from another bundle of the same group and key material.
        var other = header
        other.noncePrefix = [1, 2, 3, 4, 5, 6, 7]
        let otherBundle = try Self.seal(plaintext, header: other)
        var spliced = Array(bundle.prefix(headerSize + sealed))
        spliced += otherBundle[(headerSize + sealed)..<(headerSize + 2 * sealed)]
        spliced += bundle[(headerSize + 2 * sealed)...]
        refused(spliced, "spliced segment")
        // Bit flips in the header (every field) and in the segments.
        for position in [9, 12, 30, 50, 60, 80, 100, 104, headerSize + 5, headerSize + sealed + 9, bundle.count - 1] {
            var flipped = bundle
            flipped[position] ^= 0x10
            refused(flipped, "byte \(position)")
        }
        refused(bundle, "wrong sync root", root: SecureBytes(copying: [UInt8](repeating: 9, count: 32)))
        refused(bundle + [0], "a trailing byte")
        refused(Array("not a bundle at all".utf8), "not a bundle")
        #expect(try Self.open(bundle) == plaintext, "the untouched bundle still opens")
    }
}
