import Foundation

/// A wall-clock time read in a time zone as restic reads `--time` (Go's `time.ParseInLocation`, that
/// is `time.Date`): the zone's offset is looked up at the wall time taken as UTC, and again at the
/// moment that first offset gives; the second offset decides. So a time that occurs twice, when the
/// clocks go back, is the one Go picks: in zones west of Greenwich (America/New_York) the first,
/// daylight time; east of it (Europe/Berlin) the second, standard time. A time that never occurs,
/// in the hour the clocks skip, Go moves by the jump without a word; Coffer refuses it, naming the
/// gap.
enum LocalTime {
    /// What a wall time means in a zone.
    enum Reading: Equatable {
        /// The moment.
        case moment(Date)
        /// The wall time does not exist there: the clocks jumped from `from` to `to` (`HH:mm`).
        case skipped(from: String, to: String)
    }

    /// Reads `wall` (the wall-clock time as if it were UTC, as a formatter in UTC parses it) in `zone`.
    static func read(_ wall: Date, in zone: TimeZone) -> Reading {
        let first = zone.secondsFromGMT(for: wall)
        let offset = zone.secondsFromGMT(for: wall.addingTimeInterval(-TimeInterval(first)))
        let moment = wall.addingTimeInterval(-TimeInterval(offset))
        // Where the moment, shown in the zone again, is another wall time, the wall time never was.
        guard moment.addingTimeInterval(TimeInterval(zone.secondsFromGMT(for: moment))) != wall else {
            return .moment(moment)
        }
        // The jump lies within a day of the wall time read as UTC, whichever side of Greenwich.
        guard let jump = zone.nextDaylightSavingTimeTransition(after: wall.addingTimeInterval(-86_400)) else {
            return .skipped(from: "?", to: "?")
        }
        let before = jump.addingTimeInterval(TimeInterval(zone.secondsFromGMT(for: jump.addingTimeInterval(-1))))
        let after = jump.addingTimeInterval(TimeInterval(zone.secondsFromGMT(for: jump)))
        return .skipped(from: clock(before), to: clock(after))
    }

    /// `HH:mm` of a wall time held as UTC.
    private static func clock(_ wall: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.dateFormat = "HH:mm"
        return formatter.string(from: wall)
    }
}
