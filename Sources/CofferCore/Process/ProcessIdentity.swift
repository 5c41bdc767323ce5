import Foundation
internal import Glibc

/// A process as the kernel knows it: pid and start time (clock ticks since boot, from
/// `/proc/PID/stat`). Together they survive pid reuse: a new process with an old pid has a later start.
package struct ProcessIdentity: Equatable, Sendable {
    package let pid: UInt32
    package let startTime: UInt64

    package init(pid: UInt32, startTime: UInt64) {
        self.pid = pid
        self.startTime = startTime
    }

    /// This process.
    package static let current: ProcessIdentity = {
        let pid = UInt32(getpid())
        return ProcessIdentity(pid: pid, startTime: startTime(of: pid) ?? 0)
    }()

    /// Whether this process is still running (the pid exists and started at the same time).
    package var isAlive: Bool { Self.startTime(of: pid) == startTime }

    /// The start time of `pid`, or `nil` if no such process exists.
    package static func startTime(of pid: UInt32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, so start time (field 22) is the 20th field here.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }
}
