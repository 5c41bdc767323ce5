import Foundation
internal import Glibc

/// An input file opened for reading, closed when done.
package struct InputFile: ~Copyable {
    package let descriptor: Int32

    package init(path: String) throws(CofferError) {
        switch valueOrErrno({ open(path, O_RDONLY | O_CLOEXEC) }) {
        case .success(let descriptor):
            self.descriptor = descriptor
        case .failure(let error):
            throw CofferError(error.code == ENOENT ? .param : .io, "cannot open \(path) for reading: \(error)")
        }
    }

    deinit { close(descriptor) }

    /// The file's size now (`fstat`), or `nil` when it has none (a pipe, say).
    package var size: Int? { Self.regularFileSize(descriptor) }

    /// The size of the regular file open as `descriptor` now, or `nil` for anything else.
    package static func regularFileSize(_ descriptor: Int32) -> Int? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }
}

/// An output file written under a temporary name beside its destination and renamed into place only
/// when complete (after `fsync`), so a failed or interrupted read never leaves a partial file under
/// the final name. Removed if it is dropped without ``commit()``; one a killed run left is removed
/// by the next run that writes the same file (``DeadProcessLeftovers``).
package struct OutputFile: ~Copyable {
    package let descriptor: Int32
    private let path: String
    private let temporaryPath: String
    private var isCommitted = false

    package init(path: String) throws(CofferError) {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent
        let prefix = ".\(base).coffer-"
        // What a run that was killed while writing this file left (a SIGKILL runs no clean-up).
        DeadProcessLeftovers.remove(in: directory.isEmpty ? "." : directory, prefix: prefix)
        temporaryPath =
            (directory.isEmpty ? "" : directory + "/") + prefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let temporaryPath = temporaryPath
        switch valueOrErrno({ open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }) {
        case .success(let descriptor):
            self.descriptor = descriptor
        case .failure(let error):
            throw error.cofferError("cannot create a file in \(directory.isEmpty ? "." : directory)")
        }
    }

    /// Flushes the file to disk and moves it to its final name.
    package mutating func commit() throws(CofferError) {
        let (descriptor, temporaryPath, path) = (descriptor, temporaryPath, path)
        if case .failure(let error) = nothingOrErrno({ fsync(descriptor) }) {
            throw error.cofferError("flushing \(path) to disk failed")
        }
        if case .failure(let error) = nothingOrErrno({ rename(temporaryPath, path) }) {
            throw error.cofferError("cannot move the output into place at \(path)")
        }
        isCommitted = true
    }

    deinit {
        close(descriptor)
        if !isCommitted { unlink(temporaryPath) }
    }
}
