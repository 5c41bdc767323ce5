public import Foundation

/// An S3-compatible object store and the place in it where a sync group exchanges bundles: what
/// ``Vault/push(to:progress:)-4qpe7``, ``Vault/pull(from:progress:)-1vcpy`` and
/// ``Vault/join(remote:at:passphrase:configuration:content:progress:)-3lqih`` take.
///
/// ```swift
/// // AWS S3: region from AWS_REGION, virtual-hosted addressing
/// let aws = S3Remote(try S3Location("s3://ann-backups/coffer"), credentials: try .fromEnvironment())
/// // MinIO, Ceph RGW or SeaweedFS: give the endpoint; path-style addressing
/// let local = S3Remote(
///     try S3Location("s3://coffer/laptop-sync"),
///     credentials: try .fromEnvironment(),
///     endpoint: URL(string: "http://127.0.0.1:8333")!
/// )
/// ```
public struct S3Remote: Sendable {
    /// How the bucket appears in request URLs.
    public enum Addressing: Sendable {
        /// `https://endpoint/BUCKET/KEY`: what MinIO, Ceph RGW and SeaweedFS expect.
        case path
        /// `https://BUCKET.endpoint/KEY`: what AWS S3 expects for new buckets.
        case virtualHosted
    }

    /// The bucket and prefix.
    public var location: S3Location
    /// The keys that sign requests.
    public var credentials: S3Credentials
    /// The store's base URL (scheme, host, port).
    public var endpoint: URL
    /// The region requests are signed for.
    public var region: String
    /// How the bucket is addressed.
    public var addressing: Addressing
    /// The size of each part of a multipart upload, and the largest object sent in one request
    /// (5 MiB to 5 GiB; the default is 16 MiB). Memory used by an upload is about one part.
    public var partSize = 16 << 20
    /// The most bytes per second to send, averaged over each request (a part, at most
    /// ``partSize``); `nil` sends as fast as the store takes them.
    public var uploadLimit: Int?
    /// The most bytes per second to receive, averaged over each request (a pull reads objects in
    /// ranges of about one second's worth at this rate, 256 KiB to 8 MiB); `nil` for no limit.
    public var downloadLimit: Int?

    /// A remote at `location`.
    ///
    /// - Parameters:
    ///   - location: The bucket and prefix.
    ///   - credentials: The signing keys.
    ///   - endpoint: The store's URL; by default `AWS_ENDPOINT_URL` if set, else AWS S3 in `region`.
    ///     Giving an endpoint selects path-style addressing, which S3-compatible stores expect.
    ///   - region: The signing region; by default the credentials' region, else `us-east-1`.
    public init(_ location: S3Location, credentials: S3Credentials, endpoint: URL? = nil, region: String? = nil) {
        let region = region ?? credentials.region ?? "us-east-1"
        let configured =
            endpoint ?? ProcessInfo.processInfo.environment["AWS_ENDPOINT_URL"].flatMap { URL(string: $0) }
        self.location = location
        self.credentials = credentials
        self.region = region
        self.endpoint = configured ?? URL(string: "https://s3.\(region).amazonaws.com")!
        self.addressing = configured == nil ? .virtualHosted : .path
    }

    /// Creates the bucket unless it exists (in ``region``).
    ///
    /// - Throws: ``CofferError`` `.authFailed` if the credentials may not, `.io` if the store cannot be
    ///   reached.
    public func createBucketIfMissing() throws(CofferError) {
        try S3Client(self).createBucketIfMissing()
    }

    /// A stable name for this remote: endpoint, bucket and prefix (never the credentials). The vault
    /// remembers, under this name, how far it has pulled each device's bundles.
    package var identity: String {
        let host = endpoint.host ?? ""
        let port = endpoint.port.map { ":\($0)" } ?? ""
        return "\(endpoint.scheme ?? "https")://\(host)\(port) \(location)"
    }
}
