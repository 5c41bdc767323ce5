internal import Glibc

/// Paths inside a snapshot's tree: `/`-separated bytes relative to the backed-up directory. Linux
/// names are bytes, not text, so a name that is not UTF-8 (a Latin-1 `r\xe9sum\xe9.doc`) is stored and
/// restored exactly and only shown escaped.
package enum EntryPath {
    /// The path as printable text (``PrintableText``); `.` for the root entry.
    package static func display(_ path: [UInt8]) -> String {
        path.isEmpty ? "." : PrintableText.escaping(path)
    }

    /// `parent/name`, or `name` at the root.
    package static func joining(_ parent: [UInt8], _ name: [UInt8]) -> [UInt8] {
        parent.isEmpty ? name : parent + [UInt8(ascii: "/")] + name
    }

    /// The path of the directory holding `path`: empty (the root) for a name at the root.
    package static func parent(_ path: [UInt8]) -> [UInt8] {
        path.lastIndex(of: UInt8(ascii: "/")).map { Array(path[..<$0]) } ?? []
    }

    /// The last component of `path`.
    package static func name(_ path: [UInt8]) -> [UInt8] {
        path.lastIndex(of: UInt8(ascii: "/")).map { Array(path[($0 + 1)...]) } ?? path
    }

    /// Whether `path` is safe to create under a restore target: relative, no empty, `.` or `..`
    /// component, no NUL.
    package static func isSafe(_ path: [UInt8]) -> Bool {
        guard !path.isEmpty, path.first != UInt8(ascii: "/"), !path.contains(0) else { return false }
        return path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && !$0.elementsEqual([UInt8(ascii: ".")])
                && !$0.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
        }
    }

    /// Whether `path` is `directory` or lies under it.
    package static func isInside(_ path: [UInt8], _ directory: [UInt8]) -> Bool {
        path.count > directory.count && path.starts(with: directory) && path[directory.count] == UInt8(ascii: "/")
    }

    /// `root/path` as a C path for system calls (the bytes, NUL-terminated).
    package static func absolute(_ root: [UInt8], _ path: [UInt8]) -> [CChar] {
        let joined = path.isEmpty ? root : root + [UInt8(ascii: "/")] + path
        return joined.map { CChar(bitPattern: $0) } + [0]
    }
}
