internal import Glibc

/// A note beside `data.mdb` (`trees-checked`) that the B-trees of the state it names are sound: they
/// were walked by Coffer's checked reader (``DataFileCheck/walk(snapshotID:)``) and found sound, or
/// written since only by Coffer's own commits on top of such a state. It names the data file as
/// `stat` saw it then (device, inode, size, status-change time) and the committed transaction.
///
/// Every write to the file through the file system changes its status-change time (`st_ctime`, which
/// no program can set back), a file restored or copied from elsewhere is another inode, and a commit
/// by anything but this Coffer moves the transaction on: in each case the note no longer matches the
/// file, and the next write walks the trees again before it changes anything
/// (``Environment``). What the note cannot see is damage that reaches the disk without a write
/// through the file system (a failing drive), or a write within the same clock tick as a Coffer
/// commit's last one (the kernel keeps status-change times to a tick, a few milliseconds); `verify`
/// walks every tree whatever the note says.
///
/// The file is one line of text: `coffer trees-checked 1`, then the device, inode, size, status-change
/// time (seconds and nanoseconds) and transaction id, in decimal, separated by spaces; newlines pad it
/// to 160 bytes. Anything else (a torn write, a note from an older format) simply does not match, and
/// the trees are walked.
package struct CheckedTrees: Sendable, Equatable {
    /// The file's name in the environment's directory.
    package static let fileName = "trees-checked"
    private static let prefix = "coffer trees-checked 1"

    /// The data file's device.
    package let device: UInt64
    /// Its inode number.
    package let inode: UInt64
    /// Its size in bytes.
    package let size: UInt64
    /// Its status-change time, whole seconds.
    package let changeSeconds: Int64
    /// Its status-change time, nanoseconds past ``changeSeconds``.
    package let changeNanoseconds: Int64
    /// The committed transaction whose trees are sound.
    package let transactionID: UInt64

    /// The `data.mdb` in `directory` as it is now, at committed transaction `transactionID`; `nil`
    /// when it cannot be read.
    package init?(directory: String, transactionID: UInt64) {
        var status = stat()
        guard stat(directory + "/data.mdb", &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = UInt64(max(status.st_size, 0))
        changeSeconds = Int64(status.st_ctim.tv_sec)
        changeNanoseconds = Int64(status.st_ctim.tv_nsec)
        self.transactionID = transactionID
    }

    private init?(line: Substring) {
        guard line.hasPrefix(Self.prefix + " ") else { return nil }
        let fields = line.dropFirst(Self.prefix.count + 1).split(separator: " ")
        guard fields.count == 6, let device = UInt64(fields[0]), let inode = UInt64(fields[1]),
            let size = UInt64(fields[2]), let seconds = Int64(fields[3]), let nanoseconds = Int64(fields[4]),
            let transactionID = UInt64(fields[5])
        else { return nil }
        (self.device, self.inode, self.size) = (device, inode, size)
        (changeSeconds, changeNanoseconds, self.transactionID) = (seconds, nanoseconds, transactionID)
    }

    /// The note in `directory`, if there is one that reads whole.
    package static func read(directory: String) -> CheckedTrees? {
        guard let text = NoteFile.read(directory + "/" + fileName, limit: 256),
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).first
        else { return nil }
        return CheckedTrees(line: line)
    }

    /// Whether the note in `directory` vouches for the `data.mdb` there at committed transaction
    /// `transactionID`: it names that very file, unchanged since, at that transaction.
    package static func vouches(directory: String, transactionID: UInt64) -> Bool {
        guard let now = CheckedTrees(directory: directory, transactionID: transactionID) else { return false }
        return read(directory: directory) == now
    }

    /// Writes the note into `directory` (mode 0600), over any other, in place (padded with newlines
    /// to 160 bytes). Not flushed, and fails silently: a note that is lost or torn only makes the next
    /// write walk the trees.
    package func write(directory: String) {
        NoteFile.overwrite(
            "\(Self.prefix) \(device) \(inode) \(size) \(changeSeconds) \(changeNanoseconds) \(transactionID)\n",
            paddedTo: Self.fileSize,
            at: directory + "/" + Self.fileName
        )
    }

    /// The note's size: its line padded with newlines, so that each commit overwrites it in place.
    private static let fileSize = 160

    /// Removes the note in `directory`, if any.
    package static func clear(directory: String) { unlink(directory + "/" + fileName) }
}
