internal import Glibc

/// Writes a file that was sparse when backed up: every aligned block of zeros becomes a hole (the
/// offset moves past it; nothing is written), and ``finish()`` sets the final size, so a 20 GiB file
/// of mostly holes takes the space of its data again, not 20 GiB.
package struct SparseFileSink: ByteSink {
    /// The hole granularity: ext4's and most file systems' block size.
    package static let blockSize = 4096

    private var base: FileDescriptorSink
    private var offset: Int64 = 0

    package init(descriptor: Int32) {
        base = FileDescriptorSink(descriptor: descriptor)
    }

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var start = 0
        while start < bytes.count {
            // Up to the next block boundary of the file, so holes stay aligned.
            let room = Self.blockSize - Int(offset % Int64(Self.blockSize))
            let end = min(bytes.count, start + room)
            let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            if piece.count == Self.blockSize || piece.count == room, piece.allSatisfy({ $0 == 0 }) {
                guard lseek(base.descriptor, off_t(piece.count), SEEK_CUR) >= 0 else {
                    throw Errno.current.cofferError("seeking in the output failed")
                }
            } else {
                try base.write(piece)
            }
            offset += Int64(piece.count)
            start = end
        }
    }

    /// Sets the file's size to everything written and skipped (a file ending in a hole).
    package func finish() throws(CofferError) {
        let (descriptor, size) = (base.descriptor, off_t(offset))
        if case .failure(let error) = nothingOrErrno({ ftruncate(descriptor, size) }) {
            throw error.cofferError("setting the output's size failed")
        }
    }
}
