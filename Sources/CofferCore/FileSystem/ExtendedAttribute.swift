internal import CLinux
internal import Glibc

/// One extended attribute of a path: `user.*` metadata, POSIX ACLs (`system.posix_acl_access`,
/// `system.posix_acl_default`), file capabilities (`security.capability`), SELinux labels. Names and
/// values are bytes, stored and restored as the kernel gives them.
package struct ExtendedAttribute: Sendable, Equatable {
    package let name: [UInt8]
    package let value: [UInt8]

    package init(name: [UInt8], value: [UInt8]) {
        self.name = name
        self.value = value
    }

    /// The name as text, for messages.
    package var displayName: String { PrintableText.escaping(name) }

    /// Every attribute of `path` (not following a symbolic link), in name order; an empty list where
    /// the file system has none or does not support them.
    ///
    /// - Returns: The attributes, or why they could not be read.
    package static func list(of path: [CChar]) -> Result<[ExtendedAttribute], CofferError> {
        var names: [UInt8] = []
        while true {
            let size: Int
            switch valueOrErrno({ llistxattr(path, nil, 0) }) {
            case .success(let listed): size = listed
            case .failure(let error) where error.code == ENOTSUP || error.code == ENOSYS: return .success([])
            case .failure(let error): return .failure(CofferError(.io, error.description))
            }
            if size == 0 { return .success([]) }
            names = [UInt8](repeating: 0, count: size)
            let read = names.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { names in
                    valueOrErrno { llistxattr(path, names.baseAddress, size) }
                }
            }
            switch read {
            case .success(let count):
                names.removeLast(names.count - count)
            case .failure(let error) where error.code == ERANGE:
                continue  // the list grew since it was sized
            case .failure(let error):
                return .failure(CofferError(.io, error.description))
            }
            break
        }
        var attributes: [ExtendedAttribute] = []
        for name in names.split(separator: 0) {
            let cName = name.map { CChar(bitPattern: $0) } + [0]
            switch Self.value(of: cName, at: path) {
            case .success(let value?): attributes.append(ExtendedAttribute(name: Array(name), value: value))
            case .success(nil): continue  // removed since it was listed
            case .failure(let error):
                return .failure(CofferError(.io, "attribute \(PrintableText.escaping(name)): \(error.message)"))
            }
        }
        return .success(attributes.sorted { $0.name.lexicographicallyPrecedes($1.name) })
    }

    private static func value(of name: [CChar], at path: [CChar]) -> Result<[UInt8]?, CofferError> {
        while true {
            let size: Int
            switch valueOrErrno({ lgetxattr(path, name, nil, 0) }) {
            case .success(let found): size = found
            case .failure(let error) where error.code == ENODATA: return .success(nil)
            case .failure(let error): return .failure(CofferError(.io, error.description))
            }
            var value = [UInt8](repeating: 0, count: size)
            let read = value.withUnsafeMutableBytes { buffer in
                valueOrErrno { lgetxattr(path, name, buffer.baseAddress, size) }
            }
            switch read {
            case .success(let count):
                value.removeLast(value.count - count)
                return .success(value)
            case .failure(let error) where error.code == ENODATA: return .success(nil)
            case .failure(let error) where error.code == ERANGE: continue  // it grew since it was sized
            case .failure(let error): return .failure(CofferError(.io, error.description))
            }
        }
    }

    /// Sets every attribute on `path` (not following a symbolic link).
    ///
    /// - Returns: One message per attribute that could not be set (a file system without support,
    ///   a `trusted.*` or `security.*` name that needs root).
    package static func apply(_ attributes: [ExtendedAttribute], to path: [CChar]) -> [String] {
        apply(attributes) { name, value in lsetxattr(path, name, value.baseAddress, value.count, 0) }
    }

    /// Sets every attribute on an open file.
    package static func apply(_ attributes: [ExtendedAttribute], to descriptor: Int32) -> [String] {
        apply(attributes) { name, value in fsetxattr(descriptor, name, value.baseAddress, value.count, 0) }
    }

    /// Sets each attribute with `set` (name, value → 0 or -1 with `errno`); one message per failure.
    private static func apply(
        _ attributes: [ExtendedAttribute],
        set: ([CChar], UnsafeRawBufferPointer) -> Int32
    ) -> [String] {
        attributes.compactMap { attribute in
            let name = attribute.name.map { CChar(bitPattern: $0) } + [0]
            let result = attribute.value.withUnsafeBytes { set(name, $0) }
            return result == 0 ? nil : "extended attribute \(attribute.displayName) not restored: \(errorText())"
        }
    }

    private static func errorText() -> String { Errno.current.description }
}
