package import Foundation

/// What `stat(2)` shows of one path of the mounted view.
package struct NodeAttributes: Sendable, Equatable {
    /// What kind of node it is.
    package enum Kind: Sendable, Equatable {
        case directory
        case file
        case symlink
        /// A FIFO, socket or device, recorded by type only (its mode says which).
        case other
    }

    /// Directory, file, link or other.
    package var kind: Kind
    /// `st_mode`: the type bits and the permissions.
    package var mode: UInt32
    /// `st_size`: a file's bytes, a link target's length, 0 for directories.
    package var size: UInt64
    /// `st_nlink`; 1 for directories, which tells `find` not to count on subdirectory links.
    package var linkCount: UInt64
    /// The owner, as recorded.
    package var uid: UInt32
    /// The group, as recorded.
    package var gid: UInt32
    /// `st_mtim` (and `st_atim`, which a snapshot does not record).
    package var modified: Timestamp
    /// `st_ctim`: the status change time recorded, or the modification time where none was.
    package var changed: Timestamp
    /// The bytes the file occupied when backed up (`st_blocks` × 512): less than its size if sparse.
    package var allocatedBytes: UInt64

    /// Seconds and nanoseconds since 1970.
    package struct Timestamp: Sendable, Equatable {
        /// Whole seconds since 1970.
        package var seconds: Int64
        /// Nanoseconds past them.
        package var nanoseconds: UInt32

        /// A timestamp of `seconds` and `nanoseconds`.
        package init(seconds: Int64, nanoseconds: UInt32 = 0) {
            self.seconds = seconds
            self.nanoseconds = nanoseconds
        }

        /// `date` to the nanosecond.
        package init(_ date: Date) {
            let interval = date.timeIntervalSince1970
            let seconds = interval.rounded(.down)
            self.init(seconds: Int64(seconds), nanoseconds: UInt32(min(999_999_999, (interval - seconds) * 1e9)))
        }
    }

    /// `S_IFDIR`.
    package static let directoryType: UInt32 = 0o040000
    /// `S_IFREG`.
    package static let fileType: UInt32 = 0o100000
    /// `S_IFLNK`.
    package static let symlinkType: UInt32 = 0o120000

    /// A directory the view makes up (the top, `snapshots/`, a name's directory), read-only.
    package static func virtualDirectory(owner: (uid: UInt32, gid: UInt32), time: Timestamp) -> NodeAttributes {
        NodeAttributes(
            kind: .directory,
            mode: directoryType | 0o555,
            size: 0,
            linkCount: 1,
            uid: owner.uid,
            gid: owner.gid,
            modified: time,
            changed: time,
            allocatedBytes: 0
        )
    }
}
