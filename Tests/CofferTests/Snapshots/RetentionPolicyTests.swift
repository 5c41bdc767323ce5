import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Retention policies (`forget --keep-*`): restic's documented examples, each rule on snapshots at set
/// times, a randomized check against a second, independent statement of the rules, and the policy
/// applied to a vault.
@Suite("Retention policies: restic's forget rules")
struct RetentionPolicyTests {
    static let utc = TimeZone(identifier: "UTC")!

    /// A snapshot at `time` (`2019-09-01 11:00:00`, UTC) with `tags`.
    static func snapshot(
        _ time: String,
        tags: [String] = [],
        host: String = "mopped",
        name: String = "/work"
    )
        -> SnapshotInfo
    {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = utc
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let date = formatter.date(from: time)!
        return snapshot(at: date, tags: tags, host: host, name: name)
    }

    static func snapshot(
        at date: Date,
        tags: [String] = [],
        host: String = "mopped",
        name: String = "/work"
    )
        -> SnapshotInfo
    {
        SnapshotInfo(
            id: String(format: "%032x", Int(date.timeIntervalSince1970)),
            name: name,
            sourcePath: name,
            hostname: host,
            created: date,
            scope: .syncable,
            statistics: SnapshotStatistics(),
            tags: tags.sorted(),
            paths: [name]
        )
    }

    /// The times of the kept snapshots, newest first.
    static func kept(_ policy: RetentionPolicy, _ snapshots: [SnapshotInfo], now: Date = .distantFuture) -> [Date] {
        policy.apply(to: snapshots, now: now, timeZone: utc).filter(\.keep).map(\.snapshot.created)
    }

    /// restic's twelve Sunday backups (doc/060_forget.rst).
    static let sundays = [
        "2019-09-01", "2019-09-08", "2019-09-15", "2019-09-22", "2019-09-29", "2019-10-06", "2019-10-13",
        "2019-10-20", "2019-10-27", "2019-11-03", "2019-11-10", "2019-11-17",
    ].map { snapshot("\($0) 11:00:00") }

    @Test("restic's example: twelve Sundays, --keep-daily 4 keeps the last four, each a daily snapshot")
    func resticExample() {
        var policy = RetentionPolicy()
        policy.daily = 4
        let decisions = policy.apply(to: Self.sundays.shuffled(), now: .distantFuture, timeZone: Self.utc)
        #expect(decisions.filter(\.keep).map(\.snapshot) == Array(Self.sundays.suffix(4).reversed()))
        #expect(decisions.filter(\.keep).allSatisfy { $0.reasons == ["daily snapshot"] })
        #expect(decisions.filter { !$0.keep }.count == 8)
        #expect(decisions.filter { !$0.keep }.allSatisfy { $0.reasons.isEmpty })
    }

    @Test(
        "restic's example: a daily backup for 100 years, --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --keep-yearly 75"
    )
    func hundredYears() {
        let start = Self.snapshot("1920-01-01 03:00:00").created
        let days = 36_524
        let snapshots = (0..<days).map { Self.snapshot(at: start.addingTimeInterval(Double($0) * 86_400)) }
        var policy = RetentionPolicy()
        (policy.daily, policy.weekly, policy.monthly, policy.yearly) = (7, 5, 12, 75)
        let kept = policy.apply(to: snapshots, now: .distantFuture, timeZone: Self.utc).filter(\.keep)
        func only(_ reason: String) -> Int { kept.filter { $0.reasons == [reason] }.count }
        func with(_ reason: String) -> Int { kept.filter { $0.reasons.contains(reason) }.count }
        // Each rule keeps its count; the dailies include the newest weekly (4 more weeklies), and
        // the months and years overlap what is kept already by at most one snapshot each.
        #expect(with("daily snapshot") == 7 && with("weekly snapshot") == 5)
        #expect(with("monthly snapshot") == 12 && with("yearly snapshot") == 75)
        #expect(only("weekly snapshot") >= 3 && only("weekly snapshot") <= 4)
        #expect(kept.count >= 7 + 3 + 11 + 74 && kept.count <= 7 + 4 + 12 + 75)
        #expect(kept.first?.snapshot == snapshots.last)
    }

    @Test("--keep-last, and the oldest snapshot kept while a rule has count left")
    func lastAndOldest() {
        var policy = RetentionPolicy()
        policy.last = 2
        #expect(Self.kept(policy, Self.sundays) == Self.sundays.suffix(2).reversed().map(\.created))
        // Three days that have snapshots, five asked for: all three, and the oldest one of a day.
        let snapshots = ["2020-01-01 08:00:00", "2020-01-01 09:00:00", "2020-01-02 09:00:00", "2020-01-03 09:00:00"]
            .map { Self.snapshot($0) }
        policy = RetentionPolicy()
        policy.daily = 5
        let decisions = policy.apply(to: snapshots, now: .distantFuture, timeZone: Self.utc)
        #expect(decisions.allSatisfy { $0.keep })
        #expect(decisions.last?.reasons == ["oldest daily snapshot"])
    }

    @Test("--keep-within counts back from the newest snapshot, not from now, and ignores future ones")
    func within() throws {
        var policy = RetentionPolicy()
        policy.within = try RetentionDuration("14d")
        let now = Self.snapshot("2019-11-18 00:00:00").created
        // Newest: 2019-11-17; within 14 days of it: 11-03 excluded (exactly 14 days), 11-10 and 11-17 in.
        #expect(Self.kept(policy, Self.sundays, now: now).count == 2)
        // A snapshot from the future is kept, and does not move "newest".
        let future = Self.snapshot("2030-01-01 00:00:00")
        #expect(Self.kept(policy, Self.sundays + [future], now: now).count == 3)
        // A device that stopped backing up months ago keeps its last two weeks.
        #expect(Self.kept(policy, Self.sundays, now: now.addingTimeInterval(365 * 86_400)).count == 2)
    }

    @Test("--keep-within-weekly keeps the newest of each week within the duration")
    func withinWeekly() throws {
        var policy = RetentionPolicy()
        policy.withinWeekly = try RetentionDuration("1m")
        // Two snapshots a week for eight weeks (Mondays and Fridays).
        let base = Self.snapshot("2021-03-01 12:00:00").created
        let snapshots = (0..<8).flatMap { week in
            [0, 4].map { day in Self.snapshot(at: base.addingTimeInterval(Double(week * 7 + day) * 86_400)) }
        }
        let kept = policy.apply(to: snapshots, now: .distantFuture, timeZone: Self.utc).filter(\.keep)
        // Newest: Friday 2021-04-23; a month back is 2021-03-23: the Fridays of 04-23, 04-16, 04-09,
        // 04-02, 03-26 (five weeks).
        #expect(kept.count == 5)
        #expect(kept.allSatisfy { $0.reasons == ["weekly within 1m"] })
    }

    @Test("--keep-tag keeps snapshots with all the tags of a list; '' keeps untagged ones")
    func tags() {
        let snapshots = [
            Self.snapshot("2020-01-01 00:00:00", tags: ["a"]), Self.snapshot("2020-01-02 00:00:00", tags: ["a", "b"]),
            Self.snapshot("2020-01-03 00:00:00"), Self.snapshot("2020-01-04 00:00:00", tags: ["b"]),
        ]
        var policy = RetentionPolicy()
        policy.tags = [["a", "b"]]
        #expect(Self.kept(policy, snapshots) == [snapshots[1].created])
        policy.tags = [["a"], ["b"]]
        #expect(Self.kept(policy, snapshots).count == 3)
        policy.tags = [[""]]
        #expect(Self.kept(policy, snapshots) == [snapshots[2].created])
        #expect(policy.apply(to: snapshots, timeZone: Self.utc).first { $0.keep }?.reasons == ["has tags "])
    }

    @Test("durations parse as restic's do, and malformed ones are refused by name")
    func durations() throws {
        let duration = try RetentionDuration("2y5m7d3h")
        #expect((duration.years, duration.months, duration.days, duration.hours) == (2, 5, 7, 3))
        #expect(duration.description == "2y5m7d3h")
        #expect(try RetentionDuration("36h").description == "36h")
        for bad in ["", "7", "1w", "d7", "7d1y", "7d7d", "0d", "-1d", "7 d"] {
            let error = #expect(throws: CofferError.self, "\(bad)") { _ = try RetentionDuration(bad) }
            #expect(error?.message.contains("is not a duration") == true)
        }
    }

    /// The rules stated a second way, as sets rather than one pass: for a counted rule, the newest
    /// snapshot of each of the newest `n` periods, and the oldest snapshot if fewer than `n` periods
    /// hold the others; for a duration rule, the newest snapshot of each period after the cutoff, and
    /// the oldest if it is after the cutoff.
    static func model(_ policy: RetentionPolicy, _ snapshots: [SnapshotInfo], now: Date) -> Set<Date> {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = utc
        let ordered = snapshots.sorted { $0.created > $1.created }
        guard let oldest = ordered.last else { return [] }
        let newest = ordered.filter { $0.created <= now }.map(\.created).max() ?? .distantPast
        var kept = Set<Date>()
        func newestPerPeriod(_ list: [SnapshotInfo], _ period: RetentionPeriod?) -> [SnapshotInfo] {
            var seen = Set<Int>()
            return list.enumerated().filter { index, snapshot in
                seen.insert(period?.bucket(of: snapshot.created, calendar) ?? index).inserted
            }.map(\.element)
        }
        let counted: [(Int, RetentionPeriod?)] = [
            (policy.last, nil), (policy.hourly, .hour), (policy.daily, .day), (policy.weekly, .week),
            (policy.monthly, .month), (policy.yearly, .year),
        ]
        for (count, period) in counted where count != 0 {
            let heads = newestPerPeriod(ordered, period)
            kept.formUnion((count < 0 ? heads : Array(heads.prefix(count))).map(\.created))
            if count < 0 || newestPerPeriod(Array(ordered.dropLast()), period).count < count {
                kept.insert(oldest.created)
            }
        }
        let spans: [(RetentionDuration?, RetentionPeriod?)] = [
            (policy.within, nil), (policy.withinHourly, .hour), (policy.withinDaily, .day),
            (policy.withinWeekly, .week), (policy.withinMonthly, .month), (policy.withinYearly, .year),
        ]
        for case (let duration?, let period) in spans {
            let cutoff = duration.before(newest, calendar)
            let inside = ordered.filter { $0.created > cutoff }
            guard let period else {
                kept.formUnion(inside.map(\.created))
                continue
            }
            kept.formUnion(newestPerPeriod(inside, period).map(\.created))
            if oldest.created > cutoff { kept.insert(oldest.created) }
        }
        for list in policy.tags { kept.formUnion(ordered.filter { $0.hasAll(list) }.map(\.created)) }
        return kept
    }

    @Test(
        "randomized: every policy keeps exactly what the rules stated as sets keep",
        arguments: ModelSeeds.seeds(
            "COFFER_RETENTION_SEEDS",
            defaults: Array(1...40)
        )
    )
    func model(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let start = Self.snapshot("2018-06-01 00:00:00").created
        // Snapshots at random moments over three years, some close together, a few tagged.
        var seconds = Set<Int>()
        for _ in 0..<Int.random(in: 1...150, using: &random) {
            let spread = [3_600, 86_400 * 3, 86_400 * 1_100][Int.random(in: 0...2, using: &random)]
            seconds.insert(Int.random(in: 0..<spread, using: &random))
        }
        let snapshots = seconds.map { second in
            Self.snapshot(
                at: start.addingTimeInterval(Double(second)),
                tags: Int.random(in: 0..<8, using: &random) == 0 ? ["keep"] : []
            )
        }
        var policy = RetentionPolicy()
        func count() -> Int { [0, 0, 1, 2, 3, 5, 8, RetentionPolicy.unlimited][Int.random(in: 0...7, using: &random)] }
        func duration() -> RetentionDuration? {
            Int.random(in: 0...2, using: &random) == 0
                ? try? RetentionDuration(["12h", "3d", "2m", "1y", "1y6m"][Int.random(in: 0...4, using: &random)]) : nil
        }
        (policy.last, policy.hourly, policy.daily) = (count(), count(), count())
        (policy.weekly, policy.monthly, policy.yearly) = (count(), count(), count())
        (policy.within, policy.withinHourly, policy.withinDaily) = (duration(), duration(), duration())
        (policy.withinWeekly, policy.withinMonthly, policy.withinYearly) = (duration(), duration(), duration())
        if Int.random(in: 0...3, using: &random) == 0 { policy.tags = [["keep"]] }
        let now = start.addingTimeInterval(Double(Int.random(in: 0..<(86_400 * 1_200), using: &random)))
        let decisions = policy.apply(to: snapshots.shuffled(using: &random), now: now, timeZone: Self.utc)
        let kept = Set(decisions.filter(\.keep).map(\.snapshot.created))
        #expect(
            kept == Self.model(policy, snapshots, now: now),
            "seed \(seed) (replay: COFFER_RETENTION_SEEDS=\(seed),\(seed)): \(policy)"
        )
        #expect(decisions.allSatisfy { $0.keep == !$0.reasons.isEmpty }, "seed \(seed)")
        #expect(decisions.map(\.snapshot.created) == snapshots.map(\.created).sorted(by: >), "seed \(seed)")
    }
}

@Suite("Retention policies on a vault")
struct RetentionVaultTests {
    @Test("a policy groups by host and name, drops what no rule keeps, frees its chunks, and a dry run changes nothing")
    func forgetByPolicy() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        let source = fixture.directory.path("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        let day = 86_400.0
        let start = Date(timeIntervalSince1970: 1_600_000_000)
        for index in 0..<6 {
            // Each day's tree holds a file of its own, so dropping a snapshot frees chunks.
            try Data(RandomBytes.data(count: 200_000)).write(to: source.appendingPathComponent("day\(index).bin"))
            var options = BackupOptions(name: "docs", tags: index == 0 ? ["first"] : [])
            options.time = start.addingTimeInterval(Double(index) * day)
            _ = try vault.snapshots.backup(directory: source, options: options)
            try FileManager.default.removeItem(at: source.appendingPathComponent("day\(index).bin"))
        }
        var other = BackupOptions(name: "docs")
        other.hostname = "elsewhere"
        other.time = start
        _ = try vault.snapshots.backup(directory: source, options: other)

        var policy = RetentionPolicy()
        policy.last = 2
        policy.tags = [["first"]]
        let before = try vault.blobs.statistics()
        let plan = try vault.snapshots.plan(policy, timeZone: RetentionPolicyTests.utc)
        #expect(try vault.snapshots.list().count == 7)
        #expect(plan.count == 2)
        let local = try #require(plan.first { $0.key.hostname == Snapshots.hostname })
        #expect(local.decisions.map(\.keep) == [true, true, false, false, false, true])
        #expect(local.decisions.last?.reasons == ["has tags first"])
        // The other host's lone snapshot is its group's newest: kept.
        #expect(plan.first { $0.key.hostname == "elsewhere" }?.decisions.map(\.keep) == [true])

        try vault.snapshots.forget(keeping: policy, timeZone: RetentionPolicyTests.utc)
        let left = try vault.snapshots.list()
        #expect(left.count == 4)
        #expect(left.filter { $0.hostname == Snapshots.hostname }.map(\.tags) == [["first"], [], []])
        let after = try vault.blobs.statistics()
        #expect(after.chunkCount < before.chunkCount)
        #expect(try vault.blobs.verify(readingData: false).isHealthy)

        // Refused: an empty policy, and one that would empty a group.
        #expect(throws: CofferError.self) { try vault.snapshots.forget(keeping: RetentionPolicy()) }
        var none = RetentionPolicy()
        none.tags = [["no-such-tag"]]
        let refused = #expect(throws: CofferError.self) { try vault.snapshots.forget(keeping: none) }
        #expect(refused?.message.contains("would remove all") == true)
        #expect(try vault.snapshots.list().count == 4)
    }

    @Test("tags survive the record: sorted, unique, checked; --time and --host are what the snapshot records")
    func tagsAndTime() throws {
        let fixture = try VaultFixture.smallChunks()
        let vault = try fixture.create()
        let source = fixture.directory.path("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var options = BackupOptions(tags: ["weekly", "laptop", "weekly"])
        options.time = Date(timeIntervalSince1970: 1_567_335_600)
        options.hostname = "mopped"
        let snapshot = try vault.snapshots.backup(directory: source, options: options).snapshot
        #expect(snapshot.tags == ["laptop", "weekly"])
        let listed = try #require(try vault.snapshots.list().first)
        #expect(listed.tags == ["laptop", "weekly"] && listed.hostname == "mopped")
        #expect(listed.created == Date(timeIntervalSince1970: 1_567_335_600))
        #expect(try vault.snapshots.list(matching: SnapshotFilter(tags: [["weekly", "laptop"]])).count == 1)
        #expect(try vault.snapshots.list(matching: SnapshotFilter(tags: [[""]])).isEmpty)
        #expect(try vault.snapshots.list(matching: SnapshotFilter(hosts: ["other"])).isEmpty)
        for bad in ["", "a,b", String(repeating: "x", count: 256)] {
            #expect(throws: CofferError.self, "\(bad)") {
                _ = try vault.snapshots.backup(directory: source, options: BackupOptions(tags: [bad]))
            }
        }
        #expect(try vault.snapshots.list().count == 1)
    }
}
