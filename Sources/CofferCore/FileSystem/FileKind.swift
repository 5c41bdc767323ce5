internal import Glibc

/// What kind of file a path names, from its mode: for refusing anything but a regular file where
/// one belongs (a FIFO where `data.mdb` belongs makes every `open` of it wait forever for a writer).
package enum FileKind: Equatable, Sendable, CustomStringConvertible {
    case regular
    case directory
    case fifo
    case characterDevice
    case blockDevice
    case socket
    case symbolicLink
    case unknown

    /// The kind a `stat` mode (`st_mode`) gives.
    package init(mode: UInt32) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFIFO: self = .fifo
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFSOCK: self = .socket
        case S_IFLNK: self = .symbolicLink
        default: self = .unknown
        }
    }

    /// `a FIFO (named pipe)`, `a directory`, … for messages.
    package var description: String {
        switch self {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .fifo: "a FIFO (named pipe)"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .socket: "a socket"
        case .symbolicLink: "a symbolic link"
        case .unknown: "a file of unknown kind"
        }
    }

    /// What is at `path` when it is neither missing nor a regular file (or a symbolic link to one),
    /// for a message: `a FIFO (named pipe)`, `a symbolic link to a directory`, `a symbolic link to
    /// nothing (No such file or directory)`. `nil` when nothing is there (or `lstat` cannot tell),
    /// or a regular file is. Only `lstat` and `stat` are called: nothing is opened.
    package static func irregularContents(at path: String) -> String? {
        var link = stat()
        guard case .success = nothingOrErrno({ lstat(path, &link) }) else { return nil }
        let own = FileKind(mode: link.st_mode)
        guard own == .symbolicLink else { return own == .regular ? nil : own.description }
        var target = stat()
        if case .failure(let error) = nothingOrErrno({ stat(path, &target) }) {
            return "a symbolic link to nothing (\(error))"
        }
        let kind = FileKind(mode: target.st_mode)
        return kind == .regular ? nil : "a symbolic link to \(kind)"
    }
}
