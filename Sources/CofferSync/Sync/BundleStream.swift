/// The encrypted body of a sync bundle: the STREAM construction (Hoang, Reyhanitabar, Rogaway and
/// Vizár, "Online Authenticated-Encryption and its Nonce-Reuse Misuse-Resistance", 2015) as age and
/// Tink use it (docs/FORMAT.md, "Bundles"):
///
/// ```
/// segment i = AES-256-GCM(bundle key, nonce = prefix (7) ‖ i (UInt32) ‖ last (0 or 1),
///                         associated data = the whole header, plaintext: segment size bytes,
///                         the last segment 0 … segment size bytes) ‖ tag (16)
/// ```
///
/// Because the counter and the last-segment flag are in the nonce and the header is authenticated by
/// every segment, a reader detects a truncated stream (its last segment does not open as last), a
/// missing or reordered segment (wrong counter), a segment spliced from another bundle (other key,
/// prefix or header), and a changed header.
package struct BundleStreamWriter<Sink: ByteSink> {
    private(set) var sink: Sink
    private let cipher: AESGCM
    private let key: SecureBytes
    private let header: [UInt8]
    private let prefix: [UInt8]
    private let segmentSize: Int
    private var buffer: [UInt8] = []
    private var counter: UInt32 = 0
    /// SHA-256 of the header and the plaintext so far, for the exporter's signature.
    private var digest: BackgroundDigest?

    /// Writes `header` to `sink` and starts the stream under `key`.
    package init(header: BundleHeader, key: SecureBytes, sink: Sink) throws(CofferError) {
        self.sink = sink
        self.key = key
        self.header = header.encoded
        prefix = header.noncePrefix
        segmentSize = header.segmentSize
        do {
            cipher = try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
        let encoded = self.header
        try encoded.withBytes { (raw) throws(CofferError) in try self.sink.write(raw) }
        if header.version >= 2 {
            do {
                let digest = try BackgroundDigest()
                digest.update(encoded)
                self.digest = digest
            } catch {
                throw CofferError(.internalError, "hashing the bundle failed: \(error)", underlying: error)
            }
        }
    }

    /// The SHA-256 of the header and every byte written so far; later writes are not hashed (they
    /// are the signature and end frames).
    package mutating func finishDigest() throws(CofferError) -> [UInt8] {
        guard let digest else { throw CofferError(.internalError, "a version-1 bundle has no digest to sign") }
        self.digest = nil
        do {
            return try digest.finalize()
        } catch {
            throw CofferError(.internalError, "hashing the bundle failed: \(error)", underlying: error)
        }
    }

    /// How many plaintext bytes were written so far: the stream offset of the next byte.
    package private(set) var plaintextLength: UInt64 = 0

    /// Adds plaintext; full segments are sealed and written as soon as it is known they are not last.
    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        plaintextLength += UInt64(bytes.count)
        digest?.update(bytes)
        buffer.append(contentsOf: bytes)
        var start = 0
        // A segment is sealed only when more bytes follow it, so the last one is always known.
        while buffer.count - start > segmentSize {
            try seal(buffer[start..<(start + segmentSize)], last: false)
            start += segmentSize
        }
        if start > 0 { buffer.removeFirst(start) }
    }

    /// Seals what is left as the last segment (possibly empty) and returns the sink.
    package mutating func finish() throws(CofferError) -> Sink {
        try seal(buffer[...], last: true)
        buffer = []
        return sink
    }

    private mutating func seal(_ plaintext: ArraySlice<UInt8>, last: Bool) throws(CofferError) {
        let nonce = BundleStream.nonce(prefix: prefix, counter: counter, last: last)
        let sealed: [UInt8]
        do {
            sealed = try cipher.seal(Array(plaintext), key: key, nonce: nonce, authenticating: header)
        } catch {
            throw CofferError(.internalError, "sealing a bundle segment failed: \(error)", underlying: error)
        }
        // The nonce is implied by the position, so only ciphertext ‖ tag is written.
        try sealed.withBytes { (raw) throws(CofferError) in
            try sink.write(UnsafeRawBufferPointer(rebasing: raw[AESGCM.nonceByteCount...]))
        }
        guard counter < UInt32.max else {
            throw CofferError(.param, "the bundle is too large for its segment size; use larger segments")
        }
        counter += 1
    }
}

package enum BundleStream {
    package static func nonce(prefix: [UInt8], counter: UInt32, last: Bool) -> [UInt8] {
        prefix + withUnsafeBytes(of: counter.bigEndian) { Array($0) } + [last ? 1 : 0]
    }
}

/// Reads the plaintext of a bundle's stream, segment by segment, holding at most two segments.
///
/// - Throws: ``CofferError`` `.decode` naming the segment for any segment that does not open: a
///   damaged, truncated, reordered or spliced bundle. Plaintext is handed out segment by segment, so a
///   caller that must not act on unverified data (an import) stages what it reads and commits only
///   after the end.
package struct BundleStreamReader<Source: ByteSource>: ByteSource {
    private var source: Source
    private let cipher: AESGCM
    private let key: SecureBytes
    private let header: [UInt8]
    private let prefix: [UInt8]
    private let segmentSize: Int
    private var raw: [UInt8] = []
    private var sourceEnded = false
    private var counter: UInt32 = 0
    private var plaintext = UnreadBytes()
    private(set) var isFinished = false

    /// A reader over `source`, positioned after the header (`headerBytes`, as read).
    package init(source: Source, header: BundleHeader, headerBytes: [UInt8], key: SecureBytes) throws(CofferError) {
        self.source = source
        self.key = key
        self.header = headerBytes
        prefix = header.noncePrefix
        segmentSize = header.segmentSize
        do {
            cipher = try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        while plaintext.isEmpty {
            if isFinished { return 0 }
            try openNextSegment()
        }
        return plaintext.copy(into: buffer)
    }

    /// Opens the first segment now: whether it authenticates under the key given, to tell a bundle
    /// sealed with another key from a damaged one before anything is read from it.
    package mutating func opensFirstSegment() throws(CofferError) -> Bool {
        guard counter == 0, plaintext.isEmpty, !isFinished else { return true }
        do {
            try openNextSegment()
            return true
        } catch  where error.code == .decode && counter == 0 && !raw.isEmpty {
            return false
        } catch {
            throw error
        }
    }

    private mutating func openNextSegment() throws(CofferError) {
        let sealedSize = segmentSize + AESGCM.tagByteCount
        // Read until more than one sealed segment is held (so this one is not last) or the source ends.
        while raw.count <= sealedSize, !sourceEnded {
            var piece = [UInt8](repeating: 0, count: sealedSize + 1)
            let count = try piece.withMutableBytes { (bytes) throws(CofferError) in try source.read(into: bytes) }
            if count == 0 { sourceEnded = true } else { raw += piece[0..<count] }
        }
        let last = raw.count <= sealedSize
        let length = last ? raw.count : sealedSize
        guard length >= AESGCM.tagByteCount else {
            throw CofferError(.decode, "the bundle is truncated: segment \(counter) is missing or cut short")
        }
        let nonce = BundleStream.nonce(prefix: prefix, counter: counter, last: last)
        do {
            plaintext.replace(with: try cipher.open(nonce + raw[0..<length], key: key, authenticating: header))
        } catch {
            throw CofferError(
                .decode,
                last
                    ? "the bundle is damaged or truncated: its last segment (\(counter)) does not authenticate"
                    : "the bundle is damaged: segment \(counter) does not authenticate (altered, reordered, or from another bundle)"
            )
        }
        raw.removeFirst(length)
        counter += 1
        isFinished = last
    }
}
