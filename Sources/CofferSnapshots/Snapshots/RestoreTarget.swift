internal import Glibc

/// What a restore finds and changes in its target beside the files it writes: what is at a path
/// already, temporary names, the names in a directory (as bytes), and removal of a tree that is not
/// in the snapshot. Paths are C paths (``EntryPath/absolute(_:_:)``); nothing here follows a symbolic
/// link.
package enum RestoreTarget {
    /// What a path of the target holds now.
    package struct Existing {
        package let kind: FileKind
        package let size: UInt64
        package let modifiedSeconds: Int64
        package let modifiedNanoseconds: Int
        package let identity: FileIdentity

        /// Whether its modification time is before `entry`'s (restic's `--overwrite if-newer` test).
        package func isOlder(than entry: TreeEntry) -> Bool {
            (modifiedSeconds, modifiedNanoseconds) < (entry.modifiedSeconds, Int(entry.modifiedNanoseconds))
        }

        /// Whether it is a regular file of `entry`'s size and modification time, to the nanosecond.
        package func hasSizeAndTime(of entry: TreeEntry) -> Bool {
            kind == .regular && size == entry.size && modifiedSeconds == entry.modifiedSeconds
                && modifiedNanoseconds == Int(entry.modifiedNanoseconds)
        }
    }

    /// What is at `path` (`lstat`), or `nil` if nothing is.
    ///
    /// - Throws: ``CofferError`` when `lstat` fails for another reason than a missing path.
    package static func existing(_ path: [CChar], _ shown: String) throws(CofferError) -> Existing? {
        var status = stat()
        switch nothingOrErrno({ lstat(path, &status) }) {
        case .success:
            return Existing(
                kind: FileKind(mode: status.st_mode),
                size: UInt64(status.st_size),
                modifiedSeconds: Int64(status.st_mtim.tv_sec),
                modifiedNanoseconds: status.st_mtim.tv_nsec,
                identity: FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
            )
        case .failure(let error) where error.code == ENOENT:
            return nil
        case .failure(let error):
            throw error.cofferError("looking at '\(shown)' in the target failed")
        }
    }

    /// The start of every temporary name a restore gives a file, link or FIFO while it makes it:
    /// `.coffer-restore-` ‖ pid ‖ `-` ‖ a random number, in the directory of the final name (short,
    /// whatever the final name's length). Names of a process that is gone are removed by the next
    /// restore into that directory (``DeadProcessLeftovers``).
    package static let temporaryPrefix = ".coffer-restore-"

    /// A fresh temporary name beside `path`.
    package static func temporaryName(beside path: [CChar]) -> [CChar] {
        let bytes = path.dropLast().map { UInt8(bitPattern: $0) }
        let directory = bytes.lastIndex(of: UInt8(ascii: "/")).map { Array(bytes[...$0]) } ?? []
        let name = Array("\(temporaryPrefix)\(getpid())-\(UInt32.random(in: 0...UInt32.max))".utf8)
        return (directory + name).map { CChar(bitPattern: $0) } + [0]
    }

    /// Removes the temporary names a killed restore left in `directory` (an existing directory of
    /// the target).
    package static func removeLeftovers(in directory: [CChar]) {
        let path = String(decoding: directory.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        DeadProcessLeftovers.remove(in: path, prefix: temporaryPrefix)
    }

    /// The names in `directory`, as bytes, without `.` and `..`.
    ///
    /// - Throws: ``CofferError`` when the directory cannot be read.
    package static func names(in directory: [CChar], _ shown: String) throws(CofferError) -> [[UInt8]] {
        guard let stream = opendir(directory) else {
            throw Errno.current.cofferError("reading the directory '\(shown)' of the target failed")
        }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            names.append(name)
        }
        return names
    }

    /// Removes `path` and, for a directory, everything under it, never following a symbolic link;
    /// `removed` is told each path as it goes, deepest first (`relative` is the path under the target).
    /// With `dryRun`, only tells.
    ///
    /// - Throws: ``CofferError`` naming the path that could not be removed.
    package static func removeTree(
        _ path: [CChar],
        relative: [UInt8],
        dryRun: Bool = false,
        removed: (_ relative: [UInt8]) -> Void
    ) throws(CofferError) {
        let shown = EntryPath.display(relative)
        guard let existing = try existing(path, shown) else { return }
        if existing.kind == .directory {
            for name in try names(in: path, shown) {
                let child = EntryPath.joining(relative, name)
                let childPath =
                    path.dropLast() + [CChar(bitPattern: UInt8(ascii: "/"))] + name.map { CChar(bitPattern: $0) } + [0]
                try removeTree(Array(childPath), relative: child, dryRun: dryRun, removed: removed)
            }
            guard dryRun || rmdir(path) == 0 else {
                throw Errno.current.cofferError("removing the directory '\(shown)' failed")
            }
        } else {
            guard dryRun || unlink(path) == 0 else { throw Errno.current.cofferError("removing '\(shown)' failed") }
        }
        removed(relative)
    }
}
