import Foundation

/// The read stage of a backup: the walking thread hands each path over, and reader threads (one per
/// core, at least two) list its extended attributes, read its link target, or open, read and chunk the file, then
/// submit what they made to the backup's ``ContentSession`` in walk order. This takes the per-file
/// system calls and FastCDC off the walking thread, which otherwise was the one stage of the pipeline
/// that a second core could not share (issue 41; docs/ARCHITECTURE.md, "Snapshots").
///
/// ```
/// walking thread:  readdir, lstat, patterns, previous entry ─▶ batches of paths, in walk order
/// reader × cores:  xattrs, readlink, open, read, FastCDC ─▶ held until its batch's turn ─▶ session
/// ```
///
/// Order: batches are numbered as the walk makes them and taken in that order; a reader submits only
/// while its batch holds the turn, and passes the turn on when the batch is done. The batch holding
/// the turn never waits for another, so the stage always moves. Memory: a reader holds at most
/// ``readAhead`` bytes of chunks before its turn (more only by the chunk that crossed it), and at
/// most ``queuedBatches`` batches wait for a reader.
package final class BackupReaders: @unchecked Sendable {
    /// One walked path, and what the previous snapshot held there.
    package struct Item {
        package let walked: WalkedPath
        /// Set when the previous snapshot holds the file with the same metadata: it is not read.
        package let unchanged: TreeEntry?
        /// Whether the previous snapshot holds nothing at this path.
        package let isNew: Bool
    }

    /// Paths a batch holds at most.
    package static var batchItems: Int { 64 }
    /// File bytes (by `lstat`) a batch is closed at: one reader should not get many megabytes.
    package static var batchBytes: UInt64 { 1 << 20 }
    /// Chunk bytes a reader holds before its batch's turn comes.
    package static var readAhead: Int { 4 << 20 }
    /// Bytes read from a file at a time by each reader.
    package static var segmentSize: Int { 1 << 20 }

    private struct State {
        var queue: [(number: Int, items: [Item])] = []
        var queueHead = 0
        var batchesMade = 0
        var turn = 0
        var isWalkFinished = false
        var failure: CofferError?
        var runningReaders = 0
    }

    private let session: ContentSession<BackupRun.Marker>
    private let run: BackupRun
    private let queuedBatches: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var state = State()
    private var batch: [Item] = []
    private var batchSize: UInt64 = 0
    /// Paths handled and file bytes read so far, reported as each path is handled.
    private let handled = Locked(BackupProgress(files: 0, bytesRead: 0))
    private let progress: (@Sendable (BackupProgress) -> Void)?

    /// Starts `readers` threads: one per core, and at least two, so one reader's disk waits overlap
    /// another's work even on one core.
    ///
    /// - Parameter progress: Called after each path is handled (read, or found unchanged), with the
    ///   paths handled and the file bytes read so far, in order, from the reader threads.
    package init(
        session: ContentSession<BackupRun.Marker>,
        run: BackupRun,
        readers: Int = max(OrderedPipeline<Int, Int>.defaultWorkerCount, 2),
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) {
        self.session = session
        self.run = run
        self.progress = progress
        queuedBatches = readers * 4
        state.runningReaders = readers
        for number in 0..<readers {
            let thread = Thread { [self] in
                nameCurrentThread("coffer-reader-\(number)")
                read()
            }
            thread.name = "coffer-reader-\(number)"
            thread.start()
        }
    }

    // MARK: Walking thread

    /// Queues a walked path, in walk order. Waits while the readers are far enough behind.
    ///
    /// - Throws: the error a reader stopped with (then call ``stop(_:)`` and abandon the session).
    package func add(_ walked: WalkedPath, unchanged: TreeEntry?, isNew: Bool) throws(CofferError) {
        batch.append(Item(walked: walked, unchanged: unchanged, isNew: isNew))
        if walked.kind == .file, unchanged == nil { batchSize += walked.size }
        if batch.count >= Self.batchItems || batchSize >= Self.batchBytes { try sendBatch() }
    }

    /// Queues the last batch and waits for every reader to finish.
    ///
    /// - Throws: the error a reader stopped with.
    package func finish() throws(CofferError) {
        try sendBatch()
        condition.lock()
        state.isWalkFinished = true
        condition.broadcast()
        while state.runningReaders > 0 { condition.wait() }
        let failure = state.failure
        condition.unlock()
        if let failure { throw failure }
    }

    /// Stops the readers for `error` (the walk failed), without waiting: a reader blocked on the
    /// session wakes when the session is abandoned. Call ``waitUntilStopped()`` after that.
    package func stop(_ error: CofferError) {
        condition.lock()
        if state.failure == nil { state.failure = error }
        state.isWalkFinished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for every reader thread to end (after ``stop(_:)`` and the session's abandon).
    package func waitUntilStopped() {
        condition.lock()
        while state.runningReaders > 0 { condition.wait() }
        condition.unlock()
    }

    private func sendBatch() throws(CofferError) {
        guard !batch.isEmpty else { return }
        let items = batch
        batch.removeAll(keepingCapacity: true)
        batchSize = 0
        condition.lock()
        defer { condition.unlock() }
        while state.queue.count - state.queueHead >= queuedBatches, state.failure == nil { condition.wait() }
        if let failure = state.failure { throw failure }
        state.queue.append((state.batchesMade, items))
        state.batchesMade += 1
        condition.broadcast()
    }

    // MARK: Readers

    /// One reader's loop: takes batches in order until the walk is done or the stage stopped.
    private func read() {
        var buffer: [UInt8] = []
        while let (number, items) = takeBatch() {
            var held = HeldSubmissions(number: number)
            do throws(CofferError) {
                for item in items {
                    let bytes = try read(item, buffer: &buffer, into: &held)
                    // Under the lock, so the calls come in order and the counts only grow.
                    handled.withLock { total in
                        total = BackupProgress(files: total.files + 1, bytesRead: total.bytesRead + bytes)
                        progress?(total)
                    }
                }
                try waitForTurn(number)
                try held.flush(to: session)
                passTurn()
            } catch {
                fail(error)
            }
        }
        condition.lock()
        state.runningReaders -= 1
        condition.broadcast()
        condition.unlock()
    }

    private func takeBatch() -> (Int, [Item])? {
        condition.lock()
        defer { condition.unlock() }
        while state.queueHead == state.queue.count, !state.isWalkFinished, state.failure == nil { condition.wait() }
        guard state.failure == nil, state.queueHead < state.queue.count else { return nil }
        let batch = state.queue[state.queueHead]
        state.queue[state.queueHead].items = []
        state.queueHead += 1
        if state.queueHead > 64, state.queueHead * 2 > state.queue.count {
            state.queue.removeFirst(state.queueHead)
            state.queueHead = 0
        }
        condition.broadcast()  // room for the walking thread
        return batch
    }

    private func holdsTurn(_ number: Int) throws(CofferError) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if let failure = state.failure { throw failure }
        return state.turn == number
    }

    private func waitForTurn(_ number: Int) throws(CofferError) {
        condition.lock()
        defer { condition.unlock() }
        while state.turn != number, state.failure == nil { condition.wait() }
        if let failure = state.failure { throw failure }
    }

    private func passTurn() {
        condition.lock()
        state.turn += 1
        condition.broadcast()
        condition.unlock()
    }

    private func fail(_ error: CofferError) {
        condition.lock()
        if state.failure == nil { state.failure = error }
        condition.broadcast()
        condition.unlock()
    }

    /// What one path becomes: a marker, or a file's chunks and its end marker. Returns the bytes read.
    private func read(
        _ item: Item,
        buffer: inout [UInt8],
        into held: inout HeldSubmissions
    ) throws(CofferError)
        -> Int64
    {
        let walked = item.walked
        var entry = walked.entry
        switch ExtendedAttribute.list(of: walked.absolutePath) {
        case .success(let attributes): entry.attributes = attributes
        case .failure(let error):
            // Gone since the walk saw it: reported once, as the walk reports a path that vanished.
            if case .failure(let gone) = WalkedPath.status(of: walked.absolutePath) {
                run.report(walked.relativePath, "vanished or unreadable: \(gone.message)")
                return 0
            }
            run.report(
                walked.relativePath,
                "extended attributes could not be read (\(error.message)); stored without them"
            )
        }
        guard walked.kind == .file else {
            if walked.kind == .symlink {
                switch readLinkTarget(walked.absolutePath) {
                case .success(let target): entry.linkTarget = target
                case .failure(let error):
                    run.report(walked.relativePath, "the link target could not be read (\(error.message)); skipped")
                    return 0
                }
            }
            try submit(.marker(.plain(entry)), into: &held)
            return 0
        }
        if let before = item.unchanged {
            entry.content = before.content
            try submit(.marker(.unchanged(entry)), into: &held)
            return 0
        }
        let file: OpenedFile
        switch openForBackup(walked.absolutePath) {
        case .failure(let error):
            run.report(walked.relativePath, "could not be opened (\(error.message)); skipped")
            return 0
        case .success(let opened):
            file = opened
        }
        defer { closeDescriptor(file.descriptor) }
        // The entry describes the file as opened, and its content is read up to that size.
        var opened = TreeEntry(walked.relativePath, status: file.status, kind: .file)
        opened.attributes = entry.attributes
        var source = TolerantFileSource(descriptor: file.descriptor, size: opened.size)
        try ContentSession<BackupRun.Marker>.chunk(
            &source,
            with: session.chunker,
            segmentSize: Self.segmentSize,
            buffer: &buffer
        ) { (piece) throws(CofferError) in
            try submit(.chunk(piece), into: &held)
        }
        // A read error is known only once the content is read: it travels with the end marker.
        try submit(.end(.file(opened, isNew: item.isNew, failure: source.failure)), into: &held)
        return Int64(opened.size)
    }

    /// Submits at once while the batch holds the turn; holds it back until then otherwise, waiting
    /// for the turn once ``readAhead`` bytes are held.
    private func submit(_ submission: HeldSubmissions.Submission, into held: inout HeldSubmissions) throws(CofferError)
    {
        if !held.holdsTurn {
            if try holdsTurn(held.number) {
                held.holdsTurn = true
            } else if held.bytes + submission.bytes > Self.readAhead {
                try waitForTurn(held.number)
                held.holdsTurn = true
            }
            if held.holdsTurn { try held.flush(to: session) }
        }
        if held.holdsTurn {
            try submission.submit(to: session)
        } else {
            held.append(submission)
        }
    }
}

/// What a reader made for its batch before the batch's turn came.
private struct HeldSubmissions {
    enum Submission {
        case chunk([UInt8])
        case end(BackupRun.Marker)
        case marker(BackupRun.Marker)

        var bytes: Int {
            if case .chunk(let piece) = self { return piece.count }
            return 0
        }

        func submit(to session: ContentSession<BackupRun.Marker>) throws(CofferError) {
            switch self {
            case .chunk(let piece): try session.addChunk(piece)
            case .end(let marker): try session.endContent(marker)
            case .marker(let marker): try session.addMarker(marker)
            }
        }
    }

    let number: Int
    var holdsTurn = false
    private(set) var held: [Submission] = []
    private(set) var bytes = 0

    init(number: Int) { self.number = number }

    mutating func append(_ submission: Submission) {
        held.append(submission)
        bytes += submission.bytes
    }

    mutating func flush(to session: ContentSession<BackupRun.Marker>) throws(CofferError) {
        for submission in held { try submission.submit(to: session) }
        held.removeAll()
        bytes = 0
    }
}
