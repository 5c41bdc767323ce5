/// What a walk leaves out besides patterns and the vault's own directory: restic's
/// `--exclude-caches`, `--exclude-if-present`, `--exclude-larger-than` and `--one-file-system`.
package struct WalkLimits: Sendable, Equatable {
    /// A file whose presence marks its directory: everything else in that directory is left out
    /// (the marker itself and the directory are kept, as restic keeps them).
    package struct Marker: Sendable, Equatable {
        /// The marker's file name.
        package let name: [UInt8]
        /// The bytes it must begin with, or `nil` for any content.
        package let header: [UInt8]?
    }

    /// The marker files.
    package var markers: [Marker] = []
    /// Regular files larger than this many bytes are left out.
    package var largerThan: UInt64?
    /// Directories on another file system than the backed-up directory's are recorded but not entered
    /// (mount points appear as empty directories).
    package var oneFileSystem = false

    /// No limits.
    package static let none = WalkLimits()

    /// What the Cache Directory Tagging Specification's `CACHEDIR.TAG` begins with.
    package static let cacheDirectoryTag = Marker(
        name: Array("CACHEDIR.TAG".utf8),
        header: Array("Signature: 8a477f597d28d172789f06886806bc55".utf8)
    )

    /// Whether the directory at `directory` (absolute) is marked, given its names.
    func isMarked(_ directory: [UInt8], names: [[UInt8]]) -> Bool {
        markers.contains { marker in
            guard names.contains(marker.name) else { return false }
            guard let header = marker.header else { return true }
            return Self.file(EntryPath.absolute(directory, marker.name), beginsWith: header)
        }
    }

    /// Whether the file at `path` begins with `header`.
    private static func file(_ path: [CChar], beginsWith header: [UInt8]) -> Bool {
        guard case .success(let opened) = openForBackup(path) else { return false }
        defer { closeDescriptor(opened.descriptor) }
        var buffer = [UInt8](repeating: 0, count: header.count)
        var source = TolerantFileSource(descriptor: opened.descriptor, size: UInt64(header.count))
        var filled = 0
        while filled < header.count {
            let count = buffer.withUnsafeMutableBytes { raw in
                (try? source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))) ?? 0
            }
            guard count > 0 else { return false }
            filled += count
        }
        return buffer == header
    }
}
