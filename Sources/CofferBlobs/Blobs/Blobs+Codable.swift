import Foundation

extension Blobs {
    /// Stores `value`, encoded as JSON (sorted keys, dates as seconds since 2001, data as base64; see docs/EMBEDDING.md), as the blob `name`, replacing
    /// any blob of that name: for settings, manifests and other structured data kept beside files.
    ///
    /// - Throws: ``CofferError`` `.param` if the value cannot be encoded, and the errors of
    ///   ``write(_:data:options:progress:)-(_,DataProtocol,_,_)``.
    @discardableResult
    public func write(
        _ name: String,
        encoding value: some Encodable,
        options: BlobWriteOptions = BlobWriteOptions()
    )
        throws(CofferError) -> BlobInfo
    {
        try write(
            name,
            data: try TypedValueCoding.encode(value, what: "the value for blob '\(name)'"),
            options: options
        )
    }

    /// The blob `name`, decoded as a `T` from JSON.
    ///
    /// - Throws: ``CofferError`` `.decode` if the blob is not a `T` in JSON, and the errors of
    ///   ``data(_:range:)-5buhq``.
    public func value<T: Decodable>(_ name: String, as type: T.Type = T.self) throws(CofferError) -> T {
        try TypedValueCoding.decode(T.self, from: try data(name), what: "blob '\(name)'")
    }
}

extension Blobs {
    /// Stores `value`, encoded as JSON, as the blob `name`; see
    /// ``write(_:encoding:options:)-(_,Encodable,_)``.
    @discardableResult
    public func write(
        _ name: String,
        encoding value: some Encodable & Sendable,
        options: BlobWriteOptions = BlobWriteOptions()
    ) async throws(CofferError) -> BlobInfo {
        try await offload { () throws(CofferError) in try self.write(name, encoding: value, options: options) }
    }

    /// The blob `name`, decoded as a `T` from JSON; see ``value(_:as:)-7skl8``.
    public func value<T: Decodable & Sendable>(_ name: String, as type: T.Type = T.self) async throws(CofferError) -> T
    {
        try await offload { () throws(CofferError) in try self.value(name, as: T.self) }
    }
}
