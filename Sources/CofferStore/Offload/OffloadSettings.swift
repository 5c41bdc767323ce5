import Foundation

/// The object store a vault offloaded chunks to, and how much chunk data it keeps locally: meta
/// `offload` (docs/FORMAT.md, "Chunks in the object store"), text lines of `name value`:
///
/// ```
/// remote <identity: endpoint, bucket and prefix>
/// location s3://BUCKET/PREFIX
/// endpoint <URL, when the store is not AWS S3>
/// region <signing region>
/// keep <bytes of offloaded chunks kept locally>
/// ```
///
/// Credentials are never stored: the store is attached again with those of the environment.
package struct OffloadSettings: Equatable, Sendable {
    /// The meta key.
    package static let metaKey = Array("offload".utf8)

    /// The store's identity (what ``StoreObject/remote`` holds).
    package var remote: String
    /// The bucket and prefix, as `s3://BUCKET/PREFIX`.
    package var location: String
    /// The store's URL when it is not AWS S3.
    package var endpoint: String?
    /// The signing region.
    package var region: String
    /// The most bytes of offloaded chunks' records kept locally (the cache budget).
    package var keep: UInt64

    package init(remote: String, location: String, endpoint: String?, region: String, keep: UInt64) {
        self.remote = remote
        self.location = location
        self.endpoint = endpoint
        self.region = region
        self.keep = keep
    }

    /// The vault's settings, or `nil` when it never offloaded.
    package static func load(in txn: Transaction, schema: Schema) throws -> OffloadSettings? {
        guard let stored = try txn.get(schema.meta, key: metaKey) else { return nil }
        return try OffloadSettings(decoding: stored)
    }

    /// Stores the settings.
    package func store(in txn: Transaction, schema: Schema) throws {
        try txn.put(schema.meta, key: Self.metaKey, value: encoded)
    }

    package var encoded: [UInt8] {
        var lines = ["remote \(remote)", "location \(location)"]
        if let endpoint { lines.append("endpoint \(endpoint)") }
        lines += ["region \(region)", "keep \(keep)"]
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var fields: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            fields[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        guard let remote = fields["remote"], let location = fields["location"], let region = fields["region"],
            let keep = fields["keep"].flatMap({ UInt64($0) })
        else {
            throw CofferError(.decode, "the vault's offload settings (meta offload) are damaged")
        }
        self.init(remote: remote, location: location, endpoint: fields["endpoint"], region: region, keep: keep)
    }
}
