public import Foundation

/// What a push to an object store did.
public struct PushSummary: Sendable, Equatable, Codable {
    /// The remote, `s3://BUCKET/PREFIX`.
    public var remote: String
    /// The bundle object uploaded, or `nil` when nothing had changed since the last push.
    public var object: String?
    /// The export behind the bundle (incremental after the first push).
    public var export: ExportSummary
    /// Bundle objects of earlier pushes that stopped before writing their head (never visible to
    /// pulls), removed.
    public var removedIncomplete = 0

    package init(remote: String, export: ExportSummary) {
        self.remote = remote
        self.export = export
    }
}

/// One bundle object a pull applied.
public struct PulledBundle: Sendable, Equatable, Codable {
    /// The object's key.
    public var object: String
    /// What importing it did.
    public var imported: ImportSummary
}

/// What a pull from an object store did.
public struct PullSummary: Sendable, Equatable, Codable {
    /// The remote, `s3://BUCKET/PREFIX`.
    public var remote: String
    /// The other devices that have pushed there.
    public var devices = 0
    /// The bundles applied, in order.
    public var bundles: [PulledBundle] = []
    /// The records the bundles changed here, added up.
    public var applied = SyncRecordCounts()
    /// Bytes downloaded.
    public var bytes: Int64 = 0
    /// Devices whose objects were left alone because this vault's membership log revokes them.
    public var revokedDevices: [UUID] = []

    package init(remote: String) { self.remote = remote }
}
