internal import Glibc

/// A small text file Coffer keeps beside `data.mdb` to note something about it (``KnownDamage``,
/// ``CheckedTrees``): read and written whole, never through a symbolic link or by waiting on a FIFO
/// put in its place, mode 0600, not flushed. Both directions fail silently: a note that is missing or
/// torn is read as no note, which each kind of note takes as the safe answer.
package enum NoteFile {
    /// The first `limit` bytes of the note at `path`, decoded as UTF-8; `nil` when there is none.
    package static func read(_ path: String, limit: Int = 4096) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return String(decoding: DataFileCheck.read(descriptor, at: 0, count: limit), as: UTF8.self)
    }

    /// Writes `text` over the start of the note at `path`, in place, padded with newlines to
    /// `size` bytes (a reader takes the first line): for a note rewritten at every commit. Replacing
    /// the file's contents instead (``write(_:to:)``, truncating) costs a commit's flush 2 to 4 ms on
    /// ext4, which writes a truncated and rewritten file's data with the journal (`auto_da_alloc`);
    /// an overwrite of blocks already allocated waits for nothing.
    ///
    /// - Returns: Whether all of it was written.
    @discardableResult
    package static func overwrite(_ text: String, paddedTo size: Int, at path: String) -> Bool {
        var bytes = Array(text.utf8.prefix(size))
        bytes += [UInt8](repeating: UInt8(ascii: "\n"), count: size - bytes.count)
        // A plain write from the start of the freshly opened file, as `pwrite` at 0 would do; it
        // leaves the count of `pwrite` calls to LMDB's page writes, where the fault-injection tests
        // aim theirs (a note that fails to be written is harmless, and silent by design).
        return write(bytes, to: path, flags: 0)
    }

    /// Writes `text` as the note at `path`, replacing any other.
    ///
    /// - Returns: Whether all of it was written.
    @discardableResult
    package static func write(_ text: String, to path: String) -> Bool {
        write(Array(text.utf8), to: path, flags: O_TRUNC)
    }

    private static func write(_ bytes: [UInt8], to path: String, flags: Int32) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | flags, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { raw in
            valueOrErrno { Glibc.write(descriptor, raw.baseAddress, raw.count) }
        }
        if case .success(let count) = written { return count == bytes.count }
        return false
    }
}
