package import Foundation
internal import Glibc

/// What `lstat` says about one path under the backed-up directory.
package struct WalkedPath {
    /// Relative to the backed-up directory; empty for the directory itself.
    package let relativePath: [UInt8]
    /// The path for system calls.
    package let absolutePath: [CChar]
    package let kind: TreeEntry.Kind
    package let status: stat

    package var identity: FileIdentity { FileIdentity(status) }
    package var size: UInt64 { UInt64(max(status.st_size, 0)) }
    package var displayPath: String { EntryPath.display(relativePath) }

    /// A tree entry with this path's metadata (no content, attributes or link target yet).
    package var entry: TreeEntry { TreeEntry(relativePath, status: status, kind: kind) }

    package init(relativePath: [UInt8], absolutePath: [CChar], status: stat) {
        self.relativePath = relativePath
        self.absolutePath = absolutePath
        self.status = status
        switch status.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
    }

    /// `lstat` of a path: the error message if it fails.
    package static func status(of path: [CChar]) -> Result<stat, CofferError> {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return .failure(CofferError(.io, Errno.current.description))
        }
        return .success(status)
    }

    /// `lstat` of a path given as text.
    package static func status(of path: String) -> Result<stat, CofferError> { status(of: Array(path.utf8CString)) }
}

extension TreeEntry {
    /// An entry with a path's metadata as `lstat` or `fstat` gave it.
    package init(_ path: [UInt8], status: stat, kind: Kind) {
        self.init(
            kind: kind,
            path: path,
            mode: UInt32(status.st_mode),
            uid: UInt32(status.st_uid),
            gid: UInt32(status.st_gid),
            modifiedSeconds: Int64(status.st_mtim.tv_sec),
            modifiedNanoseconds: UInt32(status.st_mtim.tv_nsec),
            size: UInt64(max(status.st_size, 0)),
            device: UInt64(status.st_dev),
            inode: UInt64(status.st_ino)
        )
        changedSeconds = Int64(status.st_ctim.tv_sec)
        changedNanoseconds = UInt32(status.st_ctim.tv_nsec)
        linkCount = UInt64(status.st_nlink)
        allocatedBytes = UInt64(max(status.st_blocks, 0)) * 512
    }

    /// Whether a file walked now is, by its metadata, the one this entry recorded: same size,
    /// modification time, status change time, inode and device. The status change time catches
    /// content written with its old modification time put back (`touch -r`, `rsync -t --inplace`,
    /// `cp -p`), as restic checks it; an entry from before version 3, which has none, never matches.
    package func isUnchanged(comparedWith walked: TreeEntry) -> Bool {
        guard kind == .file, walked.kind == .file, let changedSeconds else { return false }
        return size == walked.size && modifiedSeconds == walked.modifiedSeconds
            && modifiedNanoseconds == walked.modifiedNanoseconds && changedSeconds == walked.changedSeconds
            && changedNanoseconds == walked.changedNanoseconds && inode == walked.inode && device == walked.device
    }
}

/// Walks a directory tree depth-first in byte order of names, so the same tree always gives the same
/// sequence. Names are bytes, whatever their encoding. Paths that vanish or cannot be read are
/// reported and skipped, never fatal; directories in `excluded` (the vault's own) are left out, and
/// what the patterns and the limits leave out is told to `leftOut`.
package struct TreeWalker {
    package let root: [UInt8]
    package let excluded: Set<FileIdentity>
    package let report: ([UInt8], String) -> Void
    package let exclude: ([UInt8]) -> Void
    /// The exclude patterns, and what is told of each path they leave out.
    package let rules: PathSelection
    /// Markers, a size limit, one file system.
    package let limits: WalkLimits
    /// The paths under the root to walk (and the directories on the way to them); `nil` for all.
    package let targets: [[UInt8]]?
    package let leftOut: ([UInt8]) -> Void
    /// The root's own components, which patterns match the absolute path with.
    private let rootComponents: [[UInt8]]

    package init(
        root: [UInt8],
        excluded: Set<FileIdentity>,
        rules: PathSelection = .none,
        limits: WalkLimits = .none,
        targets: [[UInt8]]? = nil,
        report: @escaping ([UInt8], String) -> Void,
        exclude: @escaping ([UInt8]) -> Void,
        leftOut: @escaping ([UInt8]) -> Void = { _ in }
    ) {
        self.root = root
        self.excluded = excluded
        self.rules = rules
        self.limits = limits
        self.targets = targets
        self.report = report
        self.exclude = exclude
        self.leftOut = leftOut
        rootComponents = root.split(separator: UInt8(ascii: "/")).map(Array.init)
    }

    /// Visits the root, then everything under it.
    package func walk(_ visit: (WalkedPath) throws(CofferError) -> Void) throws(CofferError) {
        let absolute = EntryPath.absolute(root, [])
        switch WalkedPath.status(of: absolute) {
        case .failure(let error):
            if access(absolute, F_OK) != 0, errno == ENOENT {
                throw CofferError(
                    .param,
                    "\(EntryPath.display(root)) does not exist; give the directory to back up (check the path)"
                )
            }
            throw CofferError(.param, "\(EntryPath.display(root)) cannot be read: \(error.message)")
        case .success(let status):
            let walked = WalkedPath(relativePath: [], absolutePath: absolute, status: status)
            guard walked.kind == .directory else {
                throw CofferError(
                    .param,
                    "\(EntryPath.display(root)) is not a directory; give the directory to back up"
                )
            }
            try visit(walked)
            var pending: [WalkedPath] = []
            try walk(
                relative: [],
                device: status.st_dev,
                insideTarget: targets == nil,
                pending: &pending,
                visit
            )
        }
    }

    /// Walks the directory `relative`. `pending` holds the directories left out but walked into (a
    /// `!` pattern may put something under them back): each is visited just before the first path
    /// under it that is kept, and not at all if none is.
    private func walk(
        relative: [UInt8],
        device: UInt,
        insideTarget: Bool,
        pending: inout [WalkedPath],
        _ visit: (WalkedPath) throws(CofferError) -> Void
    ) throws(CofferError) {
        guard let handle = opendir(EntryPath.absolute(root, relative)) else {
            report(relative, "cannot list: \(Errno.current)")
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
        let marked = !limits.markers.isEmpty && limits.isMarked(EntryPath.joining(root, relative), names: names)
        for name in names {
            let path = EntryPath.joining(relative, name)
            // Outside the paths given: walked only on the way to one of them.
            var inside = insideTarget
            if !inside, let targets {
                inside = targets.contains(path)
                guard inside || targets.contains(where: { EntryPath.isInside($0, path) }) else { continue }
            }
            if marked, !limits.markers.contains(where: { $0.name == name }) {
                leftOut(path)
                continue
            }
            let absolute = EntryPath.absolute(root, path)
            switch WalkedPath.status(of: absolute) {
            case .failure(let error):
                report(path, "vanished or unreadable: \(error.message)")
            case .success(let status):
                let walked = WalkedPath(relativePath: path, absolutePath: absolute, status: status)
                if walked.kind == .directory, excluded.contains(walked.identity) {
                    exclude(path)
                    continue
                }
                if let limit = limits.largerThan, walked.kind == .file, walked.size > limit {
                    leftOut(path)
                    continue
                }
                var walkingExcluded = false
                if !rules.isEmpty {
                    let components = rootComponents + path.split(separator: UInt8(ascii: "/")).map(Array.init)
                    switch rules.decision(for: components, isDirectory: walked.kind == .directory) {
                    case .included: break
                    case .excluded:
                        leftOut(path)
                        continue
                    case .excludedWalkingInto: walkingExcluded = true
                    }
                }
                if walkingExcluded {
                    pending.append(walked)
                    try walk(
                        relative: path,
                        device: device,
                        insideTarget: inside,
                        pending: &pending,
                        visit
                    )
                    // Still pending: nothing under it was kept, so it is left out itself.
                    if pending.last?.relativePath == path {
                        pending.removeLast()
                        leftOut(path)
                    }
                    continue
                }
                for parent in pending { try visit(parent) }
                pending.removeAll()
                try visit(walked)
                // Another file system's directory (a mount point) is recorded, not entered.
                if walked.kind == .directory, !limits.oneFileSystem || walked.status.st_dev == device {
                    try walk(
                        relative: path,
                        device: device,
                        insideTarget: inside,
                        pending: &pending,
                        visit
                    )
                }
            }
        }
    }
}

/// Reads a file for a backup, up to the size it had when opened: a file that grows while it is read
/// (a log, the vault's own `data.mdb`) is recorded as it was, never chased to an end that keeps
/// moving. A read error ends the content early and is remembered, so the backup reports and skips
/// the file instead of failing.
package struct TolerantFileSource: ByteSource {
    package let descriptor: Int32
    private var remaining: UInt64
    private(set) var failure: String?

    package init(descriptor: Int32, size: UInt64) {
        self.descriptor = descriptor
        remaining = size
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        guard failure == nil, remaining > 0 else { return 0 }
        try Interruption.check()
        let wanted = Int(min(UInt64(buffer.count), remaining))
        switch valueOrErrno({ Glibc.read(descriptor, buffer.baseAddress, wanted) }) {
        case .success(let count):
            remaining -= UInt64(count)
            return count
        case .failure(let error):
            failure = error.description
            return 0
        }
    }
}

/// A file opened for a backup, with its status at the moment it was opened.
package struct OpenedFile {
    package let descriptor: Int32
    package let status: stat

    package init(descriptor: Int32, status: stat) {
        self.descriptor = descriptor
        self.status = status
    }
}

/// Opens a file for reading without following a symbolic link swapped in since the walk.
package func openForBackup(_ path: [CChar]) -> Result<OpenedFile, CofferError> {
    let opened = valueOrErrno { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
    guard case .success(let descriptor) = opened else {
        return .failure(CofferError(.io, Errno.current.description))
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
        close(descriptor)
        return .failure(CofferError(.io, "it is no longer a regular file"))
    }
    // O_NONBLOCK only guards the open against FIFOs swapped in; reads of a regular file never block.
    return .success(OpenedFile(descriptor: descriptor, status: status))
}

/// The status of an open file now, to see whether it changed while it was read.
package func currentStatus(_ descriptor: Int32) -> stat? {
    var status = stat()
    return fstat(descriptor, &status) == 0 ? status : nil
}

/// A symbolic link's target, however long (up to the 65,535 bytes an entry holds), as the bytes the
/// kernel holds.
package func readLinkTarget(_ path: [CChar]) -> Result<[UInt8], CofferError> {
    var capacity = 4096
    while true {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let count = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { readlink(path, $0.baseAddress!, capacity) }
        }
        guard count >= 0 else { return .failure(CofferError(.io, Errno.current.description)) }
        if count < capacity {
            buffer.removeLast(capacity - count)
            return .success(buffer)
        }
        guard capacity < 1 << 16 else {
            return .failure(CofferError(.io, "the target is longer than the 65,535 bytes a snapshot records"))
        }
        capacity = 1 << 16
    }
}

package func closeDescriptor(_ descriptor: Int32) { close(descriptor) }
