import Foundation
internal import Glibc

/// The output of a read to a file the user named (`get NAME FILE`, an RNCryptor export, a bundle's
/// `export --out`), chosen by what is at the path now:
///
/// - nothing, or a regular file: a ``WriteBehindFile`` replaces it only once everything is written and
///   flushed. Through a symbolic link, the link's target is replaced and the link kept, as `cp` does;
/// - a device, FIFO or socket (`/dev/null`, a named pipe, a block device taking a disk image):
///   written in place as the read goes, as `cp` or a shell's `>` would (a read that fails midway
///   leaves what it wrote there, every chunk of it authenticated first). Replacing it by a regular
///   file, the rule for files, had turned `/dev/null` into a 300 MB file for root;
/// - one of this process's descriptors by name (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
///   `/proc/self/fd/N`): written through that descriptor, at its offset, whatever it is open on (a
///   shell's `>>` appends as it asked);
/// - a directory: refused before anything is read.
package final class FileOutput: ByteSink {
    private enum Target {
        case replaced(WriteBehindFile)
        case inPlace(InPlaceFile)
    }

    private let target: Target

    /// Prepares the output at `path`.
    ///
    /// - Throws: ``CofferError`` `.param` when `path` is a directory, or `.io` when the file cannot
    ///   be created or opened, or what is at `path` cannot be examined (a loop of links, say).
    package init(path: String) throws(CofferError) {
        if let descriptor = Self.descriptorNamed(by: path) {
            target = .inPlace(try InPlaceFile(duplicating: descriptor, path: path))
            return
        }
        var status = stat()
        switch nothingOrErrno({ stat(path, &status) }) {
        case .failure(let error) where error.code == ENOENT:
            // Nothing there (or a link to nothing, which the new file replaces): a new file.
            target = .replaced(try WriteBehindFile(path: path))
            return
        case .failure(let error):
            throw error.cofferError("cannot write to \(path)")
        case .success:
            break
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            target = .replaced(try WriteBehindFile(path: Self.resolvingLinks(path)))
        case S_IFDIR:
            throw CofferError(.param, "\(path) is a directory; name a file to write (a new one, or one to replace)")
        default:
            target = .inPlace(try InPlaceFile(opening: path))
        }
    }

    /// The descriptor `path` names when it is one of the process's own: `/dev/stdout` (1),
    /// `/dev/stderr` (2), `/dev/fd/N` or `/proc/self/fd/N`.
    static func descriptorNamed(by path: String) -> Int32? {
        switch path {
        case "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default:
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
                return Int32(path.dropFirst(prefix.count))
            }
            return nil
        }
    }

    /// Takes the next bytes.
    ///
    /// - Throws: ``CofferError`` `.diskFull` or `.io` when a write fails, `.userCanceled` when a stop
    ///   was requested.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        switch target {
        case .replaced(let file): try file.write(bytes)
        case .inPlace(let file): try file.write(bytes)
        }
    }

    /// Finishes the output: a file is flushed and moved into place, a block device flushed.
    ///
    /// - Throws: ``CofferError`` when a write, the flush or the rename fails.
    package func commit() throws(CofferError) {
        switch target {
        case .replaced(let file): try file.commit()
        case .inPlace(let file): try file.commit()
        }
    }

    /// `path` with its symbolic links resolved, or `path` itself when that fails.
    private static func resolvingLinks(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// A device, FIFO, socket or descriptor written where it is, through a descriptor of its own, closed
/// when done.
private final class InPlaceFile {
    private let descriptor: Int32
    private var sink: FileDescriptorSink

    /// Opens what is at `path` (a device, FIFO or socket) for writing.
    init(opening path: String) throws(CofferError) {
        switch valueOrErrno({ open(path, O_WRONLY | O_CLOEXEC) }) {
        case .success(let descriptor):
            self.descriptor = descriptor
        case .failure(let error):
            throw error.cofferError("cannot open \(path) for writing")
        }
        sink = FileDescriptorSink(descriptor: descriptor)
    }

    /// Writes through a duplicate of `descriptor`, sharing its offset.
    init(duplicating source: Int32, path: String) throws(CofferError) {
        switch valueOrErrno({ fcntl(source, F_DUPFD_CLOEXEC, 3) }) {
        case .success(let descriptor):
            self.descriptor = descriptor
        case .failure(let error):
            throw error.cofferError("cannot write to \(path) (descriptor \(source))")
        }
        sink = FileDescriptorSink(descriptor: descriptor)
    }

    deinit { close(descriptor) }

    func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        try sink.write(bytes)
    }

    /// Flushes a regular file or block device to disk; a character device, FIFO or socket has
    /// nothing to flush.
    func commit() throws(CofferError) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFBLK else { return }
        let descriptor = descriptor
        if case .failure(let error) = nothingOrErrno({ fsync(descriptor) }) {
            throw error.cofferError("flushing the output to disk failed")
        }
    }
}
