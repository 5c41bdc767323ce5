/// Writes an object as it is produced: the bytes are gathered into parts of the remote's part size
/// and each full part is uploaded at once (a multipart upload, started with the first), so memory
/// holds one part whatever the object's size; an object smaller than a part goes in one request at
/// ``finish()``. The object appears only when ``finish()`` completes; ``abort()`` abandons the parts.
package struct S3UploadSink: ByteSink {
    /// The multipart upload a sink began, shared with whoever made the sink, so that an export that
    /// fails midway (and takes the sink with it) can still abandon it.
    package final class Started {
        package fileprivate(set) var key: String?
        package fileprivate(set) var uploadID: String?

        package init() {}

        /// Abandons the upload, if one was begun (best effort).
        package func abort(with client: S3Client) {
            if let key, let uploadID { client.abortUpload(key, uploadID: uploadID) }
        }
    }

    /// What the sink reports as it goes, for a caller that keeps the upload resumable: the upload
    /// begun, and each part sent (its number from 1, entity tag and SHA-256).
    package struct Journal {
        package var started: (String) throws(CofferError) -> Void = { _ throws(CofferError) in }
        package var sentPart: (Int, String, [UInt8]) throws(CofferError) -> Void = { _, _, _ throws(CofferError) in }

        package init() {}
    }

    private let client: S3Client
    private let key: String
    private let progress: SyncProgress?
    private let partSize: Int
    private let started: Started
    private let journal: Journal
    /// The parts an interrupted upload of the same bytes sent, kept when they match.
    private let sentBefore: [PendingUpload.Part]
    private var buffer: [UInt8] = []
    private var uploadID: String?
    private var parts: [String] = []
    private var sent: Int64 = 0
    /// Parts kept from the interrupted upload rather than sent again.
    package private(set) var reusedParts = 0

    /// A sink for a new upload, or, with `resuming`, one that goes on with an upload begun for the
    /// same bytes: each part whose digest matches one sent then is kept, not sent again.
    ///
    /// - Parameter journal: Told of the upload begun and of each part sent.
    package init(
        client: S3Client,
        key: String,
        progress: SyncProgress?,
        started: Started = Started(),
        resuming: (uploadID: String, parts: [PendingUpload.Part])? = nil,
        journal: Journal = Journal()
    ) {
        self.client = client
        self.key = key
        self.progress = progress
        self.started = started
        self.journal = journal
        partSize = client.remote.partSize
        uploadID = resuming?.uploadID
        sentBefore = resuming?.parts ?? []
        if let resuming {
            started.key = key
            started.uploadID = resuming.uploadID
        }
    }

    /// The bytes taken so far.
    package var count: Int64 { sent + Int64(buffer.count) }

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        var offset = 0
        while offset < bytes.count {
            let taken = min(partSize - buffer.count, bytes.count - offset)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + taken)]))
            offset += taken
            if buffer.count == partSize { try uploadPart() }
        }
    }

    /// Uploads what is left and makes the object appear.
    package mutating func finish() throws(CofferError) {
        guard let uploadID else {
            try client.put(key, body: buffer)
            sent += Int64(buffer.count)
            buffer = []
            progress?(sent)
            return
        }
        if !buffer.isEmpty || parts.isEmpty { try uploadPart() }
        try client.completeUpload(key, uploadID: uploadID, parts: parts)
    }

    /// Abandons a multipart upload begun (best effort).
    package func abort() {
        if let uploadID { client.abortUpload(key, uploadID: uploadID) }
    }

    private mutating func uploadPart() throws(CofferError) {
        if uploadID == nil {
            let begun = try client.startUpload(key)
            uploadID = begun
            started.key = key
            started.uploadID = begun
            try journal.started(begun)
        }
        guard let uploadID else { return }
        let number = parts.count + 1
        let digest: [UInt8]
        do {
            digest = try SHA256.hash(buffer)
        } catch {
            throw CofferError(.internalError, "hashing part \(number) of \(key) failed: \(error)", underlying: error)
        }
        if number <= sentBefore.count {
            // Made again from the same state with the same seeds: the same bytes, already there.
            guard sentBefore[number - 1].digest == digest else {
                throw CofferError(
                    .internalError,
                    "part \(number) of \(key) came out differently from the interrupted push's; push again"
                )
            }
            parts.append(sentBefore[number - 1].etag)
            reusedParts += 1
        } else {
            let etag = try client.uploadPart(key, uploadID: uploadID, number: number, body: buffer)
            parts.append(etag)
            try journal.sentPart(number, etag, digest)
        }
        sent += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
        progress?(sent)
    }
}

/// Reads an object as it arrives, in ranges of a few MiB fetched one after another, so memory holds
/// one range whatever the object's size. Each range is asked for only if the object still has the
/// entity tag the listing gave: one replaced meanwhile fails with `.itemNotFound`, like one deleted.
package struct S3RangeSource: ByteSource {
    private let client: S3Client
    private let key: String
    private let etag: String?
    private let size: Int64
    private let rangeSize: Int64
    private var offset: Int64 = 0
    private var unread = UnreadBytes()
    private let progress: SyncProgress?

    /// A source over `key`, of `size` bytes with entity tag `etag` (as listed).
    package init(
        client: S3Client,
        key: String,
        size: Int64,
        etag: String?,
        rangeSize: Int = 8 << 20,
        progress: SyncProgress? = nil
    ) {
        self.client = client
        self.key = key
        self.size = size
        self.etag = etag.flatMap { $0.isEmpty ? nil : $0 }
        self.rangeSize = Int64(rangeSize)
        self.progress = progress
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        if unread.isEmpty {
            guard offset < size else { return 0 }
            let end = min(size, offset + rangeSize)
            let bytes = try client.getRange(key, offset..<end, etag: etag)
            guard Int64(bytes.count) == end - offset else {
                throw CofferError(.itemNotFound, "\(key) changed while it was read; pull again")
            }
            offset = end
            progress?(offset)
            unread.replace(with: bytes)
        }
        return unread.copy(into: buffer)
    }
}
