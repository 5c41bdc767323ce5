import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Sync formats: versions, the clock, bundle record frames")
struct SyncFormatTests {
    static let device = [UInt8](repeating: 0xD0, count: 15) + [0x01]

    @Test("a version entry's bytes are stamp ‖ device ‖ state (known answer)")
    func versionEntryBytes() throws {
        let entry = VersionEntry(
            version: RecordVersion(stamp: 0x0102_0304_0506_0708, device: Self.device),
            isDeleted: true
        )
        #expect(entry.encoded.hex == "0102030405060708" + String(repeating: "d0", count: 15) + "01" + "00")
        #expect(try VersionEntry(decoding: entry.encoded) == entry)
        #expect(throws: CofferError.self) { try VersionEntry(decoding: entry.encoded.dropLast()) }
        #expect(throws: CofferError.self) { try VersionEntry(decoding: Array(entry.encoded.dropLast()) + [2]) }
    }

    @Test("versions order by stamp, then by device id")
    func ordering() {
        let low = [UInt8](repeating: 0, count: 16)
        let high = [UInt8](repeating: 0xFF, count: 16)
        #expect(RecordVersion(stamp: 1, device: high) < RecordVersion(stamp: 2, device: low))
        #expect(RecordVersion(stamp: 2, device: low) < RecordVersion(stamp: 2, device: high))
        #expect(!(RecordVersion(stamp: 2, device: high) < RecordVersion(stamp: 2, device: high)))
    }

    @Test("the clock ticks past the wall clock and past every stamp it has seen")
    func clock() throws {
        let vault = try VaultFixture().create()
        let schema = vault.schema
        let (first, second, future, afterFuture) = try vault.environment.write { txn in
            let first = try HybridClock.tick(in: txn, schema: schema)
            let second = try HybridClock.tick(in: txn, schema: schema)
            let future = first + (300_000 << 16)  // five minutes ahead, as from a machine with a fast clock
            try HybridClock.observe(future, in: txn, schema: schema)
            try HybridClock.observe(first, in: txn, schema: schema)  // an older stamp changes nothing
            return (first, second, future, try HybridClock.tick(in: txn, schema: schema))
        }
        let now = UInt64(Date().timeIntervalSince1970 * 1000) << 16
        #expect(first >> 16 <= now >> 16 && now >> 16 - first >> 16 < 60_000)
        #expect(second > first)
        #expect(afterFuture == future + 1)
        // A clock found far ahead of the wall clock (the machine's clock was wrong, then corrected)
        // does not carry its wrong time forever: the next stamp restarts from the wall clock.
        let (farAhead, restarted) = try vault.environment.write { txn in
            let farAhead = HybridClock.wallStamp() + (365 * 86_400_000 << 16)
            try HybridClock.observe(farAhead, in: txn, schema: schema)
            return (farAhead, try HybridClock.tick(in: txn, schema: schema))
        }
        #expect(restarted < farAhead)
        #expect(restarted >> 16 - now >> 16 < 60_000)
    }

    @Test("a change is stamped past the version it replaces, even when the clock restarted below it")
    func changeFollowsItsVersion() throws {
        // Third outside test of issue 37's clock fix, F1: a device whose fast clock was corrected
        // stamped its edit below its old version, which won everywhere once its time came.
        let vault = try VaultFixture().create()
        let schema = vault.schema
        let id = Array(repeating: UInt8(7), count: 32)
        let (old, edit, other) = try vault.environment.write { txn in
            // Written while the machine's clock ran a year fast; the clock then restarts.
            let old = HybridClock.wallStamp() + (365 * 86_400_000 << 16)
            let version = RecordVersion(stamp: old, device: vault.deviceID.bytes)
            try ChangeLog.append(.itemPut, recordID: id, version: version, in: txn, schema: schema)
            try ChangeLog.append(.itemPut, recordID: id, in: txn, schema: schema)
            let edit = try #require(try VersionEntry.load(.item, id: id, in: txn, schema: schema)).version.stamp
            try ChangeLog.append(.itemPut, recordID: Array(repeating: UInt8(8), count: 32), in: txn, schema: schema)
            let otherID = Array(repeating: UInt8(8), count: 32)
            let other = try #require(try VersionEntry.load(.item, id: otherID, in: txn, schema: schema))
            return (old, edit, other.version.stamp)
        }
        #expect(edit == old + 1)
        // Other records' stamps restart from the wall clock.
        let now = HybridClock.wallStamp()
        #expect(other < old && other >> 16 <= now >> 16 && now >> 16 - other >> 16 < 60_000)
    }

    @Test("frames round-trip, and their bytes are type ‖ length ‖ body (known answer)")
    func frames() throws {
        let entry = VersionEntry(version: RecordVersion(stamp: 5, device: Self.device), isDeleted: false)
        let record = BundleFrame.record(.snapshot, id: Array(0..<16), entry: entry, stored: [0xAA, 0xBB])
        #expect(
            record.encoded.hex
                == "02" + "0000002c" + "03" + Array(0..<16).hex + "0000000000000005"
                + String(repeating: "d0", count: 15)
                + "01" + "01" + "aabb"
        )
        #expect(
            BundleFrame.end(chunks: 1, records: 2).encoded.hex == "03" + "00000010" + "0000000000000001"
                + "0000000000000002"
        )
        let chunk = BundleFrame.chunk(id: ChunkID([UInt8](repeating: 7, count: 32)), record: [1, 2, 3])
        var reader = try BundleFrameReader(
            source: DataSource(chunk.encoded + record.encoded + BundleFrame.end(chunks: 1, records: 1).encoded)
        )
        #expect(try reader.next() == chunk)
        #expect(try reader.next() == record)
        #expect(try reader.next() == nil)
        #expect(try reader.next() == nil)
    }

    @Test("malformed streams of frames are refused with decode")
    func malformed() throws {
        let end = BundleFrame.end(chunks: 0, records: 0).encoded
        let deletedWithRecord = BundleFrame.record(
            .item,
            id: [UInt8](repeating: 1, count: 32),
            entry: VersionEntry(version: RecordVersion(stamp: 1, device: Self.device), isDeleted: true),
            stored: [1]
        ).encoded
        let cases: [(String, [UInt8])] = [
            ("empty: no end frame", []),
            ("unknown frame type", [9, 0, 0, 0, 0] + end),
            ("a declared length beyond any record", [1, 0xFF, 0xFF, 0xFF, 0xFF]),
            ("a record cut short", Array(deletedWithRecord.prefix(20))),
            ("a deleted record carrying a record", deletedWithRecord + BundleFrame.end(chunks: 0, records: 1).encoded),
            ("end counts that disagree", BundleFrame.end(chunks: 1, records: 0).encoded),
            ("bytes after the end frame", end + [0]),
            ("a snapshot id of the wrong length", [2, 0, 0, 0, 3, 3, 1, 2]),
        ]
        for (what, bytes) in cases {
            var reader = try BundleFrameReader(source: DataSource(bytes))
            let error = #expect(throws: CofferError.self, "\(what)") {
                while try reader.next() != nil {}
            }
            #expect(error?.code == .decode, "\(what)")
        }
    }
}
