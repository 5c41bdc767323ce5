import Foundation
import Testing

@testable import Coffer

/// The snapshot record's body as docs/FORMAT.md ("Snapshots") lays it out, written here byte by
/// byte rather than by the encoder, so a change to either is caught.
@Suite("Snapshot record body: known-answer vectors")
struct SnapshotRecordVectorTests {
    /// Big-endian bytes of `value`.
    static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }

    static func text(_ value: String) -> [UInt8] { bytes(UInt16(value.utf8.count)) + Array(value.utf8) }

    /// name "docs" ‖ source "/d" ‖ host "mopped" ‖ created 1567335600000 ms ‖ files 3, directories 1,
    /// the rest 0 ‖ tree size 0 ‖ digest 32 × 0xab ‖ chunk count 0 ‖ inline chunk list of 0 entries.
    static let version3Body: [UInt8] =
        text("docs") + text("/d") + text("mopped") + bytes(Int64(1_567_335_600_000))
        + [3, 1, 0, 0, 0, 0, 0, 0, 0].flatMap { bytes(UInt64($0)) } + bytes(UInt64(0))
        + [UInt8](repeating: 0xab, count: 32)
        + bytes(UInt64(0)) + [0] + bytes(UInt32(0))

    /// Version 4 adds: tag count 2 ‖ "daily" ‖ "laptop" ‖ path count 2 ‖ "/d/a" ‖ "/d/b".
    static let version4Body =
        version3Body + bytes(UInt16(2)) + text("daily") + text("laptop") + bytes(UInt16(2)) + text("/d/a")
        + text("/d/b")

    @Test("version 4 reads the tags and paths after the chunk list; version 3 has neither and refuses trailing bytes")
    func tags() throws {
        let id = [UInt8](repeating: 7, count: 16)
        let record = try SnapshotRecord.parse(
            Self.version4Body,
            id: id,
            version: 4,
            scope: .syncable,
            level: .afterFirstUnlock
        )
        #expect(record.tags == ["daily", "laptop"])
        #expect(record.paths == ["/d/a", "/d/b"] && record.info.paths == ["/d/a", "/d/b"])
        #expect(record.name == "docs" && record.sourcePath == "/d" && record.hostname == "mopped")
        #expect(
            record.created == 1_567_335_600_000 && record.statistics.files == 3 && record.statistics.directories == 1
        )
        #expect(record.info.tags == ["daily", "laptop"])

        let old = try SnapshotRecord.parse(
            Self.version3Body,
            id: id,
            version: 3,
            scope: .syncable,
            level: .afterFirstUnlock
        )
        #expect(old.tags.isEmpty)
        #expect(old.info.paths == ["/d"])
        #expect(throws: CofferError.self) {
            _ = try SnapshotRecord.parse(
                Self.version4Body,
                id: id,
                version: 3,
                scope: .syncable,
                level: .afterFirstUnlock
            )
        }
        #expect(throws: CofferError.self) {
            _ = try SnapshotRecord.parse(
                Self.version3Body,
                id: id,
                version: 4,
                scope: .syncable,
                level: .afterFirstUnlock
            )
        }
    }

    @Test("the encoder writes exactly the vector, and keeps an old record's version (no tags) when sealing it again")
    func encoder() throws {
        let id = [UInt8](repeating: 7, count: 16)
        var record = try SnapshotRecord.parse(
            Self.version4Body,
            id: id,
            version: 4,
            scope: .syncable,
            level: .afterFirstUnlock
        )
        #expect(record.body == Self.version4Body)
        record.formatVersion = 3
        #expect(record.body == Self.version3Body)
    }
}
