import Foundation
internal import Glibc

/// An input file opened for reading, closed when done.
struct InputFile: ~Copyable {
    let descriptor: Int32

    init(path: String) throws(CofferError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw CofferError(
                code == ENOENT ? .param : .io,
                "cannot open \(path) for reading: \(String(cString: strerror(code)))"
            )
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The file's size now (`fstat`), or `nil` when it has none (a pipe, say).
    var size: Int? { Self.regularFileSize(descriptor) }

    /// The size of the regular file open as `descriptor` now, or `nil` for anything else.
    static func regularFileSize(_ descriptor: Int32) -> Int? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }
}

/// An output file written under a temporary name beside its destination and renamed into place only
/// when complete (after `fsync`), so a failed or interrupted read never leaves a partial file under
/// the final name. Removed if it is dropped without ``commit()``.
struct OutputFile: ~Copyable {
    let descriptor: Int32
    private let path: String
    private let temporaryPath: String
    private var isCommitted = false

    init(path: String) throws(CofferError) {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent
        temporaryPath =
            (directory.isEmpty ? "" : directory + "/")
            + ".\(base).coffer-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CofferError(
                .io,
                "cannot create a file in \(directory.isEmpty ? "." : directory): \(String(cString: strerror(errno)))"
            )
        }
        self.descriptor = descriptor
    }

    /// Flushes the file to disk and moves it to its final name.
    mutating func commit() throws(CofferError) {
        guard fsync(descriptor) == 0 else {
            throw CofferError(.io, "flushing \(path) to disk failed: \(String(cString: strerror(errno)))")
        }
        guard rename(temporaryPath, path) == 0 else {
            throw CofferError(.io, "cannot move the output into place at \(path): \(String(cString: strerror(errno)))")
        }
        isCommitted = true
    }

    deinit {
        close(descriptor)
        if !isCommitted { unlink(temporaryPath) }
    }
}
