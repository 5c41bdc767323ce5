import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Records objects (docs/FORMAT.md, "Records objects"): a thin import reads a bundle's records and
/// where its chunks lie instead of the bundle; what a records object says of content is the word of
/// the device that signed it, so no write counts on it until a read has checked it.
@Suite("Records objects: thin imports that skip the content")
struct RecordsObjectTests {
    let fixture: RemoteFixture
    let group: SyncGroupFixture

    init() throws {
        fixture = try RemoteFixture()
        group = try SyncGroupFixture()
    }

    var layout: RemoteLayout { RemoteLayout(location: (try? fixture.remote())!.location) }

    /// The objects under the group's prefix, by key, with their sizes.
    func listing() throws -> [String: Int64] {
        Dictionary(try fixture.client().list(prefix: layout.listingPrefix).map { ($0.key, $0.size) }) { first, _ in
            first
        }
    }

    /// A first vault that pushed `count` blobs of 2 MB of random bytes, each in a push of its own.
    func pushedBlobs(_ count: Int) throws -> (Vault, [[UInt8]]) {
        let a = try group.createFirst()
        let remote = try fixture.remote()
        var contents: [[UInt8]] = []
        for index in 0..<count {
            let content = SplitMix64.bytes(2_000_000, seed: 70 + UInt64(index))
            try a.blobs.write("blob-\(index)", data: Data(content))
            try a.keychain.setPassword("v\(index)", service: "s\(index)", account: "ann", scope: .syncable)
            try a.push(to: remote)
            contents.append(content)
        }
        return (a, contents)
    }

    @Test("a thin join reads each bundle's records object, not its content, and reads check what they fetch")
    func thinJoinSkipsContent() throws {
        let (a, contents) = try pushedBlobs(2)
        defer { a.close() }
        let objects = try listing()
        let bundles = objects.filter { $0.key.hasSuffix(".bundle") }
        #expect(bundles.count == 2)
        for (key, size) in bundles {
            let recordsKey = try #require(RecordsObject.key(forBundle: key))
            let records = try #require(objects[recordsKey], "\(key)")
            #expect(records * 8 <= size, "\(records) beside \(size)")
        }
        let (thin, pulled) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        let bundleBytes = bundles.values.reduce(0, +)
        #expect(pulled.bytes * 8 < bundleBytes, "pulled \(pulled.bytes) of \(bundleBytes)")
        for (index, content) in contents.enumerated() {
            #expect(Array(try thin.blobs.data("blob-\(index)")) == content)
            #expect(try thin.keychain.password(service: "s\(index)", account: "ann") == "v\(index)")
        }
        #expect(try thin.syncableState() == a.syncableState())
    }

    @Test("a write on a thin vault does not count on content only a records object vouched for; once read, it does")
    func unreadContentIsNotDeduplicated() throws {
        let (a, contents) = try pushedBlobs(1)
        defer { a.close() }
        let remote = try fixture.remote()
        let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        // (A device's first push sends all its changes' chunks; the pushes below are incremental.)
        try thin.push(to: remote)
        // Unread: the same content is kept here and pushed again, so the store holds it under this
        // device's own word.
        try thin.blobs.write("again", data: Data(contents[0]))
        let pushed = try thin.push(to: remote)
        #expect(pushed.export.chunks > 0, "\(pushed)")
        // Pushed, it is checked (this vault wrote it): offloading drops it.
        let offloaded = try thin.offloadContent(to: remote, keep: 0)
        #expect(
            offloaded.offloadedChunks + offloaded.alreadyOffloaded + offloaded.structureChunks >= pushed.export.chunks,
            "\(offloaded)"
        )
        #expect(Array(try thin.blobs.data("again")) == contents[0])

        // A second thin vault that reads the blob first checks it: writing it again sends nothing.
        let (reader, _) = try fixture.join(group, name: "reader", content: .thin(keep: 0))
        defer { reader.close() }
        try reader.push(to: remote)
        #expect(Array(try reader.blobs.data("blob-0")) == contents[0])
        reader.schema.offloadedChunks?.finish()
        try reader.blobs.write("copy", data: Data(contents[0]))
        let again = try reader.push(to: remote)
        #expect(again.export.chunks == 0, "\(again)")
    }

    @Test("a records object that does not describe the bundle beside it, or is damaged, is passed over for the bundle")
    func foreignOrDamagedRecordsObject() throws {
        let (a, contents) = try pushedBlobs(2)
        defer { a.close() }
        let client = try fixture.client()
        let bundles = try listing().filter { $0.key.hasSuffix(".bundle") }.keys.sorted()
        let records = bundles.compactMap { RecordsObject.key(forBundle: $0) }
        // The first bundle's records object over the second's (another bundle's, or another copy's),
        // and one byte of the first's changed.
        let fetched = try client.get(records[0])
        let first = try #require(fetched)
        try client.put(records[1], body: first)
        var damaged = first
        damaged[damaged.count - 40] ^= 0x01
        try client.put(records[0], body: damaged)
        let (thin, pulled) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        let sizes = try listing()
        #expect(pulled.bytes >= bundles.reduce(0) { $0 + (sizes[$1] ?? 0) }, "read whole: \(pulled.bytes)")
        for (index, content) in contents.enumerated() {
            #expect(Array(try thin.blobs.data("blob-\(index)")) == content)
        }
    }

    @Test("a compaction writes its checkpoint's records object and deletes those of the bundles it replaces")
    func compactionKeepsRecordsObjects() throws {
        let (a, contents) = try pushedBlobs(2)
        defer { a.close() }
        let remote = try fixture.remote()
        try a.compact(remote: remote)
        let objects = try listing()
        #expect(!objects.keys.contains { $0.hasSuffix(".bundle") && !$0.contains("/checkpoints/") })
        let checkpoint = try #require(objects.keys.first { $0.contains("/checkpoints/") && $0.hasSuffix(".bundle") })
        let records = try #require(RecordsObject.key(forBundle: checkpoint))
        #expect(objects[records] != nil)
        #expect(objects.keys.filter { $0.hasSuffix(RecordsObject.suffix) } == [records])
        let (thin, pulled) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        #expect(pulled.bytes * 8 < objects[checkpoint] ?? 0, "pulled \(pulled.bytes)")
        for (index, content) in contents.enumerated() {
            #expect(Array(try thin.blobs.data("blob-\(index)")) == content)
        }
    }

    /// The records object `bytes` re-made and signed with `signer`'s keys (a modified client of the
    /// device that wrote it), with each site frame changed by `forge`.
    func forged(
        _ bytes: [UInt8],
        signer: Vault,
        _ forge: (ChunkID, UInt64, UInt32) -> (ChunkID, UInt64, UInt32)
    ) throws -> [UInt8] {
        var source = DataSource(Data(bytes))
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        let key = try header.streamKey(syncRoot: try signer.unlockedRoots().sync)
        var reader = try BundleStreamReader(source: source, header: header, headerBytes: headerBytes, key: key)
        var plaintext: [UInt8] = []
        while case let piece = try reader.read(upTo: 1 << 20), !piece.isEmpty { plaintext += piece }
        var writer = try BundleStreamWriter(header: header, key: key, sink: DataSink())
        var offset = 0
        var chunks: UInt64 = 0
        var records: UInt64 = 0
        while offset < plaintext.count {
            let type = plaintext[offset]
            let length = Int(plaintext[(offset + 1)...(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let body = Array(plaintext[(offset + 5)..<(offset + 5 + length)])
            offset += 5 + length
            var frame = try BundleFrame.decode(type: type, body: body)
            switch frame {
            case .signature, .end: continue
            case .site(let id, let siteOffset, let siteLength):
                let (newID, newOffset, newLength) = forge(id, siteOffset, siteLength)
                frame = .site(id: newID, offset: newOffset, length: newLength)
            case .chunk: chunks += 1
            case .record: records += 1
            default: break
            }
            try frame.encoded.withBytes { (raw) throws(CofferError) in try writer.write(raw) }
        }
        let digest = try writer.finishDigest()
        let signature = try signer.deviceKeys().signing.signature(of: BundleFrame.signedMessage(digest: digest))
        for frame in [BundleFrame.signature(signature), .end(chunks: chunks, records: records)] {
            try frame.encoded.withBytes { (raw) throws(CofferError) in try writer.write(raw) }
        }
        return Array(try writer.finish().data)
    }

    @Test("a member's records object that names other records as a chunk's: reads refuse them, writes keep their own")
    func forgedSites() throws {
        let (a, contents) = try pushedBlobs(1)
        defer { a.close() }
        let remote = try fixture.remote()
        let client = try fixture.client()
        let bundle = try #require(try listing().keys.first { $0.hasSuffix(".bundle") })
        let recordsKey = try #require(RecordsObject.key(forBundle: bundle))
        let fetched = try client.get(recordsKey)
        let genuine = try #require(fetched)
        // A hundred sites in the middle of the blob's content moved to the previous chunk record's
        // place: each names a record that is not its chunk's. (Its chunk list is left alone: a thin
        // import fetches it, and one that fails makes it read the bundle whole.)
        var index = 0
        var previous: (UInt64, UInt32)?
        let lying = try forged(genuine, signer: a) { id, offset, length in
            defer {
                previous = (offset, length)
                index += 1
            }
            guard (100..<200).contains(index), let previous else { return (id, offset, length) }
            return (id, previous.0, previous.1)
        }
        try client.put(recordsKey, body: lying)
        let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        // The read checks every record it fetches against the chunk's id: nothing false is read.
        let read = #expect(throws: CofferError.self) { try thin.blobs.data("blob-0") }
        #expect(read?.code == .decode || read?.code == .itemNotFound, "\(String(describing: read))")
        // A write of the same content keeps and pushes its own records, so its data is whole.
        try thin.push(to: remote)
        try thin.blobs.write("mine", data: Data(contents[0]))
        #expect(try thin.push(to: remote).export.chunks > 0)
        // The read forgot the object that failed it; the next pull reads the bundle through, and
        // the blob reads whole.
        thin.schema.offloadedChunks?.finish()
        try thin.pull(from: remote)
        #expect(Array(try thin.blobs.data("blob-0")) == contents[0])
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        defer { newcomer.close() }
        #expect(Array(try newcomer.blobs.data("mine")) == contents[0])
    }

    @Test("a bundle damaged past its header beside an intact records object: a thin vault's compaction keeps it")
    func damagedBundleIsKept() throws {
        // Outside test of records objects, F1: the thin vault applied the records, found the content
        // damaged on reading, and its compaction deleted the bundle, the only copy of the intact rest.
        let (a, contents) = try pushedBlobs(1)
        defer { a.close() }
        let remote = try fixture.remote()
        let client = try fixture.client()
        let bundle = try #require(try listing().keys.first { $0.hasSuffix(".bundle") })
        let fetched = try client.get(bundle)
        var bytes = try #require(fetched)
        bytes[bytes.count / 2] ^= 0x01
        try client.put(bundle, body: bytes)
        let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        #expect(throws: CofferError.self) { try thin.blobs.data("blob-0") }
        thin.schema.offloadedChunks?.finish()
        let compacted = try thin.compact(remote: remote)
        #expect(compacted.notices.contains { $0.contains("Kept \(bundle)") }, "\(compacted.notices)")
        #expect(try listing()[bundle] != nil)
        // The device that holds the changes whole replaces it; a newcomer gets everything.
        try a.compact(remote: remote)
        #expect(try listing()[bundle] == nil)
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        defer { newcomer.close() }
        #expect(Array(try newcomer.blobs.data("blob-0")) == contents[0])
    }
}
