import Foundation
internal import Glibc

/// Where a blob's bytes come from while it is written: read in large pieces, never all at once.
protocol ByteSource {
    /// Reads up to `buffer.count` bytes into `buffer`; returns how many, 0 only at the end.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int
}

/// Bytes produced ahead of a reader (a decrypted segment, a received piece), handed out in the sizes
/// it asks for.
struct UnreadBytes {
    private var bytes: [UInt8] = []
    private var offset = 0

    /// Whether everything has been handed out.
    var isEmpty: Bool { offset == bytes.count }

    /// Starts handing out `newBytes`.
    mutating func replace(with newBytes: [UInt8]) {
        bytes = newBytes
        offset = 0
    }

    /// Copies as much as fits into `buffer`; returns how much.
    mutating func copy(into buffer: UnsafeMutableRawBufferPointer) -> Int {
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
    mutating func read(upTo count: Int) throws(CofferError) -> [UInt8] {
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
struct FileDescriptorSource: ByteSource {
    let descriptor: Int32

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            throw CofferError(.io, "reading the input failed: \(String(cString: strerror(code)))")
        }
    }
}

/// Reads bytes already in memory.
struct DataSource<Bytes: DataProtocol>: ByteSource {
    let bytes: Bytes
    private var position: Bytes.Index

    init(_ bytes: Bytes) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        let end = bytes.index(position, offsetBy: buffer.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
        let count = bytes[position..<end].copyBytes(to: buffer)
        position = end
        return count
    }
}

/// Where a blob's bytes go while it is read.
protocol ByteSink {
    /// Takes the next bytes of the blob, in order.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError)
}

/// Writes to an open file descriptor, retrying short writes.
struct FileDescriptorSink: ByteSink {
    let descriptor: Int32

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == ENOSPC {
                    throw CofferError(.diskFull, "the output's disk is full; free some space and try again")
                }
                throw CofferError(.io, "writing the output failed: \(String(cString: strerror(code)))")
            }
            offset += count
        }
    }
}

/// Collects bytes in memory.
struct DataSink: ByteSink {
    var data = Data()

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        data.append(contentsOf: bytes)
    }
}

/// Hands each piece to a closure (the async stream's continuation, a digest in `verify`).
struct ClosureSink: ByteSink {
    let body: (UnsafeRawBufferPointer) throws(CofferError) -> Void

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        try body(bytes)
    }
}

/// Reads pieces that an async task sends through a channel (for writing from an `AsyncSequence`).
struct ChannelSource: ByteSource {
    let channel: BoundedChannel<[UInt8]>
    private var piece = UnreadBytes()

    init(channel: BoundedChannel<[UInt8]>) {
        self.channel = channel
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
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
struct BoundedSource<Base: ByteSource>: ByteSource {
    private var base: Base
    private var remaining: UInt64

    init(_ base: Base, limit: UInt64) {
        self.base = base
        remaining = limit
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        guard remaining > 0 else { return 0 }
        let count = try base.read(
            into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(UInt64(buffer.count), remaining))))
        )
        remaining -= UInt64(count)
        return count
    }
}
