public import Foundation

/// The asynchronous forms of the RNCryptor import and export. Each runs its synchronous twin on a
/// global dispatch queue, so PBKDF2 (the password's key derivation), the pipelines and LMDB's blocking
/// I/O never occupy a thread of Swift's cooperative pool. In an `async` function Swift picks these;
/// the two forms have the same semantics and throw the same errors.
extension Blobs {
    /// Stores the plaintext of an RNCryptor v3 file as the blob `name`; see
    /// ``importRNCryptor(_:from:password:options:progress:)-837bv``.
    @discardableResult
    public func importRNCryptor(
        _ name: String,
        from url: URL,
        password: String,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.importRNCryptor(name, from: url, password: password, options: options, progress: progress)
        }
    }

    /// Stores the plaintext of RNCryptor v3 data already in memory; see
    /// ``importRNCryptor(_:data:password:options:)-(_,DataProtocol,_,_)``.
    @discardableResult
    public func importRNCryptor(
        _ name: String,
        data: some DataProtocol & Sendable,
        password: String,
        options: BlobWriteOptions = BlobWriteOptions()
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.importRNCryptor(name, data: data, password: password, options: options)
        }
    }

    /// Writes the blob `name` as an RNCryptor v3 file at `url`; see
    /// ``exportRNCryptor(_:to:password:progress:)-31tys``.
    @discardableResult
    public func exportRNCryptor(
        _ name: String,
        to url: URL,
        password: String,
        progress: BlobProgress? = nil
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in
            try self.exportRNCryptor(name, to: url, password: password, progress: progress)
        }
    }

    /// The blob `name` as RNCryptor v3 data in memory; see ``rncryptorData(_:password:)-8sv8c``.
    public func rncryptorData(_ name: String, password: String) async throws(CofferError) -> Data {
        try await offload { () throws(CofferError) in try self.rncryptorData(name, password: password) }
    }
}
