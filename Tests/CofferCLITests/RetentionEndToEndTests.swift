import CofferTestSupport
import Foundation
import Testing

/// `backup --tag --time --host`, `snapshots --tag --host --name` and `forget --keep-*` through the
/// built binary, on snapshots with set times (restic's `--time`), so nothing waits for a clock.
@Suite("Retention end to end: tags, times, filters and forget policies")
struct RetentionEndToEndTests {
    let cli: CLIHarness
    let source: URL

    init() throws {
        cli = try CLIHarness()
        source = cli.directory.path("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data(RandomBytes.data(count: 50_000)).write(to: source.appendingPathComponent("a.bin"))
    }

    /// Runs with TZ=UTC, so `--time` and the calendar periods are the test's.
    @discardableResult
    func run(_ arguments: [String]) throws -> Products.Result { try cli.run(arguments, extra: ["TZ": "UTC"]) }

    func ids(_ arguments: [String]) throws -> [String] {
        let result = try run(arguments + ["--json"])
        let list = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]]
        return (list ?? []).compactMap { $0["id"] as? String }
    }

    /// restic's twelve Sunday backups, the first tagged `first`, and one from another host.
    func backUpSundays() throws -> [String] {
        let days = [
            "2019-09-01", "2019-09-08", "2019-09-15", "2019-09-22", "2019-09-29", "2019-10-06", "2019-10-13",
            "2019-10-20", "2019-10-27", "2019-11-03", "2019-11-10", "2019-11-17",
        ]
        var ids: [String] = []
        for (index, day) in days.enumerated() {
            try Data("\(day)\n".utf8).write(to: source.appendingPathComponent("day.txt"))
            let tags = index == 0 ? ["--tag", "first,sunday"] : ["--tag", "sunday"]
            let result = try run(
                ["backup", source.path, "--name", "work", "--time", "\(day) 11:00:00", "--json"] + tags
            )
            #expect(result.status == 0, "\(result.error)")
            let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
            ids.append(try #require((object?["snapshot"] as? [String: Any])?["id"] as? String))
        }
        #expect(
            try run(["backup", source.path, "--name", "work", "--host", "mopped", "--time", "2019-01-01"]).status == 0
        )
        return ids
    }

    @Test("backup records --time, --tag and --host; snapshots filters by them and shows the tags")
    func tagsTimesAndFilters() throws {
        let ids = try backUpSundays()
        let listing = try run(["snapshots"])
        #expect(listing.output.contains("TAGS"))
        #expect(listing.output.contains("first,sunday"))
        #expect(listing.output.contains("2019-09-01 11:00:00 +00:00"))
        #expect(try self.ids(["snapshots", "--tag", "first"]) == [ids[0]])
        #expect(try self.ids(["snapshots", "--tag", "first,sunday"]) == [ids[0]])
        #expect(try self.ids(["snapshots", "--tag", "sunday"]).count == 12)
        #expect(try self.ids(["snapshots", "--tag", "''".replacingOccurrences(of: "'", with: "")]).count == 1)
        #expect(try self.ids(["snapshots", "--host", "mopped"]).count == 1)
        #expect(try self.ids(["snapshots", "--name", "nothing"]).isEmpty)
        let none = try run(["snapshots", "--name", "nothing"])
        #expect(none.status == 0 && none.error.contains("No snapshots match"))

        let badTime = try run(["backup", source.path, "--time", "last tuesday"])
        #expect(badTime.status == 64 && badTime.error.contains("--time takes a time like"))
        let badTag = try run(["backup", source.path, "--tag", "a,,b"])
        #expect(badTag.status == 64 && badTag.error.contains("--tag takes tags separated by commas"))
    }

    @Test("forget --keep-daily 4 --dry-run lists restic's decision with reasons and changes nothing; then it applies")
    func policy() throws {
        let ids = try backUpSundays()
        let before = try cli.json(["stats"]) as? [String: Any]
        let dry = try run(["forget", "--keep-daily", "4", "--dry-run"])
        #expect(dry.status == 0, "\(dry.error)")
        #expect(dry.output.contains("name work: 4 kept, 8 to drop"))
        #expect(dry.output.contains("KEPT BECAUSE"))
        #expect(dry.output.components(separatedBy: "daily snapshot").count - 1 == 4 + 1)  // and mopped's
        #expect(dry.output.contains("would drop"))
        #expect(dry.output.contains("Dry run: 8 snapshots would be dropped; nothing changed."))
        #expect(try self.ids(["snapshots"]).count == 13)

        let applied = try run(["forget", "--keep-daily", "4", "--keep-tag", "first", "--json"])
        #expect(applied.status == 0, "\(applied.error)")
        let groups = try JSONSerialization.jsonObject(with: Data(applied.output.utf8)) as? [[String: Any]]
        #expect(groups?.count == 2)
        let left = Set(try self.ids(["snapshots"]))
        #expect(left == Set(ids.suffix(4) + [ids[0]]).union(try self.ids(["snapshots", "--host", "mopped"])))
        let after = try cli.json(["stats"]) as? [String: Any]
        #expect((after?["chunks"] as? Int ?? 0) < (before?["chunks"] as? Int ?? 0))
        #expect(try run(["verify"]).status == 0)
    }

    @Test(
        "forget refuses, by name and changing nothing: no rule, both ids and rules, a bad count or duration, a policy that empties a group"
    )
    func refusals() throws {
        _ = try backUpSundays()
        for (arguments, status, text) in [
            (["forget"], Int32(64), "give the snapshots to drop, or a policy"),
            (["forget", "work", "--keep-last", "1"], 64, "not both"),
            (["forget", "--keep-last", "0"], 64, "--keep-last takes a count of 1 or more, or unlimited"),
            (["forget", "--keep-within", "1w"], 64, "--keep-within takes a duration"),
            (["forget", "--keep-tag", "absent"], 1, "would remove all"),
            (["forget", "--keep-last", "1", "--group-by", "color"], 64, "--group-by takes host, name and tags"),
        ] as [([String], Int32, String)] {
            let result = try run(arguments)
            #expect(result.status == status, "\(arguments): \(result.status) \(result.error)")
            #expect(result.error.contains(text), "\(arguments): \(result.error)")
        }
        #expect(try self.ids(["snapshots"]).count == 13)
        // --group-by '' applies the policy across hosts: one group, the newest kept.
        let across = try run(["forget", "--keep-last", "1", "--group-by", "", "--dry-run"])
        #expect(across.output.contains("all snapshots: 1 kept, 12 to drop"), "\(across.output)")
    }
}
