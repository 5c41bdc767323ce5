import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Sync: damaged bundles are refused and leave the vault exactly as it was")
struct SyncTamperTests {
    let group: SyncGroupFixture
    let a: Vault
    let b: Vault
    /// A bundle of several segments, not yet imported into `b`.
    let bundle: [UInt8]
    let headerSize: Int
    let sealedSegment: Int

    init() throws {
        group = try SyncGroupFixture()
        a = try group.createFirst()
        try a.keychain.add(Items.password("mail", "ann", scope: .syncable))
        try a.export(to: group.bundle("first"))
        (b, _) = try group.join("b", from: group.bundle("first"))
        try a.blobs.write("big", data: Content.random(900_000, seed: 41))
        try a.keychain.add(Items.password("bank", "ann", scope: .syncable))
        try a.export(to: group.bundle("second"))
        bundle = [UInt8](try Data(contentsOf: group.bundle("second")))
        var source = DataSource(bundle)
        let header = try BundleHeader.read(from: &source).0
        headerSize = header.encoded.count
        sealedSegment = header.segmentSize + AESGCM.tagByteCount
    }

    var segmentCount: Int { (bundle.count - headerSize + sealedSegment - 1) / sealedSegment }

    func segment(_ index: Int, of bytes: [UInt8]) -> Range<Int> {
        let start = headerSize + index * sealedSegment
        return start..<min(start + sealedSegment, bytes.count)
    }

    /// Imports `bytes` into `b`, expecting a refusal with `code`, and checks nothing changed.
    func expectRefused(_ bytes: [UInt8], _ what: Comment, code: CofferError.Code = .decode) throws {
        let url = group.directory.path("tampered.bundle")
        try Data(bytes).write(to: url)
        let before = try b.dumpTables()
        let error = #expect(throws: CofferError.self, what) { try b.import(from: url) }
        #expect(error?.code == code, what)
        #expect(try b.dumpTables() == before, what)
    }

    @Test("the untouched bundle imports (the control)")
    func control() throws {
        #expect(segmentCount >= 4)
        let url = group.directory.path("control.bundle")
        try Data(bundle).write(to: url)
        #expect(try b.import(from: url).applied.total == 2)
    }

    @Test("truncated anywhere: inside the header, inside a segment, at a segment boundary")
    func truncated() throws {
        try expectRefused(Array(bundle.prefix(20)), "inside the header")
        try expectRefused(Array(bundle.prefix(segment(2, of: bundle).lowerBound + 100)), "inside segment 2")
        try expectRefused(Array(bundle.prefix(segment(segmentCount - 1, of: bundle).lowerBound)), "last segment gone")
        try expectRefused(Array(bundle.prefix(segment(1, of: bundle).lowerBound)), "only the first segment")
        try expectRefused(Array(bundle.dropLast()), "one byte short")
    }

    @Test("segments reordered, dropped or repeated")
    func reordered() throws {
        var swapped = bundle
        let (first, second) = (segment(1, of: bundle), segment(2, of: bundle))
        swapped.replaceSubrange(first, with: bundle[second])
        swapped.replaceSubrange(second, with: bundle[first])
        try expectRefused(swapped, "segments 1 and 2 swapped")
        var dropped = bundle
        dropped.removeSubrange(segment(1, of: bundle))
        try expectRefused(dropped, "segment 1 dropped")
        var repeated = bundle
        repeated.insert(contentsOf: bundle[first], at: second.lowerBound)
        try expectRefused(repeated, "segment 1 repeated")
    }

    @Test("a flipped bit in any segment or in the header")
    func bitFlips() throws {
        for index in [0, 1, segmentCount - 1] {
            var flipped = bundle
            let range = segment(index, of: bundle)
            flipped[range.lowerBound + range.count / 2] ^= 0x20
            try expectRefused(flipped, "a bit of segment \(index)")
        }
        var header = bundle
        header[8 + 2 + 16 + 16 + 8 + 7] ^= 1  // the last sequence number
        try expectRefused(header, "a bit of the header's sequence range")
        var magic = bundle
        magic[0] ^= 1
        try expectRefused(magic, "the magic", code: .param)
    }

    @Test("a segment spliced in from another bundle of the same vault")
    func spliced() throws {
        try a.export(to: group.bundle("third"))
        let other = [UInt8](try Data(contentsOf: group.bundle("third")))
        var spliced = bundle
        spliced.replaceSubrange(segment(1, of: bundle), with: other[segment(1, of: other)])
        try expectRefused(spliced, "segment 1 from another bundle")
        // The other bundle's header on this bundle's segments.
        try expectRefused(Array(other[0..<headerSize]) + bundle[headerSize...], "another bundle's header")
    }

    @Test("a bundle sealed under another sync root, with this group's header")
    func wrongKey() throws {
        // Re-seal the same plaintext under another root: every segment fails to open.
        var source = DataSource(bundle)
        let (header, _) = try BundleHeader.read(from: &source)
        let plaintext = try a.bundlePlaintext(group.bundle("second"))
        var writer = try BundleStreamWriter(
            header: header,
            key: try header.streamKey(syncRoot: .random(count: 32)),
            sink: DataSink()
        )
        try plaintext.withBytes { (raw) throws(CofferError) in try writer.write(raw) }
        try expectRefused(Array(try writer.finish().data), "sealed under another root")
    }
}
