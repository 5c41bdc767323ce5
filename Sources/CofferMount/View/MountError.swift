/// Why an operation on the mounted view failed, as the file system layer reports it to the kernel.
package enum MountError: Error, Equatable, Sendable {
    /// No such path (or one a locked vault does not show).
    case notFound
    /// A path component is not a directory.
    case notDirectory
    /// A directory was opened as a file.
    case isDirectory
    /// Not a symbolic link.
    case notSymlink
    /// The data's keys are not in memory: the vault locked.
    case locked
    /// The vault could not be read (damage, storage); the message names what, and is reported.
    case failed(String)
}
