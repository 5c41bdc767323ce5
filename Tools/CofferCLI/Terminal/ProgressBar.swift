import Coffer
import Foundation

/// A one-line progress display on standard error, drawn only when it is a terminal and the user did
/// not ask for quiet or JSON output. Redraws at most ten times a second, in place: each drawing
/// returns to the line's start and clears what is left of the one before, and fits the terminal's
/// width (parts are dropped, then the label is shortened in the middle), so it never wraps. When the
/// work is done the line is cleared, and the command's summary takes its place. Shows the
/// elapsed time, and the percentage and an ETA whenever the total is known (it may become known
/// later: ``setTotal(_:)``). Safe to update from any thread (the blob pipeline reports from its
/// committer thread).
///
/// ```swift
/// let progress = context.progressBar("put big.iso", total: size)
/// progress.update(completed: done)
/// progress.finish()
/// ```
final class ProgressBar: @unchecked Sendable {
    /// What the bar counts.
    enum Unit: Sendable {
        /// Bytes, shown as `1.5 MiB` with a rate.
        case bytes
        /// Things (`paths`), shown as counts.
        case count(String)
    }

    private let lock = NSLock()
    private let label: String
    private var total: Int64?
    private let unit: Unit
    private let console: Console
    private let isEnabled: Bool
    private let started = Date()
    private var lastDrawn = Date.distantPast
    private var completed: Int64 = 0
    private var detail = ""

    init(label: String, total: Int64?, unit: Unit = .bytes, console: Console, enabled: Bool) {
        self.label = label
        self.total = total
        self.unit = unit
        self.console = console
        self.isEnabled = enabled && console.errorIsTerminal
    }

    /// The bar as a progress callback: each call reports the bytes (or things) done so far.
    var report: @Sendable (Int64) -> Void { { [self] completed in update(completed: completed) } }

    /// Whether the bar draws at all (a terminal, and neither quiet nor JSON output).
    var isDrawn: Bool { isEnabled }

    /// Sets the total once it is known (a count that finished after the work began).
    func setTotal(_ total: Int64?) {
        lock.lock()
        defer { lock.unlock() }
        self.total = total
    }

    /// Records progress and redraws if enough time has passed.
    func update(completed: Int64, detail: String = "") {
        lock.lock()
        defer { lock.unlock() }
        self.completed = completed
        self.detail = detail
        let now = Date()
        guard isEnabled, now.timeIntervalSince(lastDrawn) >= 0.1 else { return }
        lastDrawn = now
        draw(elapsed: now.timeIntervalSince(started), final: false)
    }

    /// Ends the display: the line is cleared, so that what the command prints next (its summary,
    /// which says what was done) is the last line, not a bar whose last drawing may lag behind it.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard isEnabled else { return }
        console.clearProgress()
    }

    /// Draws the line in place.
    private func draw(elapsed: TimeInterval, final: Bool) {
        let line = Self.render(
            label: label,
            completed: completed,
            total: total,
            unit: unit,
            elapsed: elapsed,
            detail: detail,
            columns: console.columns,
            final: final
        )
        console.drawProgress(line)
    }

    /// The text of one progress line, at most `columns - 1` characters (the last column would wrap):
    /// `put big.iso [#####-----]  50%  1.0 GiB / 2.0 GiB  92.7 MiB/s  0:12 ETA 0:12  detail`.
    static func render(
        label: String,
        completed: Int64,
        total: Int64?,
        unit: Unit = .bytes,
        elapsed: TimeInterval,
        detail: String = "",
        columns: Int = 120,
        final: Bool = false
    ) -> String {
        let rate = elapsed > 0 ? Double(completed) / elapsed : 0
        let amount: String
        var rateText = ""
        switch unit {
        case .bytes:
            amount =
                total.map { "\(ByteCount.format(completed)) / \(ByteCount.format($0))" } ?? ByteCount.format(completed)
            rateText = "\(ByteCount.format(Int64(rate)))/s"
        case .count(let noun):
            amount = (total.map { "\(completed) / \($0)" } ?? "\(completed)") + " " + noun
        }
        var time = duration(elapsed)
        var fraction: Double?
        if let total, total > 0 {
            fraction = min(max(Double(completed) / Double(total), 0), 1)
            if !final, rate > 0, completed < total { time += " ETA " + duration(Double(total - completed) / rate) }
        }
        let percent = fraction.map { String(Int(($0 * 100).rounded(.down))).leftPadded(to: 3) + "%" }
        let limit = max(columns - 1, 20)
        // A long label (a blob's name) takes at most two fifths of the line, cut in the middle.
        let name = label.middleTruncated(to: max(limit * 2 / 5, 12))
        // From the fullest line to the barest; the first that fits is drawn, and the bar takes what
        // room is left (when the total is known and there are at least 10 columns for it).
        let layouts: [[String]] = [
            [percent, amount, rateText, time, detail], [percent, amount, rateText, time], [percent, amount, time],
            [percent, amount], [percent ?? amount],
        ].map { $0.compactMap { $0 }.filter { !$0.isEmpty } }
        for parts in layouts {
            let body = parts.joined(separator: "  ")
            let room = limit - name.count - 2 - body.count
            guard room >= 0 else { continue }
            if let fraction, room >= 13 {
                let width = min(30, room - 3)
                let filled = Int((fraction * Double(width)).rounded(.down))
                let bar =
                    "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
                return name + " " + bar + " " + body
            }
            return name + "  " + body
        }
        return (name + "  " + (percent ?? amount)).middleTruncated(to: limit)
    }

    /// `0:07`, `12:34`, `1:02:03`.
    static func duration(_ seconds: TimeInterval) -> String {
        let whole = Int(max(0, seconds.rounded()))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let tail = String(format: "%02d", rest)
        return hours > 0 ? "\(hours):" + String(format: "%02d", minutes) + ":" + tail : "\(minutes):" + tail
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

extension String {
    /// The string cut to `width` characters by replacing its middle with `…`, which keeps both the
    /// start and the end of a path or a name (`photos/2024/…/IMG_0042.jpg`).
    func middleTruncated(to width: Int) -> String {
        guard count > width else { return self }
        guard width > 1 else { return String(prefix(max(width, 0))) }
        let kept = width - 1
        let head = kept / 2
        return String(prefix(head)) + "…" + String(suffix(kept - head))
    }
}
