import Foundation

/// Where in an S3-compatible object store a sync group's bundles live: `s3://BUCKET/PREFIX`.
///
/// Objects go under `PREFIX/`: one folder per device (named by its device id) holding that device's
/// bundles and its head object (docs/FORMAT.md, "Remote layout").
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    /// The bucket.
    public let bucket: String
    /// The key prefix, without leading or trailing slashes; empty for the bucket's root.
    public let prefix: String

    /// Parses `s3://BUCKET` or `s3://BUCKET/PREFIX`.
    ///
    /// - Throws: ``CofferError`` `.param` if `url` is not of that form or the bucket name is not a
    ///   valid S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens).
    public init(_ url: String) throws(CofferError) {
        guard url.hasPrefix("s3://") else {
            throw CofferError(.param, "'\(url)' is not an S3 location; write it as s3://BUCKET/PREFIX")
        }
        let rest = url.dropFirst("s3://".count)
        let bucket = rest.prefix { $0 != "/" }
        let prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        try self.init(bucket: String(bucket), prefix: prefix)
    }

    /// A bucket and prefix.
    ///
    /// - Throws: ``CofferError`` `.param` for an invalid bucket name or a prefix with control
    ///   characters or more than 512 bytes.
    public init(bucket: String, prefix: String = "") throws(CofferError) {
        let allowed = bucket.utf8.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
        }
        guard (3...63).contains(bucket.utf8.count), allowed, bucket.first != "-", bucket.first != "." else {
            throw CofferError(
                .param,
                "'\(bucket)' is not a valid bucket name; use 3 to 63 lower-case letters, digits, dots and hyphens"
            )
        }
        let trimmed = prefix.split(separator: "/").joined(separator: "/")
        guard trimmed.utf8.count <= 512,
            !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw CofferError(.param, "the S3 prefix '\(prefix)' is too long or holds control characters")
        }
        self.bucket = bucket
        self.prefix = trimmed
    }

    /// The object key for `name` under the prefix.
    package func key(_ name: String) -> String { prefix.isEmpty ? name : "\(prefix)/\(name)" }

    /// `s3://BUCKET/PREFIX`.
    public var description: String { prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)" }
}
