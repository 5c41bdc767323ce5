import Foundation
internal import Glibc

/// What a Coffer process that was killed left beside its work: a temporary file named `.F.coffer-`
/// ‖ pid ‖ `-` ‖ a random number (``OutputFile``), a staging directory of a vault creation. The next
/// run that works there removes them, once the process that made them is gone.
package enum DeadProcessLeftovers {
    /// Removes the entries of `directory` named exactly `prefix` ‖ pid ‖ `-` ‖ digits that this user
    /// owns, that are a regular file or a directory (never a symbolic link), and whose process no
    /// longer exists (`kill(pid, 0)` fails with `ESRCH`). Entries of a living process, this one's,
    /// another user's, or any other name are left alone. Best effort: what cannot be removed stays.
    ///
    /// The pid is this machine's: a process on another machine sharing the directory (NFS), or in
    /// another pid namespace, could own an entry whose pid is free here. Coffer makes these entries
    /// only in directories its user chose, for its own writes, so that is accepted.
    ///
    /// - Returns: The names removed.
    @discardableResult
    package static func remove(in directory: String, prefix: String) -> [String] {
        let files = FileManager.default
        var removed: [String] = []
        for name in (try? files.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = processID(in: name.dropFirst(prefix.count)), pid != getpid(), isGone(pid) else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            var status = stat()
            guard case .success = nothingOrErrno({ lstat(path, &status) }), status.st_uid == geteuid() else { continue }
            switch FileKind(mode: status.st_mode) {
            case .regular:
                guard case .success = nothingOrErrno({ unlink(path) }) else { continue }
            case .directory:
                guard (try? files.removeItem(atPath: path)) != nil else { continue }
            default:
                continue
            }
            removed.append(name)
        }
        return removed
    }

    /// The pid in `pid-digits`, or `nil` when the text is not exactly that.
    private static func processID(in rest: Substring) -> Int32? {
        let parts = rest.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let pid = Int32(parts[0]), pid > 0
        else { return nil }
        return pid
    }

    /// Whether no process `pid` exists.
    private static func isGone(_ pid: Int32) -> Bool {
        if case .failure(let error) = nothingOrErrno({ kill(pid, 0) }) { return error.code == ESRCH }
        return false
    }
}
