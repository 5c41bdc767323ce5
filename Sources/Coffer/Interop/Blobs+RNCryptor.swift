public import Foundation

extension Blobs {
    /// Stores the plaintext of an RNCryptor v3 (password-based) file as the blob `name`, streaming.
    ///
    /// The file's HMAC is checked as its last bytes arrive and before the blob commits, so a wrong
    /// password or an altered file stores nothing (the chunks written so far are released).
    ///
    /// - Throws: ``CofferError`` `.authFailed` for a wrong password or an altered file,
    ///   `.unsupportedFormat` for another RNCryptor version or a key-based file, `.decode` for a
    ///   truncated one, and the errors of ``write(_:contentsOf:options:progress:)-3ln0e``.
    @discardableResult
    public func importRNCryptor(
        _ name: String,
        from url: URL,
        password: String,
        options: BlobWriteOptions = BlobWriteOptions(),
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        try vault.refuseOwnFile(url, reading: true)
        let file = try InputFile(path: url.path)
        var source = RNCryptor.DecryptingSource(
            base: FileDescriptorSource(descriptor: file.descriptor),
            password: Array(password.utf8)
        )
        return try write(name, from: &source, options: options, progress: progress)
    }

    /// Stores the plaintext of RNCryptor v3 data already in memory; see
    /// ``importRNCryptor(_:from:password:options:progress:)-837bv``.
    @discardableResult
    public func importRNCryptor(
        _ name: String,
        data: some DataProtocol,
        password: String,
        options: BlobWriteOptions = BlobWriteOptions()
    ) throws(CofferError) -> BlobInfo {
        var source = RNCryptor.DecryptingSource(base: DataSource(data), password: Array(password.utf8))
        return try write(name, from: &source, options: options, progress: nil)
    }

    /// Writes the blob `name` as an RNCryptor v3 file (password-based, fresh salts and IV) at `url`,
    /// streaming; the file appears only when complete.
    @discardableResult
    public func exportRNCryptor(
        _ name: String,
        to url: URL,
        password: String,
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        try vault.refuseOwnFile(url, reading: false)
        let file = try FileOutput(path: url.path)
        var sink = try RNCryptor.EncryptingSink(base: file, password: Array(password.utf8))
        let info = try reader().read(name, to: &sink, progress: progress)
        try sink.finish()
        try file.commit()
        return info
    }

    /// The blob `name` as RNCryptor v3 data in memory; see ``exportRNCryptor(_:to:password:progress:)-31tys``.
    public func rncryptorData(_ name: String, password: String) throws(CofferError) -> Data {
        var sink = try RNCryptor.EncryptingSink(base: DataSink(), password: Array(password.utf8))
        try reader().read(name, to: &sink)
        try sink.finish()
        return sink.base.data
    }
}
