internal import CFuse3
import Coffer
import Foundation
internal import Glibc

/// What the FUSE callbacks reach through libfuse's private data: the view and the open files.
final class FUSEBridge: Sendable {
    let view: VaultView
    private let files = Locked<(open: [UInt64: VaultView.OpenFile], next: UInt64)>(([:], 1))

    init(view: VaultView) {
        self.view = view
    }

    func add(_ file: VaultView.OpenFile) -> UInt64 {
        files.withLock { files in
            let handle = files.next
            files.next += 1
            files.open[handle] = file
            return handle
        }
    }

    func file(_ handle: UInt64) -> VaultView.OpenFile? { files.withLock { $0.open[handle] } }

    func remove(_ handle: UInt64) { files.withLock { _ = $0.open.removeValue(forKey: handle) } }

    /// The bridge of the file system whose operation is running on this thread.
    static var current: FUSEBridge? {
        guard let data = coffer_fuse_private_data() else { return nil }
        return Unmanaged<FUSEBridge>.fromOpaque(data).takeUnretainedValue()
    }
}

/// The table of callbacks libfuse's high-level API calls, each on a loop thread, each passing the
/// path to ``VaultView`` and its answer (or its error as `-errno`) back. Only reads are offered:
/// the mount is read-only, and the kernel refuses writes before they reach here.
enum FUSEOperations {
    static func table() -> fuse_operations {
        var operations = fuse_operations()
        operations.getattr = { path, status, _ in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                FUSEOperations.fill(status!, with: try bridge.view.attributes(of: path))
                return 0
            }
        }
        operations.readlink = { path, buffer, size in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                let target = try bridge.view.linkTarget(of: path)
                guard let buffer, size > 0 else { return -EINVAL }
                let count = min(target.count, size - 1)
                target.withUnsafeBytes { raw in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress!, byteCount: count)
                }
                buffer[count] = 0
                return 0
            }
        }
        operations.open = { path, info in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                guard let info else { return -EINVAL }
                guard info.pointee.flags & O_ACCMODE == O_RDONLY else { return -EROFS }
                let file = try bridge.view.open(path)
                info.pointee.fh = bridge.add(file)
                // A snapshot's file never changes: the kernel may keep its pages across opens.
                info.pointee.keep_cache = file.isImmutable ? 1 : 0
                return 0
            }
        }
        operations.read = { path, buffer, size, offset, info in
            FUSEOperations.run(path) { (bridge, _) throws(MountError) in
                guard let info, let buffer, offset >= 0 else { return -EINVAL }
                guard let file = bridge.file(info.pointee.fh) else { return -EBADF }
                let count = try bridge.view.read(
                    file,
                    at: UInt64(offset),
                    into: UnsafeMutableRawBufferPointer(start: buffer, count: size)
                )
                return Int32(count)
            }
        }
        operations.release = { path, info in
            FUSEOperations.run(path) { (bridge, _) throws(MountError) in
                if let info { bridge.remove(info.pointee.fh) }
                return 0
            }
        }
        operations.readdir = { path, buffer, filler, _, _, _ in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                guard let filler else { return -EINVAL }
                let listed = try bridge.view.list(path)
                _ = filler(buffer, ".", nil, 0, fuse_fill_dir_flags(0))
                _ = filler(buffer, "..", nil, 0, fuse_fill_dir_flags(0))
                // Attributes go with each name, but not as a "plus" listing: with one, libfuse makes
                // a node for every name listed, and `find` over a million entries went from 2.8 s
                // at 97 MiB to 7.6 s at 262 MiB, while `du` gained nothing.
                var status = stat()
                for entry in listed {
                    FUSEOperations.fill(&status, with: entry.attributes)
                    let full = entry.name.withUnsafeBufferPointer { name in
                        withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 1) { text in
                            for (index, byte) in name.enumerated() { text[index] = CChar(bitPattern: byte) }
                            text[name.count] = 0
                            return filler(buffer, text.baseAddress, &status, 0, fuse_fill_dir_flags(0))
                        }
                    }
                    // The kernel's buffer is full: it asks again from where it stopped only with
                    // offsets, which this listing does not give; libfuse buffers the whole listing.
                    if full != 0 { break }
                }
                return 0
            }
        }
        operations.statfs = { _, status in
            guard let status else { return -EINVAL }
            status.pointee = statvfs()
            status.pointee.f_bsize = 4096
            status.pointee.f_frsize = 4096
            status.pointee.f_namemax = 255
            return 0
        }
        operations.getxattr = { path, name, value, size in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                guard let name else { return -EINVAL }
                let wanted = Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
                guard let found = try bridge.view.extendedAttributes(of: path).first(where: { $0.name == wanted })
                else { return -ENODATA }
                return FUSEOperations.copy(found.value, to: value, size: size)
            }
        }
        operations.listxattr = { path, list, size in
            FUSEOperations.run(path) { (bridge, path) throws(MountError) in
                let names = try bridge.view.extendedAttributes(of: path).flatMap { (attribute) -> [UInt8] in
                    attribute.name + [0]
                }
                return FUSEOperations.copy(names, to: list, size: size)
            }
        }
        return operations
    }

    /// Runs one operation on the path's bytes (without the leading `/`), turning a ``MountError``
    /// into the `-errno` the kernel expects.
    private static func run(
        _ path: UnsafePointer<CChar>?,
        _ body: (FUSEBridge, [UInt8]) throws(MountError) -> Int32
    ) -> Int32 {
        guard let bridge = FUSEBridge.current, let path else { return -EIO }
        var bytes = Array(UnsafeRawBufferPointer(start: path, count: strlen(path)))
        if bytes.first == UInt8(ascii: "/") { bytes.removeFirst() }
        do {
            return try body(bridge, bytes)
        } catch {
            return FUSECall.status(error)
        }
    }

    /// The getxattr/listxattr convention: the size needed when `size` is 0, else the bytes copied,
    /// or `-ERANGE` if they do not fit.
    private static func copy(_ bytes: [UInt8], to destination: UnsafeMutablePointer<CChar>?, size: Int) -> Int32 {
        guard size > 0 else { return Int32(bytes.count) }
        guard bytes.count <= size, let destination else { return -ERANGE }
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress {
                UnsafeMutableRawPointer(destination).copyMemory(from: base, byteCount: raw.count)
            }
        }
        return Int32(bytes.count)
    }

    private static func fill(_ status: UnsafeMutablePointer<stat>, with attributes: NodeAttributes) {
        status.pointee = stat()
        status.pointee.st_mode = attributes.mode
        status.pointee.st_nlink = UInt(attributes.linkCount)
        status.pointee.st_uid = attributes.uid
        status.pointee.st_gid = attributes.gid
        status.pointee.st_size = Int(clamping: attributes.size)
        status.pointee.st_blocks = Int(clamping: (attributes.allocatedBytes + 511) / 512)
        status.pointee.st_blksize = 4096
        status.pointee.st_mtim = timespec(attributes.modified)
        status.pointee.st_atim = timespec(attributes.modified)
        status.pointee.st_ctim = timespec(attributes.changed)
    }

    private static func timespec(_ time: NodeAttributes.Timestamp) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))
    }
}
