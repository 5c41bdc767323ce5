internal import CFuse3
import Coffer
internal import Glibc

/// The one funnel for libfuse's calls that can fail: each result becomes a typed error naming the
/// call. libfuse prints its own reason to standard error as well (a missing `/dev/fuse`, a mount
/// point in use), which the message points to.
enum FUSECall {
    /// Throws unless `result` is 0.
    static func check(_ result: Int32, _ call: String, _ detail: @autoclosure () -> String) throws(CofferError) {
        guard result != 0 else { return }
        throw CofferError(.io, "\(call) failed: \(detail()) (libfuse's reason, if it gave one, is printed above)")
    }

    /// Unwraps a pointer libfuse returns, or throws naming the call.
    static func check<Pointer>(
        _ pointer: Pointer?,
        _ call: String,
        _ detail: @autoclosure () -> String
    ) throws(CofferError) -> Pointer {
        guard let pointer else {
            throw CofferError(.io, "\(call) failed: \(detail()) (libfuse's reason, if it gave one, is printed above)")
        }
        return pointer
    }

    /// The negative error number an operation returns to the kernel for `error`.
    static func status(_ error: MountError) -> Int32 {
        switch error {
        case .notFound: -ENOENT
        case .notDirectory: -ENOTDIR
        case .isDirectory: -EISDIR
        case .notSymlink: -EINVAL
        case .locked: -EACCES
        case .failed: -EIO
        }
    }
}
