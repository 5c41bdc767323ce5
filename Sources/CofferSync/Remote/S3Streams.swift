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

    private let client: S3Client
    private let key: String
    private let progress: SyncProgress?
    private let partSize: Int
    private let started: Started
    private var buffer: [UInt8] = []
    private var uploadID: String?
    private var parts: [String] = []
    private var sent: Int64 = 0

    package init(client: S3Client, key: String, progress: SyncProgress?, started: Started = Started()) {
        self.client = client
        self.key = key
        self.progress = progress
        self.started = started
        partSize = client.remote.partSize
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
            uploadID = try client.startUpload(key)
            started.key = key
            started.uploadID = uploadID
        }
        guard let uploadID else { return }
        parts.append(try client.uploadPart(key, uploadID: uploadID, number: parts.count + 1, body: buffer))
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
