import Coffer
import Foundation

/// A one-line progress display on standard error, drawn only when it is a terminal and the user did
/// not ask for quiet or JSON output. Redraws at most ten times a second. Safe to update from any thread
/// (the blob pipeline reports from its committer thread).
///
/// ```swift
/// let progress = ProgressBar(label: "backup", total: totalBytes, console: console, enabled: !quiet)
/// progress.update(completed: done)
/// progress.finish()
/// ```
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let label: String
    private let total: Int64?
    private let console: Console
    private let isEnabled: Bool
    private let started = Date()
    private var lastDrawn = Date.distantPast
    private var completed: Int64 = 0
    private var detail = ""

    init(label: String, total: Int64?, console: Console, enabled: Bool) {
        self.label = label
        self.total = total
        self.console = console
        self.isEnabled = enabled && console.errorIsTerminal
    }

    /// A bar for a command: drawn unless the invocation asked for quiet or JSON output.
    convenience init(label: String, total: Int64?, for invocation: Invocation) {
        self.init(
            label: label,
            total: total,
            console: invocation.console,
            enabled: !invocation.flag("quiet") && !invocation.flag("json")
        )
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
        console.writeToError(
            "\r"
                + Self.render(label: label, completed: completed, total: total, elapsed: now.timeIntervalSince(started))
                + (detail.isEmpty ? "" : "  " + detail)
        )
    }

    /// Draws the final state and ends the line.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard isEnabled else { return }
        let line = Self.render(
            label: label,
            completed: completed,
            total: total,
            elapsed: Date().timeIntervalSince(started)
        )
        console.writeToError("\r" + line + (detail.isEmpty ? "" : "  " + detail) + "\n")
    }

    /// The text of one progress line: `label [#####-----]  50%  1.0 MiB / 2.0 MiB  512.0 KiB/s`.
    static func render(label: String, completed: Int64, total: Int64?, elapsed: TimeInterval, width: Int = 24) -> String
    {
        let rate = elapsed > 0 ? Double(completed) / elapsed : 0
        guard let total, total > 0 else {
            return "\(label)  \(ByteCount.format(completed))  \(ByteCount.format(Int64(rate)))/s"
        }
        let fraction = min(max(Double(completed) / Double(total), 0), 1)
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = String(Int((fraction * 100).rounded(.down))).leftPadded(to: 3)
        return
            "\(label) [\(bar)] \(percent)%  \(ByteCount.format(completed)) / \(ByteCount.format(total))  \(ByteCount.format(Int64(rate)))/s"
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
