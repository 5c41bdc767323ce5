public import Foundation
internal import Glibc

extension Vault {
    /// The names of the vault's own files in its directory.
    package static let ownFileNames = ["data.mdb", "lock.mdb", SpaceReserve.fileName]

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
