public import Foundation
internal import Glibc

extension Vault {
    /// The identity (device and inode) of the vault's directory, which a backup leaves out.
    func ownDirectoryIdentity() throws(CofferError) -> FileIdentity {
        var status = stat()
        guard stat(directory.path, &status) == 0 else {
            throw CofferError(
                .io,
                "cannot read the vault directory \(directory.path): \(String(cString: strerror(errno)))"
            )
        }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// The identities of the vault's own files, `data.mdb` and `lock.mdb`.
    func ownFileIdentities() -> Set<FileIdentity> {
        var identities: Set<FileIdentity> = []
        for name in ["data.mdb", "lock.mdb"] {
            var own = stat()
            if stat(directory.appendingPathComponent(name).path, &own) == 0 {
                identities.insert(FileIdentity(device: UInt64(own.st_dev), inode: UInt64(own.st_ino)))
            }
        }
        return identities
    }

    /// Whether `url` is one of the vault's own files (`data.mdb`, `lock.mdb`, by device and inode,
    /// whatever path reaches them), or would replace one: reading one into the vault never ends (the
    /// file grows with every chunk written), and writing onto one destroys the vault.
    public func isOwnFile(_ url: URL) -> Bool {
        var target = stat()
        let path = url.standardizedFileURL.path
        if stat(path, &target) == 0 {
            return ownFileIdentities().contains(
                FileIdentity(device: UInt64(target.st_dev), inode: UInt64(target.st_ino))
            )
        }
        // Not there yet: a file created there is one of the vault's only if its directory is the
        // vault's and its name one of the vault's files.
        var parent = stat()
        guard stat((path as NSString).deletingLastPathComponent, &parent) == 0,
            let own = try? ownDirectoryIdentity(),
            own == FileIdentity(device: UInt64(parent.st_dev), inode: UInt64(parent.st_ino))
        else { return false }
        return ["data.mdb", "lock.mdb"].contains((path as NSString).lastPathComponent)
    }

    /// Refuses `url` with `.param` when it is one of the vault's own files (``isOwnFile(_:)``).
    func refuseOwnFile(_ url: URL, reading: Bool) throws(CofferError) {
        guard isOwnFile(url) else { return }
        throw Self.ownFileError(url.path, reading: reading)
    }

    /// Refuses an open descriptor with `.param` when it is one of the vault's own files.
    func refuseOwnFile(descriptor: Int32, reading: Bool) throws(CofferError) {
        var status = stat()
        guard fstat(descriptor, &status) == 0,
            ownFileIdentities().contains(FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
        else { return }
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
