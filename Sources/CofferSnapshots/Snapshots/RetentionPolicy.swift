public import Foundation

/// Which snapshots to keep, in restic's terms (`forget --keep-*`): the policy is applied to each
/// group of snapshots separately (``SnapshotGrouping``), newest first, and a snapshot is kept if any
/// rule keeps it.
///
/// - `last`: the newest `last` snapshots.
/// - `hourly`, `daily`, `weekly`, `monthly`, `yearly`: for the newest `n` hours (days, ISO weeks from
///   Monday, months, years) that hold a snapshot, the newest snapshot of each. Periods are natural
///   calendar ones in the given time zone, not counted back from now. When a rule still has count
///   left after the group's oldest snapshot, that oldest one is kept too ("oldest daily snapshot"),
///   so the kept history is as long as it can be.
/// - `within`: every snapshot taken within the duration before the group's newest one (not before
///   now: a device that stopped backing up keeps its history).
/// - `withinHourly` … `withinYearly`: the newest snapshot of each hour (day, …) within the duration.
/// - `tags`: every snapshot that has all the tags of one of the lists (`[""]`: untagged ones).
///
/// A count of ``unlimited`` keeps one snapshot of every such period. Snapshots dated in the future
/// do not move the group's "newest" that durations count back from.
public struct RetentionPolicy: Sendable, Equatable {
    /// A count meaning every period (restic's `unlimited`).
    public static let unlimited = -1

    /// Keep the newest `last` snapshots.
    public var last = 0
    /// Keep the newest snapshot of each of the newest `hourly` hours that have one.
    public var hourly = 0
    /// Days, as `hourly` hours.
    public var daily = 0
    /// ISO weeks (Monday to Sunday), as `hourly` hours.
    public var weekly = 0
    /// Months, as `hourly` hours.
    public var monthly = 0
    /// Years, as `hourly` hours.
    public var yearly = 0
    /// Keep every snapshot within this of the newest.
    public var within: RetentionDuration?
    /// Keep the newest snapshot of each hour within this of the newest.
    public var withinHourly: RetentionDuration?
    /// Days, as `withinHourly` hours.
    public var withinDaily: RetentionDuration?
    /// Weeks, as `withinHourly` hours.
    public var withinWeekly: RetentionDuration?
    /// Months, as `withinHourly` hours.
    public var withinMonthly: RetentionDuration?
    /// Years, as `withinHourly` hours.
    public var withinYearly: RetentionDuration?
    /// Keep every snapshot that has all the tags of any of these lists; `[""]` matches untagged ones.
    public var tags: [[String]] = []

    /// A policy that keeps nothing; set its rules.
    public init() {}

    /// Whether no rule is set (such a policy is refused: it would remove everything).
    public var isEmpty: Bool {
        [last, hourly, daily, weekly, monthly, yearly].allSatisfy { $0 == 0 }
            && [within, withinHourly, withinDaily, withinWeekly, withinMonthly, withinYearly].allSatisfy { $0 == nil }
            && tags.isEmpty
    }

    /// What the policy decides for one group's snapshots: each kept or not, with the rules that
    /// kept it, newest first.
    ///
    /// - Parameters:
    ///   - snapshots: One group's snapshots, in any order.
    ///   - now: Snapshots dated after it do not count as the group's newest.
    ///   - timeZone: Where hours, days, weeks, months and years begin (restic: the local zone).
    public func apply(
        to snapshots: [SnapshotInfo],
        now: Date = Date(),
        timeZone: TimeZone = .current
    )
        -> [RetentionDecision]
    {
        let ordered = snapshots.enumerated().sorted {
            $0.element.created != $1.element.created ? $0.element.created > $1.element.created : $0.offset < $1.offset
        }.map(\.element)
        guard !ordered.isEmpty else { return [] }
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = timeZone
        let newest = ordered.filter { $0.created <= now }.map(\.created).max() ?? .distantPast

        var counted: [(count: Int, period: RetentionPeriod?, last: Int?, reason: String)] = [
            (last, nil, nil, "last snapshot"), (hourly, .hour, nil, "hourly snapshot"),
            (daily, .day, nil, "daily snapshot"), (weekly, .week, nil, "weekly snapshot"),
            (monthly, .month, nil, "monthly snapshot"), (yearly, .year, nil, "yearly snapshot"),
        ]
        var spans: [(within: RetentionDuration?, period: RetentionPeriod, last: Int?, reason: String)] = [
            (withinHourly, .hour, nil, "hourly within"), (withinDaily, .day, nil, "daily within"),
            (withinWeekly, .week, nil, "weekly within"), (withinMonthly, .month, nil, "monthly within"),
            (withinYearly, .year, nil, "yearly within"),
        ]
        var decisions: [RetentionDecision] = []
        for (index, snapshot) in ordered.enumerated() {
            let isOldest = index == ordered.count - 1
            var reasons: [String] = []
            for list in tags where snapshot.hasAll(list) {
                reasons.append("has tags \(list.filter { !$0.isEmpty }.joined(separator: ","))")
            }
            if let within, snapshot.created > within.before(newest, calendar) {
                reasons.append("within \(within)")
            }
            for rule in counted.indices where counted[rule].count > 0 || counted[rule].count == Self.unlimited {
                let bucket = counted[rule].period.map { $0.bucket(of: snapshot.created, calendar) } ?? index
                guard bucket != counted[rule].last || isOldest else { continue }
                reasons.append((bucket == counted[rule].last ? "oldest " : "") + counted[rule].reason)
                counted[rule].last = bucket
                if counted[rule].count > 0 { counted[rule].count -= 1 }
            }
            for rule in spans.indices {
                guard let within = spans[rule].within, snapshot.created > within.before(newest, calendar) else {
                    continue
                }
                let bucket = spans[rule].period.bucket(of: snapshot.created, calendar)
                guard bucket != spans[rule].last || isOldest else { continue }
                reasons.append((bucket == spans[rule].last ? "oldest " : "") + "\(spans[rule].reason) \(within)")
                spans[rule].last = bucket
            }
            decisions.append(RetentionDecision(snapshot: snapshot, keep: !reasons.isEmpty, reasons: reasons))
        }
        return decisions
    }
}

/// What a ``RetentionPolicy`` decided for one snapshot.
public struct RetentionDecision: Sendable, Equatable {
    /// The snapshot.
    public let snapshot: SnapshotInfo
    /// Whether it is kept.
    public let keep: Bool
    /// The rules that kept it (`daily snapshot`, `within 7d`, `has tags monthly`); empty if removed.
    public let reasons: [String]
}

/// A length of time as restic's `--keep-within` takes it: years, months, days and hours, e.g.
/// `1y6m`, `7d`, `2y5m7d3h`.
public struct RetentionDuration: Sendable, Equatable, CustomStringConvertible {
    /// Whole years.
    public var years = 0
    /// Whole months.
    public var months = 0
    /// Whole days.
    public var days = 0
    /// Whole hours.
    public var hours = 0

    /// Parses `2y5m7d3h` (any of the four parts, each at most once, in that order).
    ///
    /// - Throws: ``CofferError`` `.param` naming the text and the form it should have.
    public init(_ text: String) throws(CofferError) {
        var number = ""
        var seen = ""
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            guard let value = Int(number), let unit = "ymdh".firstIndex(of: character),
                seen.allSatisfy({ "ymdh".firstIndex(of: $0)! < unit })
            else {
                throw Self.malformed(text)
            }
            switch character {
            case "y": years = value
            case "m": months = value
            case "d": days = value
            default: hours = value
            }
            seen.append(character)
            number = ""
        }
        guard number.isEmpty, !seen.isEmpty, years + months + days + hours > 0 else { throw Self.malformed(text) }
    }

    private static func malformed(_ text: String) -> CofferError {
        CofferError(
            .param,
            "'\(text)' is not a duration: give years, months, days and hours as in 1y6m, 7d or 2y5m7d3h (1w is 7d)"
        )
    }

    /// `2y5m7d3h`, leaving out zero parts.
    public var description: String {
        [(years, "y"), (months, "m"), (days, "d"), (hours, "h")].filter { $0.0 > 0 }.map { "\($0.0)\($0.1)" }
            .joined()
    }

    /// The moment this long before `date`.
    func before(_ date: Date, _ calendar: Calendar) -> Date {
        let components = DateComponents(year: -years, month: -months, day: -days, hour: -hours)
        return calendar.date(byAdding: components, to: date) ?? .distantPast
    }
}

/// The calendar periods retention counts in.
enum RetentionPeriod {
    case hour, day, week, month, year

    /// A number that is the same for two moments of the same period and differs otherwise.
    func bucket(of date: Date, _ calendar: Calendar) -> Int {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .yearForWeekOfYear, .weekOfYear], from: date)
        let (year, month, day, hour) = (parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0)
        switch self {
        case .hour: return year * 1_000_000 + month * 10_000 + day * 100 + hour
        case .day: return year * 10_000 + month * 100 + day
        case .week: return (parts.yearForWeekOfYear ?? 0) * 100 + (parts.weekOfYear ?? 0)
        case .month: return year * 100 + month
        case .year: return year
        }
    }
}

extension SnapshotInfo {
    /// Whether the snapshot has every tag of `list`; `[""]` (or an empty list) means untagged.
    func hasAll(_ list: [String]) -> Bool {
        let wanted = list.filter { !$0.isEmpty }
        return wanted.isEmpty ? tags.isEmpty : wanted.allSatisfy(tags.contains)
    }
}

/// What snapshots are grouped by before a policy is applied (restic's `--group-by`): host and name
/// by default, so that one machine's policy never removes another's backups.
public struct SnapshotGrouping: OptionSet, Sendable, Hashable {
    /// The grouping's bits: 1 host, 2 name, 4 tags.
    public let rawValue: Int

    /// Creates a grouping from its raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Snapshots of different hosts are different groups.
    public static let host = SnapshotGrouping(rawValue: 1)
    /// Snapshots of different names (the backed-up path, unless named) are different groups.
    public static let name = SnapshotGrouping(rawValue: 2)
    /// Snapshots with different tag sets are different groups.
    public static let tags = SnapshotGrouping(rawValue: 4)

    /// The key of `snapshot`'s group.
    func key(of snapshot: SnapshotInfo) -> SnapshotGroupKey {
        SnapshotGroupKey(
            hostname: contains(.host) ? snapshot.hostname : nil,
            name: contains(.name) ? snapshot.name : nil,
            tags: contains(.tags) ? snapshot.tags : nil
        )
    }
}

/// What the snapshots of one group share: the parts ``SnapshotGrouping`` groups by.
public struct SnapshotGroupKey: Sendable, Hashable, Comparable {
    /// The host, when grouping by host.
    public let hostname: String?
    /// The name, when grouping by name.
    public let name: String?
    /// The tags, when grouping by tags.
    public let tags: [String]?

    /// Orders groups by host, then name, then tags, as `forget` lists them.
    public static func < (a: SnapshotGroupKey, b: SnapshotGroupKey) -> Bool {
        let left = [a.hostname ?? "", a.name ?? "", (a.tags ?? []).joined(separator: ",")]
        let right = [b.hostname ?? "", b.name ?? "", (b.tags ?? []).joined(separator: ",")]
        return left.lexicographicallyPrecedes(right)
    }
}

/// One group's snapshots and what a policy decided for each.
public struct RetentionGroup: Sendable, Equatable {
    /// What the group's snapshots share.
    public let key: SnapshotGroupKey
    /// Every snapshot of the group, newest first, kept or removed.
    public let decisions: [RetentionDecision]
}
