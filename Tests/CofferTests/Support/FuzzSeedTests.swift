import Foundation
import Testing

@testable import Coffer

@Suite("Fuzz seeds: valid inputs that take the fuzzer past the first checks")
struct FuzzSeedTests {
    @Test("The bundle seed opens under the fuzzing root and yields every frame; the record seeds parse")
    func seedsAreValid() throws {
        let seeds = try FuzzEntryPoints.seeds()
        var source = DataSource(try #require(seeds["bundle"]?.first))
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        var frames = try BundleFrameReader(
            source: try BundleStreamReader(
                source: source,
                header: header,
                headerBytes: headerBytes,
                key: try header.streamKey(syncRoot: FuzzEntryPoints.syncRoot)
            )
        )
        var count = 0
        while try frames.next() != nil { count += 1 }
        #expect(count == 3)

        let records = try #require(seeds["records"])
        let itemHeader = ItemRecord.Header(
            itemClass: .genericPassword,
            scope: .syncable,
            accessibility: .whenUnlocked,
            requiresUserPresence: false,
            epoch: .original
        )
        #expect(try ItemRecord.parse(Array(records[0].dropFirst()), header: itemHeader).value == Data("secret".utf8))
        #expect(
            try BlobManifest.parse(Array(records[1].dropFirst()), scope: .syncable, level: .whenUnlocked).name
                == "photo.raw"
        )
        let snapshot = try SnapshotRecord.parse(
            Array(records[2].dropFirst()),
            id: [UInt8](repeating: 0, count: 16),
            version: SnapshotRecord.version,
            scope: .syncable,
            level: .afterFirstUnlock
        )
        #expect(snapshot.name == "docs")
        #expect(try VersionEntry(decoding: records[3].dropFirst()).version.stamp == 1 << 20)
    }

    @Test("Every target returns on empty, short and random inputs")
    func targetsReturn() {
        var generator = SystemRandomNumberGenerator()
        for (_, target) in FuzzEntryPoints.targets {
            target([])
            target([0])
            for length in [7, 64, 700] {
                target((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
        }
    }
}
