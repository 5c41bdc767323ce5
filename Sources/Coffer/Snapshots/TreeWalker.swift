import Foundation
internal import Glibc

/// What `lstat` says about one path under the backed-up directory.
struct WalkedPath {
    let relativePath: String
    let absolutePath: String
    let kind: TreeEntry.Kind
    let mode: UInt32
    let uid: UInt32
    let gid: UInt32
    let modifiedSeconds: Int64
    let modifiedNanoseconds: UInt32
    let size: UInt64
    let device: UInt64
    let inode: UInt64

    /// A tree entry with this path's metadata (no content yet).
    var entry: TreeEntry {
        TreeEntry(
            kind: kind,
            path: relativePath,
            mode: mode,
            uid: uid,
            gid: gid,
            modifiedSeconds: modifiedSeconds,
            modifiedNanoseconds: modifiedNanoseconds,
            size: size,
            device: device,
            inode: inode
        )
    }

    init(relativePath: String, absolutePath: String, status: stat) {
        self.relativePath = relativePath
        self.absolutePath = absolutePath
        switch status.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
        mode = UInt32(status.st_mode)
        uid = UInt32(status.st_uid)
        gid = UInt32(status.st_gid)
        modifiedSeconds = Int64(status.st_mtim.tv_sec)
        modifiedNanoseconds = UInt32(status.st_mtim.tv_nsec)
        size = UInt64(max(status.st_size, 0))
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// `lstat` of a path: the error message if it fails.
    static func status(of path: String) -> Result<stat, CofferError> {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return .failure(CofferError(.io, String(cString: strerror(errno))))
        }
        return .success(status)
    }
}

/// Walks a directory tree depth-first in byte order of names, so the same tree always gives the same
/// sequence. Paths that vanish or cannot be read are reported and skipped, never fatal.
struct TreeWalker {
    let root: String
    let report: (String, String) -> Void

    func walk(_ visit: (WalkedPath) throws(CofferError) -> Void) throws(CofferError) {
        try walk(relative: "", visit)
    }

    private func walk(relative: String, _ visit: (WalkedPath) throws(CofferError) -> Void) throws(CofferError) {
        let directory = relative.isEmpty ? root : root + "/" + relative
        guard let handle = opendir(directory) else {
            report(relative.isEmpty ? "." : relative, "cannot list: \(String(cString: strerror(errno)))")
            return
        }
        var names: [[UInt8]] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            names.append(name)
        }
        closedir(handle)
        names.sort { $0.lexicographicallyPrecedes($1) }
        for bytes in names {
            guard let name = String(validating: bytes, as: UTF8.self) else {
                report(relative.isEmpty ? "?" : relative + "/?", "a name that is not UTF-8 was skipped")
                continue
            }
            let path = relative.isEmpty ? name : relative + "/" + name
            let absolute = root + "/" + path
            switch WalkedPath.status(of: absolute) {
            case .failure(let error):
                report(path, "vanished or unreadable: \(error.message)")
            case .success(let status):
                let walked = WalkedPath(relativePath: path, absolutePath: absolute, status: status)
                try visit(walked)
                if walked.kind == .directory { try walk(relative: path, visit) }
            }
        }
    }
}

/// Reads a file for a backup; a read error ends the content early and is remembered, so the backup
/// reports and skips the file instead of failing.
struct TolerantFileSource: ByteSource {
    let descriptor: Int32
    private(set) var failure: String?

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        guard failure == nil else { return 0 }
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            failure = String(cString: strerror(errno))
            return 0
        }
    }
}

/// Opens a file for reading without following a symbolic link swapped in since the walk.
func openForBackup(_ path: String) -> Result<Int32, CofferError> {
    let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
    guard descriptor >= 0 else { return .failure(CofferError(.io, String(cString: strerror(errno)))) }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
        close(descriptor)
        return .failure(CofferError(.io, "it is no longer a regular file"))
    }
    // O_NONBLOCK only guards the open against FIFOs swapped in; reads of a regular file never block.
    return .success(descriptor)
}

func closeDescriptor(_ descriptor: Int32) { close(descriptor) }
