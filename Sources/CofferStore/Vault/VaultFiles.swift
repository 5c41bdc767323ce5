public import Foundation
internal import Glibc

extension Vault {
    /// The names of the vault's own files in its directory.
    package static let ownFileNames = [
        "data.mdb", "lock.mdb", SpaceReserve.fileName, CommitRecord.fileName, KnownDamage.fileName,
        CheckedTrees.fileName,
    ]

    /// Refuses a vault directory where `data.mdb` or `lock.mdb` is anything but a regular file (or a
    /// symbolic link to one): a FIFO, a directory, a device, a socket, a link to one or to nothing.
    /// LMDB would wait forever opening a FIFO, and fail on the others with a message that names
    /// neither the file nor what is wrong. Runs before anything opens either file; only `lstat` and
    /// `stat` look at them. A missing file is left to the open, which says what is missing.
    ///
    /// - Throws: ``CofferError`` `.notAVault` naming the file and what is there instead.
    package static func refuseIrregularFiles(in directory: URL) throws(CofferError) {
        for name in ["data.mdb", "lock.mdb"] {
            let path = directory.appendingPathComponent(name).path
            guard let found = FileKind.irregularContents(at: path) else { continue }
            let remedy =
                name == "lock.mdb"
                ? "lock.mdb holds only the table of readers: with no process using the vault, remove \(path) and it is made again"
                : "the vault's data lives in that file: put the vault's real data.mdb there (restore it from a copy of the vault)"
            throw CofferError(
                .notAVault,
                "\(path) is \(found), not a regular file, so \(directory.path) cannot be opened as a vault; \(remedy)"
            )
        }
    }

    /// The identity (device and inode) of the vault's directory, which a backup leaves out.
    package func ownDirectoryIdentity() throws(CofferError) -> FileIdentity {
        guard let identity = FileIdentity(path: directory.path) else {
            throw CofferError(
                .io,
                "cannot read the vault directory \(directory.path): \(Errno.current)"
            )
        }
        return identity
    }

    /// The identities of the vault's own files, `data.mdb`, `lock.mdb` and `space-reserve`.
    package func ownFileIdentities() -> Set<FileIdentity> {
        Set(Self.ownFileNames.compactMap { FileIdentity(path: directory.appendingPathComponent($0).path) })
    }

    /// Whether `url` is one of the vault's own files (`data.mdb`, `lock.mdb`, `space-reserve`, by device and inode,
    /// whatever path reaches them), or would replace one: reading one into the vault never ends (the
    /// file grows with every chunk written), and writing onto one destroys the vault.
    public func isOwnFile(_ url: URL) -> Bool {
        let path = url.standardizedFileURL.path
        if let target = FileIdentity(path: path) { return ownFileIdentities().contains(target) }
        // Not there yet: a file created there is one of the vault's only if its directory is the
        // vault's and its name one of the vault's files.
        guard let parent = FileIdentity(path: (path as NSString).deletingLastPathComponent),
            parent == (try? ownDirectoryIdentity())
        else { return false }
        return Self.ownFileNames.contains((path as NSString).lastPathComponent)
    }

    /// Refuses `url` with `.param` when it is one of the vault's own files (``isOwnFile(_:)``).
    package func refuseOwnFile(_ url: URL, reading: Bool) throws(CofferError) {
        guard isOwnFile(url) else { return }
        throw Self.ownFileError(url.path, reading: reading)
    }

    /// Refuses an open descriptor with `.param` when it is one of the vault's own files.
    package func refuseOwnFile(descriptor: Int32, reading: Bool) throws(CofferError) {
        guard let identity = FileIdentity(descriptor: descriptor), ownFileIdentities().contains(identity) else {
            return
        }
        throw Self.ownFileError("the file given", reading: reading)
    }

    private static func ownFileError(_ what: String, reading: Bool) -> CofferError {
        CofferError(
            .param,
            reading
                ? "\(what) is the vault's own file; reading it into the vault would never end (it grows with every write); choose another file"
                : "\(what) is the vault's own file; writing to it would destroy the vault; choose another file"
        )
    }
}
