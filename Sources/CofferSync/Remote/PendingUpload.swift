import Foundation

/// A push's bundle upload in progress, kept in `meta` under `remote-upload <remote identity>` so that
/// a push killed midway resumes with the parts it had sent (docs/FORMAT.md, "Remote layout"):
///
/// ```
/// state (UInt64) ‖ key ‖ upload id ‖ salt ‖ nonce prefix ‖ count (UInt32) ‖ [etag ‖ SHA-256 (32)] × count
/// ```
///
/// (strings and byte strings after a `UInt16` length). `state` is the id of the transaction that
/// last wrote the entry, so the vault's state after it: when the next push finds the vault still in
/// it, nothing has changed, and the export, made again with the same salt and nonce prefix, comes out
/// byte for byte the same, so the parts sent (checked by their digests) are kept. Otherwise the
/// upload is abandoned and the push starts afresh, with new ones (a stream must never reuse a nonce
/// on other contents).
package struct PendingUpload: Equatable {
    package var state: UInt64
    package var key: String
    package var uploadID: String
    package var salt: [UInt8]
    package var noncePrefix: [UInt8]
    /// One part sent: its entity tag and the SHA-256 of its bytes.
    package struct Part: Equatable, Sendable {
        package let etag: String
        package let digest: [UInt8]

        package init(etag: String, digest: [UInt8]) {
            self.etag = etag
            self.digest = digest
        }
    }

    /// The parts sent so far, in order.
    package var parts: [Part]

    package init(key: String, uploadID: String, salt: [UInt8], noncePrefix: [UInt8]) {
        state = 0
        self.key = key
        self.uploadID = uploadID
        self.salt = salt
        self.noncePrefix = noncePrefix
        parts = []
    }

    /// The `meta` entry of the upload to `remote`.
    package static func metaKey(_ remote: String) -> [UInt8] { Array("remote-upload \(remote)".utf8) }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(state)
        writer.write(lengthPrefixed: Array(key.utf8))
        writer.write(lengthPrefixed: Array(uploadID.utf8))
        writer.write(lengthPrefixed: salt)
        writer.write(lengthPrefixed: noncePrefix)
        writer.write(UInt32(parts.count))
        for part in parts {
            writer.write(lengthPrefixed: Array(part.etag.utf8))
            writer.write(raw: part.digest)
        }
        return writer.bytes
    }

    package init(decoding bytes: [UInt8], remote: String) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "the upload in progress to \(remote)")
        state = try reader.readUInt64()
        key = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
        uploadID = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
        salt = try reader.readLengthPrefixed()
        noncePrefix = try reader.readLengthPrefixed()
        parts = []
        for _ in 0..<(try reader.readUInt32()) {
            let etag = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
            parts.append(Part(etag: etag, digest: try reader.readBytes(32)))
        }
        try reader.finish()
    }

    /// Stores the entry in `txn`, stamped with that transaction's id.
    package mutating func store(in txn: Transaction, schema: Schema, remote: String) throws {
        state = txn.snapshotID
        try txn.put(schema.meta, key: Self.metaKey(remote), value: encoded)
    }

    /// The entry for `remote` in `txn`, if any, with whether the vault is still in the state it
    /// left (nothing written since).
    package static func load(
        in txn: Transaction,
        schema: Schema,
        remote: String
    ) throws -> (upload: PendingUpload, unchanged: Bool)? {
        guard let bytes = try txn.get(schema.meta, key: metaKey(remote)) else { return nil }
        let upload = try PendingUpload(decoding: bytes, remote: remote)
        return (upload, upload.state == txn.snapshotID)
    }
}
