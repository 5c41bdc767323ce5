internal import Glibc

/// A file of allocated blocks beside `data.mdb` (`space-reserve`) that is deleted to make room when a
/// write that frees space cannot commit because the disk is full, and made again afterwards.
///
/// A write that fills the disk fails, and undoing it (releasing the chunks a failed `put` or import
/// had stored) or deleting something to make room is itself a write: LMDB copies every page it
/// changes, so it needs new pages before it frees any. When the disk is full those pages are not
/// there, and without this file the vault could never shrink again. The file is allocated with
/// `posix_fallocate`, so the blocks are really taken; deleting it gives them back at once.
///
/// Its size follows the vault (``size(treePages:dataPages:pageSize:)``): room for a deletion that
/// copies every branch and leaf page of the data file, up to 2 MiB. A vault of a few megabytes so
/// does not spend half as much again on the reserve.
package struct SpaceReserve: Sendable {
    /// The file's name in the environment's directory.
    package static let fileName = "space-reserve"
    /// The largest the file is made: room for several deletions in a large vault (each forget or
    /// removal is a transaction of its own, which copies the pages it changes).
    package static let largest = 2 << 20
    /// The smallest: room for a deletion in a nearly empty vault.
    package static let smallest = 256 << 10
    /// Room beyond the copied pages: pages the deletion's change-log entry and free-list records
    /// add, and the main table's leaf.
    static let margin = 64 << 10

    package let path: String

    package init(directory: String) {
        path = directory + "/" + Self.fileName
    }

    /// The size for a data file of `dataPages` pages in use, `treePages` of them branch and leaf
    /// pages of its B-trees (every table's, the free list's and the main table's): each tree page
    /// copied once, as a transaction that deletes every record would; 8 bytes of free list for each
    /// page it frees; and ``margin``; in whole pages, between ``smallest`` and ``largest``.
    ///
    /// A deletion never copies an overflow page (a large value's pages are freed, not rewritten),
    /// and on a full disk it rewrites no chunk pack (``Transaction/sparesSpace``), so the tree pages
    /// are what it can copy.
    package static func size(treePages: Int, dataPages: Int, pageSize: Int) -> Int {
        let needed = treePages * pageSize + dataPages * 8 + margin
        let wholePages = (needed + pageSize - 1) / pageSize * pageSize
        return min(max(wholePages, smallest), largest)
    }

    /// Whether the file is there.
    package var exists: Bool { access(path, F_OK) == 0 }

    /// The file's size in bytes, or `nil` when it is not there.
    package var size: Int? {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : nil
    }

    /// Makes the file `size` bytes long when it is missing, smaller, or larger by ``margin`` or more
    /// (so a vault that shrinks by a page does not remake it), in full or not at all: a new file is
    /// allocated beside it and renamed over it, so a file that cannot be made leaves the one there as
    /// it was. Fails silently: with too little space there is simply no reserve, or the old one,
    /// until there is room again.
    package func make(size wanted: Int) {
        if let size, size >= wanted, size < wanted + Self.margin { return }
        let partial = path + ".new"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let allocated = posix_fallocate(descriptor, 0, off_t(wanted)) == 0
        close(descriptor)
        if !allocated || rename(partial, path) != 0 { unlink(partial) }
    }

    /// Deletes the file, giving its blocks back to the file system.
    ///
    /// - Returns: The size of the file deleted, or `nil` when there was none.
    package func release() -> Int? {
        let released = size
        return unlink(path) == 0 ? released ?? 0 : nil
    }
}
