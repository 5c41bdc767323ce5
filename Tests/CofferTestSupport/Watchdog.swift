public import Foundation
import Glibc

/// This test process's watchdog (`Tools/watchdog guard`): a process in a session of its own that,
/// when this process ends however it ends (normally, by a failed `#require`, Ctrl-C, SIGTERM or
/// SIGKILL), stops every child process and unmounts every mount point recorded here. Records go to
/// its ledger, a directory in `COFFER_RUN_DIR` when the run has one (`Tools/test` sets it and checks
/// at the end that nothing recorded is left), else in the temporary directory. The watchdog records
/// this process too, so that stopping the run (`Tools/watchdog stop`, as an interrupted `Tools/test`
/// does) ends it even when `swift test` was killed without ending it. The S3 servers have watchdogs
/// of their own (``SeaweedFS``, `Tools/s3-servers`).
///
/// Started on first use. When it cannot start (no `python3`), nothing is recorded and the reason is
/// printed once: the tests still run, without the guard.
public enum Watchdog {
    /// A record in the ledger: what the watchdog stops if this process ends before ``release()``.
    public struct Record: Sendable {
        let file: URL

        /// Removes the record: what it named has ended, or was stopped, by the test itself.
        public func release() { unlink(file.path) }
    }

    /// This process as `Tools/watchdog` and `Tools/s3-servers` take an owner: `PID:START`, with its
    /// start time (`/proc/PID/stat` field 22), so a process id reused after this process ends is
    /// never taken for it.
    public static var owner: String { "\(getpid()):\(startTime(of: getpid()) ?? 0)" }

    /// `COFFER_RUN_DIR` when the run has one, for the scripts a test starts (their environment is
    /// otherwise minimal): what they start is recorded there too.
    public static var runEnvironment: [String: String] {
        ProcessInfo.processInfo.environment["COFFER_RUN_DIR"].map { ["COFFER_RUN_DIR": $0] } ?? [:]
    }

    /// Records `process`, just started by Foundation, which makes each child the leader of a process
    /// group of its own: the watchdog stops that whole group (SIGTERM, then SIGKILL after a grace
    /// period) if this process ends while it runs.
    ///
    /// - Returns: The record, to ``Record/release()`` once the process has ended; nil if the process
    ///   has ended already or there is no watchdog.
    @discardableResult
    public static func guardProcess(_ process: Process) -> Record? {
        let pid = process.processIdentifier
        guard let ledger, let start = startTime(of: pid) else { return nil }
        return write("process \(pid) \(start) group", named: "process-\(pid)-\(start)", in: ledger)
    }

    /// Records `path` as a mount point for the watchdog to unmount (lazily when busy) if it is still
    /// mounted when this process ends. Record it before mounting, so no moment is left unguarded.
    ///
    /// - Returns: The record, to ``Record/release()`` once unmounted; nil if there is no watchdog.
    @discardableResult
    public static func guardMount(_ path: String) -> Record? {
        guard let ledger else { return nil }
        return write("mount \(path)", named: "mount-\(UUID().uuidString)", in: ledger)
    }

    /// The start time of process `pid` in clock ticks since boot (`/proc/PID/stat` field 22), or nil
    /// if there is no such process.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        // The command name (field 2) is in parentheses and may hold spaces and ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// The ledger of this process's watchdog, the watchdog started on first use.
    private static let ledger: URL? = {
        let base =
            ProcessInfo.processInfo.environment["COFFER_RUN_DIR"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory
        let ledger = base.appendingPathComponent("tests-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: ledger, withIntermediateDirectories: true)
            let process = Process()
            process.executableURL = Products.tool("watchdog")
            process.arguments = ["guard", owner, ledger.path]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw ProductError(description: "it exited with status \(process.terminationStatus)")
            }
            return ledger
        } catch {
            FileHandle.standardError.write(
                Data("warning: Tools/watchdog guard did not start (\(error)); children are not guarded\n".utf8)
            )
            return nil
        }
    }()

    /// Writes one record under `name`: a hidden file first, renamed, so the watchdog never reads half.
    private static func write(_ line: String, named name: String, in ledger: URL) -> Record? {
        let file = ledger.appendingPathComponent("\(name).record")
        let hidden = ledger.appendingPathComponent(".\(name)")
        guard FileManager.default.createFile(atPath: hidden.path, contents: Data((line + "\n").utf8)),
            rename(hidden.path, file.path) == 0
        else { return nil }
        return Record(file: file)
    }
}
