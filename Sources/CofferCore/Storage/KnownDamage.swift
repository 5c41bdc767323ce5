internal import Glibc

/// A note beside `data.mdb` (`damage-found`) that its B-trees were found damaged: by `verify`'s walk,
/// by the walk `export` and `compact` run first, or by LMDB itself stopping on a page that breaks its
/// rules. While the note stands, no write transaction that changed something commits
/// (``Environment``): a write on a damaged tree can spread the damage. Reads go on, so what is intact
/// can still be taken out.
///
/// The note is text: the data file's inode number, a newline, what was found. It applies only to the
/// file it was written for: a `data.mdb` restored from a copy (another inode) is not held back. A
/// `verify` that finds the structure sound removes it.
package enum KnownDamage {
    /// The file's name in the environment's directory.
    package static let fileName = "damage-found"

    /// Thrown by a write that changed something while the note stands.
    package struct Refusal: Error, Sendable, CustomStringConvertible {
        /// What was found, as the note says.
        package let description: String
    }

    /// What the note in `directory` says, if there is one for the `data.mdb` there now.
    package static func read(directory: String) -> String? {
        guard let text = NoteFile.read(directory + "/" + fileName), let newline = text.firstIndex(of: "\n"),
            let inode = UInt64(text[..<newline]), inode == dataFileInode(directory: directory)
        else { return nil }
        return String(text[text.index(after: newline)...])
    }

    /// Writes the note for the `data.mdb` in `directory` (mode 0600), replacing any other. Fails
    /// silently (a read-only directory): the damage is reported to the user either way.
    ///
    /// - Returns: Whether the note was written.
    @discardableResult
    package static func record(_ what: String, directory: String) -> Bool {
        guard let inode = dataFileInode(directory: directory) else { return false }
        let text = String(decoding: Array("\(inode)\n\(what)".utf8.prefix(4000)), as: UTF8.self)
        return NoteFile.write(text, to: directory + "/" + fileName)
    }

    /// Removes the note in `directory`, if any.
    package static func clear(directory: String) { unlink(directory + "/" + fileName) }

    private static func dataFileInode(directory: String) -> UInt64? {
        var status = stat()
        guard stat(directory + "/data.mdb", &status) == 0 else { return nil }
        return UInt64(status.st_ino)
    }
}
