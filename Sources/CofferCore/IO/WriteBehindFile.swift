import Foundation
internal import Glibc

/// A new file written as ``OutputFile`` is (under a temporary name, moved into place by ``commit()``
/// only when complete and flushed), in pieces of 4 MiB that a thread of its own writes while the caller
/// produces the next ones, with direct I/O (`O_DIRECT`) wherever the file system takes it.
///
/// Direct I/O moves each piece from its aligned buffer to the disk without copying it into the page
/// cache. On this project's machine a buffered write of 1 GiB spent 1.1 s of CPU in that copy and a
/// direct one 0.12 s, and a `get` of a large blob, whose decryption wants both cores, ran 2–3 times
/// slower to a file than to `/dev/null` because of it (docs/ARCHITECTURE.md, "Blob tier"). Full pieces
/// are written directly at offsets that are multiples of their size; the last, short one through the
/// page cache. Where the file system refuses direct I/O (tmpfs before Linux 6.6, many FUSE file
/// systems) every piece goes through the page cache, still from the writer thread.
///
/// Memory: at most three pieces (12 MiB), allocated as needed, so a small file costs one piece and no
/// thread.
package final class WriteBehindFile: ByteSink {
    /// The size of a piece: a multiple of any alignment direct I/O asks for.
    package static let pieceSize = 4 << 20

    private var file: OutputFile
    private let writer: PieceWriter
    /// The piece being filled, its bytes so far, and where it goes in the file.
    private var filling: AlignedPiece?
    private var filled = 0
    private var offset: Int64 = 0

    /// Creates the temporary file beside `path`.
    ///
    /// - Parameters:
    ///   - path: Where the file goes once committed.
    ///   - directIO: Whether to try direct I/O; `false` writes every piece through the page cache, as
    ///     on a file system that refuses direct I/O.
    /// - Throws: ``CofferError`` when the file cannot be created.
    package init(path: String, directIO: Bool = true) throws(CofferError) {
        file = try OutputFile(path: path)
        writer = PieceWriter(descriptor: file.descriptor, directIO: directIO)
    }

    /// Whether full pieces are being written with direct I/O now.
    package var isDirect: Bool { writer.isDirectNow }

    deinit {
        // The writer must be gone before `file` closes the descriptor (its number could be reused).
        writer.abandon()
    }

    /// Takes the next bytes, handing each full piece to the writer thread.
    ///
    /// - Throws: ``CofferError`` `.diskFull` or `.io` for a write of an earlier piece that failed,
    ///   `.userCanceled` when a stop was requested.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var rest = bytes
        while !rest.isEmpty {
            let piece: AlignedPiece
            if let filling {
                piece = filling
            } else {
                piece = try writer.takeFreePiece()
                filling = piece
            }
            let count = min(rest.count, Self.pieceSize - filled)
            (piece.bytes + filled).copyMemory(from: rest.baseAddress!, byteCount: count)
            filled += count
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
            if filled == Self.pieceSize { try handOff() }
        }
    }

    /// Writes what is left, waits for the writer, flushes the file to disk (`fsync`) and moves it to
    /// its final name.
    ///
    /// - Throws: ``CofferError`` `.diskFull` or `.io` when a write, the flush or the rename fails; the
    ///   temporary file is then removed when this is released.
    package func commit() throws(CofferError) {
        if filled > 0 { try handOff(isLast: true) }
        try writer.finish()
        try file.commit()
    }

    private func handOff(isLast: Bool = false) throws(CofferError) {
        try Interruption.check()
        guard let piece = filling else { return }
        try writer.submit(PieceWriter.Job(piece: piece, count: filled, offset: offset), isLast: isLast)
        offset += Int64(filled)
        filling = nil
        filled = 0
    }
}

/// A buffer of ``WriteBehindFile/pieceSize`` bytes aligned for direct I/O.
private final class AlignedPiece: @unchecked Sendable {
    /// The alignment of the buffer: the largest logical block size of common disks.
    static let alignment = 4096
    let bytes = UnsafeMutableRawPointer.allocate(byteCount: WriteBehindFile.pieceSize, alignment: alignment)

    deinit { bytes.deallocate() }
}

/// The writer thread of a ``WriteBehindFile`` and what it shares with the caller, under one lock.
private final class PieceWriter: @unchecked Sendable {
    /// One piece to write: its first `count` bytes at `offset`.
    struct Job {
        let piece: AlignedPiece
        let count: Int
        let offset: Int64
    }

    /// Pieces allocated at most: one filling, one being written, one waiting.
    private static let pieceLimit = 3

    private let descriptor: Int32
    /// Whether the descriptor has `O_DIRECT` set; the writer thread's alone once it runs.
    private var isDirect: Bool
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [Job] = []
    private var free: [AlignedPiece] = []
    private var allocated = 0
    private var failure: CofferError?
    private var isClosing = false
    private var isRunning = false

    init(descriptor: Int32, directIO: Bool) {
        self.descriptor = descriptor
        isDirect = directIO && Self.setDirect(true, on: descriptor)
    }

    /// Whether the descriptor has `O_DIRECT` set now.
    var isDirectNow: Bool {
        let flags = fcntl(descriptor, F_GETFL)
        return flags >= 0 && flags & __O_DIRECT != 0
    }

    /// A piece to fill: a written one, a new one while fewer than three exist, or the next one the
    /// writer frees.
    func takeFreePiece() throws(CofferError) -> AlignedPiece {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let failure { throw failure }
            if let piece = free.popLast() { return piece }
            if allocated < Self.pieceLimit {
                allocated += 1
                return AlignedPiece()
            }
            condition.wait()
        }
    }

    /// Queues `job` for the writer thread, starting it on the first; the last piece of a file that
    /// never needed the thread (one piece in all: a small file, an incremental bundle) is written on
    /// the calling thread instead.
    func submit(_ job: Job, isLast: Bool) throws(CofferError) {
        condition.lock()
        defer { condition.unlock() }
        if let failure { throw failure }
        if isLast, !isRunning {
            try write(job)
            return
        }
        queue.append(job)
        if !isRunning {
            isRunning = true
            Thread.detachNewThread { [self] in run() }
        }
        condition.broadcast()
    }

    /// Waits until every queued piece is written.
    ///
    /// - Throws: the first write's failure.
    func finish() throws(CofferError) {
        condition.lock()
        defer { condition.unlock() }
        isClosing = true
        condition.broadcast()
        while isRunning { condition.wait() }
        if let failure { throw failure }
    }

    /// Drops the queued pieces and waits for the writer thread to leave.
    func abandon() {
        condition.lock()
        defer { condition.unlock() }
        isClosing = true
        queue.removeAll()
        condition.broadcast()
        while isRunning { condition.wait() }
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty, !isClosing { condition.wait() }
            guard !queue.isEmpty else {
                isRunning = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            condition.unlock()

            let outcome = Result { () throws(CofferError) in try write(job) }
            condition.lock()
            switch outcome {
            case .success:
                free.append(job.piece)
            case .failure(let error):
                failure = error
                queue.removeAll()
                isClosing = true
            }
            condition.broadcast()
            condition.unlock()
        }
    }

    private func write(_ job: Job) throws(CofferError) {
        // A short piece (the last) goes through the page cache: direct I/O wants whole blocks.
        if isDirect, job.count % AlignedPiece.alignment != 0 { dropDirect() }
        var done = 0
        while done < job.count {
            let result = valueOrErrno {
                pwrite(descriptor, job.piece.bytes + done, job.count - done, off_t(job.offset) + off_t(done))
            }
            switch result {
            case .success(0):
                throw CofferError(.io, "writing the output failed: the file system took no bytes")
            case .success(let count):
                done += count
                // A short direct write can leave a rest that is not whole blocks.
                if isDirect, count % AlignedPiece.alignment != 0 { dropDirect() }
            case .failure(let error) where error.code == EINVAL && isDirect:
                // This file system (or this device's block size) takes no direct I/O: the page cache.
                dropDirect()
                if isDirect { throw error.outputWriteError }
            case .failure(let error):
                throw error.outputWriteError
            }
        }
    }

    /// Writes through the page cache from now on.
    private func dropDirect() {
        isDirect = Self.setDirect(false, on: descriptor)
    }

    /// Sets or clears `O_DIRECT` on `descriptor`; returns whether it is set afterwards (a file system
    /// that takes no direct I/O refuses to set it).
    private static func setDirect(_ wanted: Bool, on descriptor: Int32) -> Bool {
        // Glibc's module shows `O_DIRECT` only as `__O_DIRECT` (the plain name needs `_GNU_SOURCE`).
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0 else { return false }
        let isSet = flags & __O_DIRECT != 0
        guard wanted != isSet else { return isSet }
        let changed = fcntl(descriptor, F_SETFL, wanted ? flags | __O_DIRECT : flags & ~__O_DIRECT) == 0
        return changed ? wanted : isSet
    }
}
