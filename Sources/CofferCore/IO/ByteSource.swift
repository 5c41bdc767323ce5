package import Foundation
internal import Glibc

/// Where a blob's bytes come from while it is written: read in large pieces, never all at once.
package protocol ByteSource {
    /// Reads up to `buffer.count` bytes into `buffer`; returns how many, 0 only at the end.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int
}

/// Bytes produced ahead of a reader (a decrypted segment, a received piece), handed out in the sizes
/// it asks for.
package struct UnreadBytes {
    private var bytes: [UInt8] = []
    private var offset = 0

    package init() {}

    /// Whether everything has been handed out.
    package var isEmpty: Bool { offset == bytes.count }

    /// Starts handing out `newBytes`.
    package mutating func replace(with newBytes: [UInt8]) {
        bytes = newBytes
        offset = 0
    }

    /// Copies as much as fits into `buffer`; returns how much.
    package mutating func copy(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, bytes.count - offset)
        bytes.withUnsafeBytes { raw in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)]))
        }
        offset += count
        return count
    }
}

extension ByteSource {
    /// The next `count` bytes, or fewer only where the source ends.
    package mutating func read(upTo count: Int) throws(CofferError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let read = try bytes.withMutableBytes { (raw) throws(CofferError) in
                try self.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
            }
            if read == 0 { break }
            filled += read
        }
        bytes.removeLast(count - filled)
        return bytes
    }
}

/// Reads an open file descriptor (a file, a pipe, standard input) to its end.
package struct FileDescriptorSource: ByteSource {
    package let descriptor: Int32

    package init(descriptor: Int32) { self.descriptor = descriptor }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        // A stop request reaches a read waiting on an idle pipe too.
        try Interruption.wait(for: descriptor)
        switch valueOrErrno({ Glibc.read(descriptor, buffer.baseAddress, buffer.count) }) {
        case .success(let count): return count
        case .failure(let error): throw error.cofferError("reading the input failed")
        }
    }
}

/// Reads bytes already in memory.
package struct DataSource<Bytes: DataProtocol>: ByteSource {
    package let bytes: Bytes
    private var position: Bytes.Index

    package init(_ bytes: Bytes) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        let end = bytes.index(position, offsetBy: buffer.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
        let count = bytes[position..<end].copyBytes(to: buffer)
        position = end
        return count
    }
}

/// Where a blob's bytes go while it is read.
package protocol ByteSink {
    /// Takes the next bytes of the blob, in order.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError)
}

/// Writes to an open file descriptor, retrying short writes.
package struct FileDescriptorSink: ByteSink {
    package let descriptor: Int32

    package init(descriptor: Int32) { self.descriptor = descriptor }

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var offset = 0
        while offset < bytes.count {
            try Interruption.wait(for: descriptor, forWriting: true)
            let written = Interruption.interruptibleWrite {
                valueOrErrno(retryOnInterrupt: false) {
                    Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                }
            }
            switch written {
            case .success(let count):
                offset += count
            case .failure(let error) where error.code == EINTR:
                continue
            case .failure(let error):
                throw error.outputWriteError
            }
        }
    }
}

/// Collects bytes in memory.
package struct DataSink: ByteSink {
    package var data = Data()

    package init() {}

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        data.append(contentsOf: bytes)
    }
}

/// Hands each piece to a closure (the async stream's continuation, a digest in `verify`).
package struct ClosureSink: ByteSink {
    package let body: (UnsafeRawBufferPointer) throws(CofferError) -> Void

    package init(body: @escaping (UnsafeRawBufferPointer) throws(CofferError) -> Void) { self.body = body }

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        try body(bytes)
    }
}

/// Reads pieces that an async task sends through a channel (for writing from an `AsyncSequence`).
package struct ChannelSource: ByteSource {
    package let channel: BoundedChannel<[UInt8]>
    private var piece = UnreadBytes()

    package init(channel: BoundedChannel<[UInt8]>) {
        self.channel = channel
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        while piece.isEmpty {
            let next: [UInt8]?
            do {
                next = try channel.receive()
            } catch let error as CofferError {
                throw error
            } catch {
                throw CofferError(.io, "the input sequence failed: \(error)", underlying: error)
            }
            guard let next else { return 0 }
            piece.replace(with: next)
        }
        return piece.copy(into: buffer)
    }
}

/// Reads at most `limit` bytes of another source: a regular file is read up to the size it had when
/// the read began, so a file growing meanwhile (a log, the vault's own file) cannot keep a write
/// running.
package struct BoundedSource<Base: ByteSource>: ByteSource {
    private var base: Base
    private var remaining: UInt64

    package init(_ base: Base, limit: UInt64) {
        self.base = base
        remaining = limit
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        guard remaining > 0 else { return 0 }
        let count = try base.read(
            into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(UInt64(buffer.count), remaining))))
        )
        remaining -= UInt64(count)
        return count
    }
}
