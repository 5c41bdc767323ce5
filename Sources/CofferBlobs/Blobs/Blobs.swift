public import Foundation

extension Vault {
    /// The blob tier: large data stored in deduplicated, compressed, encrypted chunks.
    public var blobs: Blobs { Blobs(vault: self) }
}

/// Large data by name: files, backups, media. Obtain one with ``Vault/blobs``.
///
/// Content is cut into chunks by content (FastCDC), so the same bytes are stored once however often
/// they occur and an edited file re-uses the chunks it did not change; each new chunk is compressed
/// with zstd and sealed with AES-256-GCM under its own key. Writing and reading run on every core and
/// stream: memory stays bounded whatever the size. A blob becomes visible, or is replaced, in one
/// transaction after all of its content is stored, so a reader sees the old blob or the new one,
/// never a mix, and a crash leaves nothing half-written.
///
/// Names are never stored in the clear: the `blobs` table is keyed by a keyed hash of the name, and
/// the name itself is inside the sealed manifest. One name refers to one blob, whatever its scope.
///
/// ```swift
/// let info = try vault.blobs.write("photos/cat.jpg", contentsOf: URL(fileURLWithPath: "cat.jpg"))
/// let data = try vault.blobs.data("photos/cat.jpg")
/// let head = try vault.blobs.data("photos/cat.jpg", range: 0..<1024)
/// for blob in try vault.blobs.list() { print(blob.name, blob.size) }
/// ```
///
/// All methods are safe to call from many threads at once. Writes of different blobs proceed in
/// parallel (their chunk work overlaps; their commits take turns).
public struct Blobs: Sendable {
    package let vault: Vault

    // MARK: Writing

    /// Stores `data` as the blob `name`, replacing any blob of that name.
    ///
    /// - Throws: ``CofferError`` `.param` for an invalid name or option, `.interactionNotAllowed` when
    ///   the keys for `options.protection` are not in memory, `.diskFull`, `.io`.
    @discardableResult
    public func write(
        _ name: String,
        data: some DataProtocol,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        var source = DataSource(data)
        return try write(name, from: &source, options: options, progress: progress)
    }

    /// Stores the contents of the file at `url` as the blob `name`, streaming it.
    @discardableResult
    public func write(
        _ name: String,
        contentsOf url: URL,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        try vault.refuseOwnFile(url, reading: true)
        let file = try InputFile(path: url.path)
        return try write(name, fileDescriptor: file.descriptor, options: options, progress: progress)
    }

    /// Stores everything readable from `fileDescriptor` (a file, a pipe, standard input) until its end
    /// as the blob `name`; a regular file is read up to the size it has when the write starts, so a
    /// file growing meanwhile is stored as it was. The descriptor stays open.
    ///
    /// - Throws: ``CofferError`` `.param` when the descriptor is one of the vault's own files, and the
    ///   errors of ``write(_:data:options:progress:)-(_,DataProtocol,_,_)``.
    @discardableResult
    public func write(
        _ name: String,
        fileDescriptor: Int32,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        try vault.refuseOwnFile(descriptor: fileDescriptor, reading: true)
        let source = FileDescriptorSource(descriptor: fileDescriptor)
        if let size = InputFile.regularFileSize(fileDescriptor) {
            var bounded = BoundedSource(source, limit: UInt64(size))
            return try write(name, from: &bounded, options: options, progress: progress)
        }
        var unbounded = source
        return try write(name, from: &unbounded, options: options, progress: progress)
    }

    /// Stores the bytes of an async sequence of byte buffers (for example a network body) as the blob
    /// `name`. At most a few buffers wait between the sequence and the pipeline, so a fast producer is
    /// held back rather than buffered. If the sequence throws, nothing is stored and its error is
    /// rethrown inside a ``CofferError`` (`.io`).
    @discardableResult
    public func write<Bytes: AsyncSequence>(
        _ name: String,
        from sequence: Bytes,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo where Bytes.Element: DataProtocol {
        let channel = BoundedChannel<[UInt8]>(capacity: 8)
        let blobs = self
        let writing = Task.detached { () -> Result<BlobInfo, CofferError> in
            do throws(CofferError) {
                return .success(
                    try await offload { () throws(CofferError) in
                        var source = ChannelSource(channel: channel)
                        defer { channel.cancel() }
                        return try blobs.write(name, from: &source, options: options, progress: progress)
                    }
                )
            } catch {
                return .failure(error)
            }
        }
        do {
            for try await piece in sequence {
                if piece.isEmpty { continue }
                guard await channel.send(Array(piece)) else { break }
            }
            channel.finish()
        } catch {
            channel.finish(throwing: CofferError(.io, "the input sequence failed: \(error)"))
        }
        return try await writing.value.get()
    }

    package func write(
        _ name: String,
        from source: inout some ByteSource,
        options: BlobWriteOptions,
        progress: BlobProgress?
    ) throws(CofferError) -> BlobInfo {
        try writer(name, options: options, progress: progress).write(from: &source)
    }

    // MARK: Reading

    /// The content of the blob `name`, or of the bytes in `range` of it, in memory. For large blobs,
    /// prefer ``read(_:range:toFileDescriptor:progress:)-52aph`` or ``bytes(_:range:)``.
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is no such blob, `.param` if `range` is outside
    ///   it, `.interactionNotAllowed` if it is `whenUnlocked` and the vault is locked, `.decode` naming
    ///   the blob if any part of it fails authentication.
    public func data(_ name: String, range: Range<Int64>? = nil) throws(CofferError) -> Data {
        var sink = DataSink()
        try reader().read(name, range: range, to: &sink)
        return sink.data
    }

    /// Streams the blob `name` (or the bytes in `range` of it) to `fileDescriptor`.
    @discardableResult
    public func read(
        _ name: String,
        range: Range<Int64>? = nil,
        toFileDescriptor fileDescriptor: Int32,
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        var sink = FileDescriptorSink(descriptor: fileDescriptor)
        return try reader().read(name, range: range, to: &sink, progress: progress)
    }

    /// Writes the blob `name` (or the bytes in `range` of it) to a new file at `url`, replacing any
    /// file there only once everything has been read and checked; on failure no file is left behind.
    /// Through a symbolic link, its target is replaced and the link kept. A device, FIFO or socket at
    /// `url`, or `/dev/stdout` and the like, is written in place; a directory is refused (`.param`).
    @discardableResult
    public func read(
        _ name: String,
        range: Range<Int64>? = nil,
        to url: URL,
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        try vault.refuseOwnFile(url, reading: false)
        var file = try FileOutput(path: url.path)
        let info = try reader().read(name, range: range, to: &file, progress: progress)
        try file.commit()
        return info
    }

    /// The content of the blob `name` (or the bytes in `range` of it) as an async sequence of pieces.
    /// Chunks are decrypted ahead on other threads, a few at a time: a slow consumer holds the
    /// reading back rather than letting it buffer. Errors (as in ``data(_:range:)-5buhq``) end the sequence.
    public func bytes(_ name: String, range: Range<Int64>? = nil) -> BlobByteStream {
        let channel = BoundedChannel<Data>(capacity: 8)
        let blobs = self
        Thread.detachNewThread {
            do {
                var sink = ClosureSink { (bytes) throws(CofferError) in
                    guard channel.send(Data(bytes)) else {
                        throw CofferError(.userCanceled, "the reader stopped consuming the blob")
                    }
                }
                try blobs.reader().read(name, range: range, to: &sink)
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
        return BlobByteStream(channel: ConsumerHandle(channel: channel))
    }

    /// The description of the blob `name`.
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is none.
    public func stat(_ name: String) throws(CofferError) -> BlobInfo {
        try reader().manifest(of: name).info
    }

    /// Whether a blob named `name` exists.
    public func contains(_ name: String) throws(CofferError) -> Bool {
        do {
            _ = try stat(name)
            return true
        } catch  where error.code == .itemNotFound {
            return false
        }
    }

    /// Every blob, sorted by name.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` while the vault is locked if any blob is
    ///   `whenUnlocked` (a listing never silently leaves blobs out), `.decode` if a manifest is damaged.
    public func list() throws(CofferError) -> [BlobInfo] {
        try manifests(skippingLocked: false).map(\.info)
    }

    /// Every blob whose name starts with `prefix`, sorted by name: `list(prefix: "photos/")` for
    /// the blobs under a folder-like name. An empty prefix lists every blob, as ``list()-7kuiv`` does.
    /// Names are sealed, so the listing still opens every manifest.
    ///
    /// - Throws: The errors of ``list()-7kuiv``: `.interactionNotAllowed` while the vault is locked if any
    ///   blob, of this prefix or not, is `whenUnlocked`, since its name cannot be read to leave it out.
    public func list(prefix: String) throws(CofferError) -> [BlobInfo] {
        try manifests(skippingLocked: false).filter { $0.displayName.hasPrefix(prefix) }.map(\.info)
    }

    /// Every blob whose keys are in memory now, sorted by name: while the vault is locked, the
    /// `whenUnlocked` ones are left out (a mounted view does not show them), where ``list()`` throws.
    ///
    /// - Throws: ``CofferError`` `.decode` if a manifest is damaged.
    package func readableManifests() throws(CofferError) -> [BlobManifest] {
        try manifests(skippingLocked: true)
    }

    /// Every manifest, sorted by name; the ones whose keys are not in memory left out when
    /// `skippingLocked`, else they fail the listing.
    private func manifests(skippingLocked: Bool) throws(CofferError) -> [BlobManifest] {
        try vault.checkOpen()
        let keys = try vault.keyRing()
        let cipher = try makeCipher()
        let schema = vault.schema
        let manifests = try storage("listing the blobs") {
            try vault.environment.read { txn in
                var manifests: [BlobManifest] = []
                try txn.forEach(in: schema.blobs) { key, value in
                    do {
                        manifests.append(try BlobManifest.open(value, id: Array(key), keys: keys, cipher: cipher))
                    } catch let error as CofferError where skippingLocked && error.code == .interactionNotAllowed {}
                    return true
                }
                return manifests
            }
        }
        return manifests.sorted { $0.displayName < $1.displayName }
    }

    // MARK: Changing

    /// Deletes the blob `name`; its chunks are freed unless other blobs share them. On a full disk the
    /// vault's space reserve makes room for the deletion.
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is no such blob.
    public func delete(_ name: String) throws(CofferError) {
        let apply = try stagedDelete(name)
        try deletion("deleting blob '\(name)'", in: vault.environment) { txn in try apply(txn) }
    }

    /// ``delete(_:)`` run by the returned body in a write transaction (its own, or a
    /// `VaultTransaction`'s): `.itemNotFound` there if no blob has the name.
    package func stagedDelete(_ name: String) throws(CofferError) -> (Transaction) throws -> Void {
        try vault.checkOpen()
        let keys = try vault.keyRing()
        let coder = try ChunkRecord.Coder()
        let store = BlobStore(schema: vault.schema)
        return { txn in
            let found = try store.require(name, keys: keys, cipher: coder.cipher, in: txn)
            try store.remove(id: found.id, manifest: found.manifest, keys: keys, coder: coder, in: txn)
        }
    }

    /// A ``BlobWriter`` for `name`, for a write of this vault's, with the keys in memory now.
    package func writer(
        _ name: String,
        options: BlobWriteOptions,
        progress: BlobProgress?
    ) throws(CofferError) -> BlobWriter {
        try vault.checkOpen()
        return try BlobWriter(vault: vault, keys: try vault.keyRing(), name: name, options: options, progress: progress)
    }

    /// Renames the blob `name` to `newName`. Its content is not touched.
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is no such blob, `.duplicateItem` if a blob
    ///   named `newName` exists (delete it first), `.param` for an invalid name.
    public func rename(_ name: String, to newName: String) throws(CofferError) {
        try BlobManifest.validate(name: newName)
        try vault.checkOpen()
        let keys = try vault.keyRing()
        let cipher = try makeCipher()
        let store = BlobStore(schema: vault.schema)
        try storage("renaming blob '\(name)'") {
            try vault.environment.write { txn in
                var found = try store.require(name, keys: keys, cipher: cipher, in: txn)
                guard found.manifest.displayName != newName else { return }
                guard try store.lookup(newName, keys: keys, cipher: cipher, in: txn) == nil else {
                    throw CofferError(
                        .duplicateItem,
                        "a blob named '\(newName)' already exists; delete it first or choose another name"
                    )
                }
                let oldName = found.manifest.displayName
                found.manifest.name = newName
                // A write-only client's blob renamed by the owner is filed under its name from now on.
                found.manifest.isDrop = false
                let newID = try BlobManifest.id(of: newName, scope: found.manifest.scope, keys: keys)
                try txn.delete(store.schema.blobs, key: found.id)
                try txn.put(
                    store.schema.blobs,
                    key: newID,
                    value: try found.manifest.seal(id: newID, keys: keys, cipher: cipher)
                )
                try ChangeLog.record(
                    .blobDelete,
                    recordID: found.id,
                    scope: found.manifest.scope,
                    description: LocalJournal.Description(name: oldName),
                    keys: keys,
                    in: txn,
                    schema: store.schema
                )
                try ChangeLog.record(
                    .blobPut,
                    recordID: newID,
                    scope: found.manifest.scope,
                    description: found.manifest.changeDescription,
                    keys: keys,
                    in: txn,
                    schema: store.schema
                )
            }
        }
    }

    // MARK: Internals

    package func reader() throws(CofferError) -> BlobReader {
        try vault.checkOpen()
        return BlobReader(vault: vault, keys: try vault.keyRing())
    }

    package func makeCipher() throws(CofferError) -> AESGCM {
        do {
            return try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }
}

/// A blob's content as an async sequence of pieces, from ``Blobs/bytes(_:range:)``.
public struct BlobByteStream: AsyncSequence, Sendable {
    /// Each piece is a run of the blob's bytes, in order.
    public typealias Element = Data

    package let channel: ConsumerHandle

    /// Iterates the pieces in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        package let channel: ConsumerHandle

        /// The next piece, or `nil` at the end.
        ///
        /// - Throws: ``CofferError`` as ``Blobs/data(_:range:)-5buhq`` does.
        public mutating func next() async throws -> Data? {
            try await channel.channel.receive()
        }
    }

    /// An iterator over the pieces. The sequence can be iterated once.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }
}

/// The consuming end of a stream's channel: when the last sequence and iterator holding it are gone,
/// the reading thread is told to stop rather than wait for a consumer that will never come.
package final class ConsumerHandle: Sendable {
    package let channel: BoundedChannel<Data>

    package init(channel: BoundedChannel<Data>) {
        self.channel = channel
    }

    deinit { channel.cancel() }
}
