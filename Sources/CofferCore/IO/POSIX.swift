internal import Glibc

/// An `errno` value, as a POSIX call left it: the one error type of every libc call Coffer makes,
/// in the shape of swift-system's `Errno`.
package struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `errno` code (`ENOENT`, `ENOSPC`, …).
    package let code: Int32

    /// The error `errno` holds now, read at once (any later libc call may change it).
    package static var current: Errno { Errno(code: errno) }

    package init(code: Int32) {
        self.code = code
    }

    /// The C library's text for the code (`strerror`).
    package var description: String { String(cString: strerror(code)) }

    /// Whether the disk (or this user's quota) is full.
    package var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }

    /// A ``CofferError`` saying `what` went wrong, followed by the C library's text: `.diskFull` when
    /// the disk is full, `.io` otherwise.
    package func cofferError(_ action: String) -> CofferError {
        CofferError(isNoSpace ? .diskFull : .io, "\(action): \(description)")
    }

    /// The error for a failed write of a command's output (a file, a device, standard output):
    /// `.diskFull` saying what to do, else `.io` with the C library's text.
    package var outputWriteError: CofferError {
        isNoSpace
            ? CofferError(.diskFull, "the output's disk is full; free some space and try again")
            : cofferError("writing the output failed")
    }
}

/// Runs a libc call that returns -1 (or another negative value) and sets `errno` on failure, again
/// while it fails with `EINTR` (a signal arrived; nothing happened), and returns its result or the
/// `errno` it failed with. The one funnel for libc's failures, as swift-system's `valueOrErrno`.
///
/// ```swift
/// let count = try valueOrErrno { read(descriptor, buffer.baseAddress, buffer.count) }.get()
/// ```
package func valueOrErrno<Value: SignedInteger>(
    retryOnInterrupt: Bool = true,
    _ call: () -> Value
) -> Result<Value, Errno> {
    while true {
        let value = call()
        if value >= 0 { return .success(value) }
        let error = Errno.current
        if retryOnInterrupt, error.code == EINTR { continue }
        return .failure(error)
    }
}

/// Runs a libc call that returns 0 on success and -1 with `errno` on failure (``valueOrErrno(retryOnInterrupt:_:)``).
package func nothingOrErrno(retryOnInterrupt: Bool = true, _ call: () -> Int32) -> Result<Void, Errno> {
    valueOrErrno(retryOnInterrupt: retryOnInterrupt, call).map { _ in () }
}
