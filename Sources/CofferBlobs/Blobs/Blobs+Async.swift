public import Foundation

/// The asynchronous forms of the blob operations. Each runs its synchronous twin on a global dispatch
/// queue, so the write and read pipelines' waits and LMDB's blocking I/O never occupy a thread of
/// Swift's cooperative pool. In an `async` function Swift picks these; the two forms have the same
/// semantics and throw the same errors. Progress is reported on the pipeline's threads, as in the
/// synchronous forms.
extension Blobs {
    /// Stores `data` as the blob `name`; see ``write(_:data:options:progress:)-(_,DataProtocol,_,_)``.
    @discardableResult
    public func write(
        _ name: String,
        data: some DataProtocol & Sendable,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.write(name, data: data, options: options, progress: progress)
        }
    }

    /// Stores the contents of the file at `url` as the blob `name`; see
    /// ``write(_:contentsOf:options:progress:)-3ln0e``.
    @discardableResult
    public func write(
        _ name: String,
        contentsOf url: URL,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.write(name, contentsOf: url, options: options, progress: progress)
        }
    }

    /// Stores everything readable from `fileDescriptor` as the blob `name`; see
    /// ``write(_:fileDescriptor:options:progress:)-2b7nv``.
    @discardableResult
    public func write(
        _ name: String,
        fileDescriptor: Int32,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.write(name, fileDescriptor: fileDescriptor, options: options, progress: progress)
        }
    }

    /// The content of the blob `name` in memory; see ``data(_:range:)-5buhq``.
    public func data(_ name: String, range: Range<Int64>? = nil) async throws(CofferError) -> Data {
        try await offload { () throws(CofferError) in try self.data(name, range: range) }
    }

    /// Streams the blob `name` to `fileDescriptor`; see ``read(_:range:toFileDescriptor:progress:)-52aph``.
    @discardableResult
    public func read(
        _ name: String,
        range: Range<Int64>? = nil,
        toFileDescriptor fileDescriptor: Int32,
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.read(name, range: range, toFileDescriptor: fileDescriptor, progress: progress)
        }
    }

    /// Writes the blob `name` to a new file at `url`; see ``read(_:range:to:progress:)-1c931``.
    @discardableResult
    public func read(
        _ name: String,
        range: Range<Int64>? = nil,
        to url: URL,
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in try self.read(name, range: range, to: url, progress: progress) }
    }

    /// The description of the blob `name`; see ``stat(_:)-1nwjp``.
    public func stat(_ name: String) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in try self.stat(name) }
    }

    /// Whether a blob named `name` exists; see ``contains(_:)-6z10y``.
    public func contains(_ name: String) async throws(CofferError) -> Bool {
        try await offload { () throws(CofferError) in try self.contains(name) }
    }

    /// Every blob, sorted by name; see ``list()-7kuiv``.
    public func list() async throws(CofferError) -> [BlobInfo] {
        try await offload { () throws(CofferError) in try self.list() }
    }

    /// Every blob whose name starts with `prefix`; see ``list(prefix:)-1pi4s``.
    public func list(prefix: String) async throws(CofferError) -> [BlobInfo] {
        try await offload { () throws(CofferError) in try self.list(prefix: prefix) }
    }

    /// Deletes the blob `name`; see ``delete(_:)-3dciy``.
    public func delete(_ name: String) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.delete(name) }
    }

    /// Renames the blob `name` to `newName`; see ``rename(_:to:)-8uazm``.
    public func rename(_ name: String, to newName: String) async throws(CofferError) {
        try await offload { () throws(CofferError) in try self.rename(name, to: newName) }
    }
}
