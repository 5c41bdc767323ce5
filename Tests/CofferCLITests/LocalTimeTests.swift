import CofferTestSupport
import Foundation
import Testing

@testable import CofferCLI

/// `--time` as a local time (issue 39, finding 10): read as restic reads it, through Go's
/// `time.ParseInLocation`, except that a time the clocks skip is refused, naming the gap.
@Suite("Local times around daylight saving changes, read as Go reads them")
struct LocalTimeTests {
    /// Wall times from two hours before to two hours after each 2026 offset change of eight zones
    /// (an hour's jump east and west of Greenwich, the southern hemisphere, Santiago's at midnight,
    /// Lord Howe's half hour, half-hour and 45-minute zones), every 30 minutes, with the moment Go
    /// 1.19's `time.ParseInLocation("2006-01-02 15:04:05", text, zone)` gives (Debian's golang-go,
    /// run on this machine), or `gap` where that moment shows as another wall time in the zone (Go
    /// moves such a time by the jump; Coffer refuses it).
    static let vectors: [(zone: String, wall: String, expected: String)] = [
        ("America/New_York", "2026-03-08 00:00:00", "2026-03-08T05:00:00Z"),
        ("America/New_York", "2026-03-08 00:30:00", "2026-03-08T05:30:00Z"),
        ("America/New_York", "2026-03-08 01:00:00", "2026-03-08T06:00:00Z"),
        ("America/New_York", "2026-03-08 01:30:00", "2026-03-08T06:30:00Z"),
        ("America/New_York", "2026-03-08 02:00:00", "gap"),
        ("America/New_York", "2026-03-08 02:30:00", "gap"),
        ("America/New_York", "2026-03-08 03:00:00", "2026-03-08T07:00:00Z"),
        ("America/New_York", "2026-03-08 03:30:00", "2026-03-08T07:30:00Z"),
        ("America/New_York", "2026-03-08 04:00:00", "2026-03-08T08:00:00Z"),
        ("America/New_York", "2026-11-01 00:00:00", "2026-11-01T04:00:00Z"),
        ("America/New_York", "2026-11-01 00:30:00", "2026-11-01T04:30:00Z"),
        ("America/New_York", "2026-11-01 01:00:00", "2026-11-01T05:00:00Z"),
        ("America/New_York", "2026-11-01 01:30:00", "2026-11-01T05:30:00Z"),
        ("America/New_York", "2026-11-01 02:00:00", "2026-11-01T07:00:00Z"),
        ("America/New_York", "2026-11-01 02:30:00", "2026-11-01T07:30:00Z"),
        ("America/New_York", "2026-11-01 03:00:00", "2026-11-01T08:00:00Z"),
        ("America/New_York", "2026-11-01 03:30:00", "2026-11-01T08:30:00Z"),
        ("America/New_York", "2026-11-01 04:00:00", "2026-11-01T09:00:00Z"),
        ("Europe/Berlin", "2026-03-29 00:00:00", "2026-03-28T23:00:00Z"),
        ("Europe/Berlin", "2026-03-29 00:30:00", "2026-03-28T23:30:00Z"),
        ("Europe/Berlin", "2026-03-29 01:00:00", "2026-03-29T00:00:00Z"),
        ("Europe/Berlin", "2026-03-29 01:30:00", "2026-03-29T00:30:00Z"),
        ("Europe/Berlin", "2026-03-29 02:00:00", "gap"),
        ("Europe/Berlin", "2026-03-29 02:30:00", "gap"),
        ("Europe/Berlin", "2026-03-29 03:00:00", "2026-03-29T01:00:00Z"),
        ("Europe/Berlin", "2026-03-29 03:30:00", "2026-03-29T01:30:00Z"),
        ("Europe/Berlin", "2026-03-29 04:00:00", "2026-03-29T02:00:00Z"),
        ("Europe/Berlin", "2026-10-25 01:00:00", "2026-10-24T23:00:00Z"),
        ("Europe/Berlin", "2026-10-25 01:30:00", "2026-10-24T23:30:00Z"),
        ("Europe/Berlin", "2026-10-25 02:00:00", "2026-10-25T01:00:00Z"),
        ("Europe/Berlin", "2026-10-25 02:30:00", "2026-10-25T01:30:00Z"),
        ("Europe/Berlin", "2026-10-25 03:00:00", "2026-10-25T02:00:00Z"),
        ("Europe/Berlin", "2026-10-25 03:30:00", "2026-10-25T02:30:00Z"),
        ("Europe/Berlin", "2026-10-25 04:00:00", "2026-10-25T03:00:00Z"),
        ("Europe/Berlin", "2026-10-25 04:30:00", "2026-10-25T03:30:00Z"),
        ("Europe/Berlin", "2026-10-25 05:00:00", "2026-10-25T04:00:00Z"),
        ("Australia/Sydney", "2026-04-05 01:00:00", "2026-04-04T14:00:00Z"),
        ("Australia/Sydney", "2026-04-05 01:30:00", "2026-04-04T14:30:00Z"),
        ("Australia/Sydney", "2026-04-05 02:00:00", "2026-04-04T16:00:00Z"),
        ("Australia/Sydney", "2026-04-05 02:30:00", "2026-04-04T16:30:00Z"),
        ("Australia/Sydney", "2026-04-05 03:00:00", "2026-04-04T17:00:00Z"),
        ("Australia/Sydney", "2026-04-05 03:30:00", "2026-04-04T17:30:00Z"),
        ("Australia/Sydney", "2026-04-05 04:00:00", "2026-04-04T18:00:00Z"),
        ("Australia/Sydney", "2026-04-05 04:30:00", "2026-04-04T18:30:00Z"),
        ("Australia/Sydney", "2026-04-05 05:00:00", "2026-04-04T19:00:00Z"),
        ("Australia/Sydney", "2026-10-04 00:00:00", "2026-10-03T14:00:00Z"),
        ("Australia/Sydney", "2026-10-04 00:30:00", "2026-10-03T14:30:00Z"),
        ("Australia/Sydney", "2026-10-04 01:00:00", "2026-10-03T15:00:00Z"),
        ("Australia/Sydney", "2026-10-04 01:30:00", "2026-10-03T15:30:00Z"),
        ("Australia/Sydney", "2026-10-04 02:00:00", "gap"),
        ("Australia/Sydney", "2026-10-04 02:30:00", "gap"),
        ("Australia/Sydney", "2026-10-04 03:00:00", "2026-10-03T16:00:00Z"),
        ("Australia/Sydney", "2026-10-04 03:30:00", "2026-10-03T16:30:00Z"),
        ("Australia/Sydney", "2026-10-04 04:00:00", "2026-10-03T17:00:00Z"),
        ("America/Santiago", "2026-04-04 22:00:00", "2026-04-05T01:00:00Z"),
        ("America/Santiago", "2026-04-04 22:30:00", "2026-04-05T01:30:00Z"),
        ("America/Santiago", "2026-04-04 23:00:00", "2026-04-05T02:00:00Z"),
        ("America/Santiago", "2026-04-04 23:30:00", "2026-04-05T02:30:00Z"),
        ("America/Santiago", "2026-04-05 00:00:00", "2026-04-05T04:00:00Z"),
        ("America/Santiago", "2026-04-05 00:30:00", "2026-04-05T04:30:00Z"),
        ("America/Santiago", "2026-04-05 01:00:00", "2026-04-05T05:00:00Z"),
        ("America/Santiago", "2026-04-05 01:30:00", "2026-04-05T05:30:00Z"),
        ("America/Santiago", "2026-04-05 02:00:00", "2026-04-05T06:00:00Z"),
        ("America/Santiago", "2026-09-05 22:00:00", "2026-09-06T02:00:00Z"),
        ("America/Santiago", "2026-09-05 22:30:00", "2026-09-06T02:30:00Z"),
        ("America/Santiago", "2026-09-05 23:00:00", "2026-09-06T03:00:00Z"),
        ("America/Santiago", "2026-09-05 23:30:00", "2026-09-06T03:30:00Z"),
        ("America/Santiago", "2026-09-06 00:00:00", "gap"),
        ("America/Santiago", "2026-09-06 00:30:00", "gap"),
        ("America/Santiago", "2026-09-06 01:00:00", "2026-09-06T04:00:00Z"),
        ("America/Santiago", "2026-09-06 01:30:00", "2026-09-06T04:30:00Z"),
        ("America/Santiago", "2026-09-06 02:00:00", "2026-09-06T05:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 00:00:00", "2026-04-04T13:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 00:30:00", "2026-04-04T13:30:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 01:00:00", "2026-04-04T14:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 01:30:00", "2026-04-04T15:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 02:00:00", "2026-04-04T15:30:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 02:30:00", "2026-04-04T16:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 03:00:00", "2026-04-04T16:30:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 03:30:00", "2026-04-04T17:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-05 04:00:00", "2026-04-04T17:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 00:00:00", "2026-10-03T13:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 00:30:00", "2026-10-03T14:00:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 01:00:00", "2026-10-03T14:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 01:30:00", "2026-10-03T15:00:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 02:00:00", "gap"),
        ("Australia/Lord_Howe", "2026-10-04 02:30:00", "2026-10-03T15:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 03:00:00", "2026-10-03T16:00:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 03:30:00", "2026-10-03T16:30:00Z"),
        ("Australia/Lord_Howe", "2026-10-04 04:00:00", "2026-10-03T17:00:00Z"),
        ("America/St_Johns", "2026-03-08 00:00:00", "2026-03-08T03:30:00Z"),
        ("America/St_Johns", "2026-03-08 00:30:00", "2026-03-08T04:00:00Z"),
        ("America/St_Johns", "2026-03-08 01:00:00", "2026-03-08T04:30:00Z"),
        ("America/St_Johns", "2026-03-08 01:30:00", "2026-03-08T05:00:00Z"),
        ("America/St_Johns", "2026-03-08 02:00:00", "gap"),
        ("America/St_Johns", "2026-03-08 02:30:00", "gap"),
        ("America/St_Johns", "2026-03-08 03:00:00", "2026-03-08T05:30:00Z"),
        ("America/St_Johns", "2026-03-08 03:30:00", "2026-03-08T06:00:00Z"),
        ("America/St_Johns", "2026-03-08 04:00:00", "2026-03-08T06:30:00Z"),
        ("America/St_Johns", "2026-11-01 00:00:00", "2026-11-01T02:30:00Z"),
        ("America/St_Johns", "2026-11-01 00:30:00", "2026-11-01T03:00:00Z"),
        ("America/St_Johns", "2026-11-01 01:00:00", "2026-11-01T03:30:00Z"),
        ("America/St_Johns", "2026-11-01 01:30:00", "2026-11-01T04:00:00Z"),
        ("America/St_Johns", "2026-11-01 02:00:00", "2026-11-01T05:30:00Z"),
        ("America/St_Johns", "2026-11-01 02:30:00", "2026-11-01T06:00:00Z"),
        ("America/St_Johns", "2026-11-01 03:00:00", "2026-11-01T06:30:00Z"),
        ("America/St_Johns", "2026-11-01 03:30:00", "2026-11-01T07:00:00Z"),
        ("America/St_Johns", "2026-11-01 04:00:00", "2026-11-01T07:30:00Z"),
        ("Pacific/Chatham", "2026-04-05 01:45:00", "2026-04-04T12:00:00Z"),
        ("Pacific/Chatham", "2026-04-05 02:15:00", "2026-04-04T12:30:00Z"),
        ("Pacific/Chatham", "2026-04-05 02:45:00", "2026-04-04T14:00:00Z"),
        ("Pacific/Chatham", "2026-04-05 03:15:00", "2026-04-04T14:30:00Z"),
        ("Pacific/Chatham", "2026-04-05 03:45:00", "2026-04-04T15:00:00Z"),
        ("Pacific/Chatham", "2026-04-05 04:15:00", "2026-04-04T15:30:00Z"),
        ("Pacific/Chatham", "2026-04-05 04:45:00", "2026-04-04T16:00:00Z"),
        ("Pacific/Chatham", "2026-04-05 05:15:00", "2026-04-04T16:30:00Z"),
        ("Pacific/Chatham", "2026-04-05 05:45:00", "2026-04-04T17:00:00Z"),
        ("Pacific/Chatham", "2026-09-27 00:45:00", "2026-09-26T12:00:00Z"),
        ("Pacific/Chatham", "2026-09-27 01:15:00", "2026-09-26T12:30:00Z"),
        ("Pacific/Chatham", "2026-09-27 01:45:00", "2026-09-26T13:00:00Z"),
        ("Pacific/Chatham", "2026-09-27 02:15:00", "2026-09-26T13:30:00Z"),
        ("Pacific/Chatham", "2026-09-27 02:45:00", "gap"),
        ("Pacific/Chatham", "2026-09-27 03:15:00", "gap"),
        ("Pacific/Chatham", "2026-09-27 03:45:00", "2026-09-26T14:00:00Z"),
        ("Pacific/Chatham", "2026-09-27 04:15:00", "2026-09-26T14:30:00Z"),
        ("Pacific/Chatham", "2026-09-27 04:45:00", "2026-09-26T15:00:00Z"),
        ("Europe/London", "2026-03-28 23:00:00", "2026-03-28T23:00:00Z"),
        ("Europe/London", "2026-03-28 23:30:00", "2026-03-28T23:30:00Z"),
        ("Europe/London", "2026-03-29 00:00:00", "2026-03-29T00:00:00Z"),
        ("Europe/London", "2026-03-29 00:30:00", "2026-03-29T00:30:00Z"),
        ("Europe/London", "2026-03-29 01:00:00", "gap"),
        ("Europe/London", "2026-03-29 01:30:00", "gap"),
        ("Europe/London", "2026-03-29 02:00:00", "2026-03-29T01:00:00Z"),
        ("Europe/London", "2026-03-29 02:30:00", "2026-03-29T01:30:00Z"),
        ("Europe/London", "2026-03-29 03:00:00", "2026-03-29T02:00:00Z"),
        ("Europe/London", "2026-10-25 00:00:00", "2026-10-24T23:00:00Z"),
        ("Europe/London", "2026-10-25 00:30:00", "2026-10-24T23:30:00Z"),
        ("Europe/London", "2026-10-25 01:00:00", "2026-10-25T01:00:00Z"),
        ("Europe/London", "2026-10-25 01:30:00", "2026-10-25T01:30:00Z"),
        ("Europe/London", "2026-10-25 02:00:00", "2026-10-25T02:00:00Z"),
        ("Europe/London", "2026-10-25 02:30:00", "2026-10-25T02:30:00Z"),
        ("Europe/London", "2026-10-25 03:00:00", "2026-10-25T03:00:00Z"),
        ("Europe/London", "2026-10-25 03:30:00", "2026-10-25T03:30:00Z"),
        ("Europe/London", "2026-10-25 04:00:00", "2026-10-25T04:00:00Z"),
    ]

    @Test("each wall time gives Go's moment, and each skipped one is refused")
    func againstGo() throws {
        var checked = 0
        for (zone, wall, expected) in Self.vectors {
            let timeZone = try #require(TimeZone(identifier: zone))
            let parsed = try #require(SnapshotTime.wallTime(wall))
            switch LocalTime.read(parsed, in: timeZone) {
            case .moment(let date):
                #expect(date.formatted(.iso8601) == expected, "\(zone) \(wall)")
            case .skipped:
                #expect(expected == "gap", "\(zone) \(wall): refused, Go gives \(expected)")
            }
            checked += 1
        }
        #expect(checked == 144)
    }

    @Test("a skipped time names the zone and the jump")
    func skippedMessage() throws {
        let wall = try #require(SnapshotTime.wallTime("2026-03-29 02:30:00"))
        #expect(
            LocalTime.read(wall, in: try #require(TimeZone(identifier: "Europe/Berlin")))
                == .skipped(from: "02:00", to: "03:00")
        )
        let lordHowe = try #require(SnapshotTime.wallTime("2026-10-04 02:00:00"))
        #expect(
            LocalTime.read(lordHowe, in: try #require(TimeZone(identifier: "Australia/Lord_Howe")))
                == .skipped(from: "02:00", to: "02:30")
        )
    }

    @Test(
        "backup --time through the binary: an ambiguous time as Go takes it in New York and Berlin; a skipped one refused"
    )
    func endToEnd() throws {
        let cli = try CLIHarness()
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        func created(_ time: String, zone: String) throws -> String? {
            let result = try cli.run(["backup", tree.path, "--time", time, "--json"], extra: ["TZ": zone])
            let json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
            return (json?["snapshot"] as? [String: Any])?["created"] as? String
        }
        // 01:30 happens twice in New York on 2026-11-01: Go takes the first, daylight (EDT, UTC-4).
        #expect(try created("2026-11-01 01:30:00", zone: "America/New_York") == "2026-11-01T05:30:00Z")
        // 02:30 happens twice in Berlin on 2026-10-25: Go takes the second, standard (CET, UTC+1).
        #expect(try created("2026-10-25 02:30:00", zone: "Europe/Berlin") == "2026-10-25T01:30:00Z")
        let skipped = try cli.run(["backup", tree.path, "--time", "2026-03-29 02:30"], extra: ["TZ": "Europe/Berlin"])
        #expect(skipped.status == 64)
        #expect(
            skipped.error.contains(
                "'2026-03-29 02:30', a local time that does not exist in this time zone (Europe/Berlin): its clocks went from 02:00 straight to 03:00"
            ),
            "\(skipped.error)"
        )
        #expect(!skipped.error.contains("takes a time like"))
    }
}
