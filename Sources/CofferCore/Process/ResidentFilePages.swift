internal import Glibc

/// How much of this process's resident memory is pages of files it maps: the third field of
/// `/proc/self/statm` ("shared": file-backed and shared-memory pages), read through a descriptor
/// kept open, so a reading costs one `pread` (about a microsecond), not a path lookup.
///
/// The environment reads it to tell how much of the LMDB map is mapped now: a lookup's faults map
/// whole folios of the file (up to 2 MiB each), so counting lookups says little about the pages they
/// left mapped, and this does.
package final class ResidentFilePages: Sendable {
    private let descriptor: Int32
    private let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Opens `/proc/self/statm`; `nil` where there is none (no procfs mounted).
    package init?() {
        let opened = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { return nil }
        descriptor = opened
    }

    deinit {
        close(descriptor)
    }

    /// The resident file-backed bytes now, or `nil` if the file could not be read or parsed.
    package func bytes() -> Int? {
        // "size resident shared text lib data dt", in pages: seven numbers, well under 128 bytes.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            guard case .success(let count) = valueOrErrno({ pread(descriptor, buffer.baseAddress, 128, 0) }) else {
                return nil
            }
            return Self.sharedPages(inStatm: UnsafeBufferPointer(rebasing: buffer.prefix(count))).map { $0 * pageSize }
        }
    }

    /// The third number of a `statm` line (its "shared" pages), or `nil` if it has fewer than three
    /// numbers followed by a separator.
    package static func sharedPages(inStatm text: some Collection<UInt8>) -> Int? {
        var field = 0
        var value = 0
        var digits = 0
        for byte in text {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                value = value &* 10 &+ Int(byte - UInt8(ascii: "0"))
                digits += 1
            } else if digits > 0 {
                if field == 2 { return value }
                field += 1
                value = 0
                digits = 0
            }
        }
        return nil
    }
}
