internal import Glibc

/// A file of allocated blocks beside `data.mdb` (`space-reserve`, 2 MiB) that is deleted to make room
/// when a write that frees space cannot commit because the disk is full, and made again afterwards.
///
/// A write that fills the disk fails, and undoing it (releasing the chunks a failed `put` or import
/// had stored) or deleting something to make room is itself a write: LMDB copies every page it
/// changes, so it needs a few new pages before it frees any. When the disk is full those pages are
/// not there, and without this file the vault could never shrink again. The file is allocated with
/// `posix_fallocate`, so the blocks are really taken; deleting it gives them back at once.
package struct SpaceReserve: Sendable {
    /// The file's name in the environment's directory.
    package static let fileName = "space-reserve"
    /// How large the file is: room for a few small transactions.
    package static let size = 2 << 20

    package let path: String

    package init(directory: String) {
        path = directory + "/" + Self.fileName
    }

    /// Whether the file is there.
    package var exists: Bool { access(path, F_OK) == 0 }

    /// Makes the file when it is missing, in full or not at all (a partial file is removed). Fails
    /// silently: with too little space there is simply no reserve until there is room again.
    package func make() {
        guard !exists else { return }
        let partial = path + ".new"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let allocated = posix_fallocate(descriptor, 0, off_t(Self.size)) == 0
        close(descriptor)
        if !allocated || rename(partial, path) != 0 { unlink(partial) }
    }

    /// Deletes the file, giving its blocks back to the file system.
    ///
    /// - Returns: Whether there was a file to delete.
    package func release() -> Bool {
        unlink(path) == 0
    }
}
