public import Foundation

/// What a push to an object store did.
public struct PushSummary: Sendable, Equatable, Codable {
    /// The remote, `s3://BUCKET/PREFIX`.
    public var remote: String
    /// The bundle object uploaded, or `nil` when nothing had changed since the last push.
    public var object: String?
    /// The export behind the bundle (incremental after the first push).
    public var export: ExportSummary
    /// Parts of the upload kept from an earlier push of the same bundle that was interrupted, and so
    /// not sent again.
    public var resumedParts = 0
    /// What the push found and did that the user should know: a head of this device it ignored (not
    /// signed by it), a store rolled back (sent again), this vault found to be a restored or cloned
    /// copy (re-enrolled as a new device).
    public var notices: [String] = []
    /// A checkpoint this push wrote because the store had lost changes of the group (the checkpoint
    /// that held them stopped counting after its compaction deleted their bundles), or `nil`.
    public var repairCheckpoint: String?

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
    /// Of ``revokedDevices``, those with bundles in the store past the changes this vault applied
    /// from them: changes made before the revocation that this vault had not pulled, or had refused
    /// for the device's clock, which no member applies now.
    public var revokedDevicesNotApplied: [UUID] = []
    /// The checkpoints applied (their bundles' keys): this vault lacked changes that compaction had
    /// removed the bundles of.
    public var checkpoints: [String] = []
    /// What the pull found and did that the user should know: heads and cuts it ignored (not signed
    /// by an active member), this vault found to be a restored or cloned copy (re-enrolled).
    public var notices: [String] = []
    /// Devices whose changes from some point on were not applied and wait: behind an object this
    /// vault cannot read (damaged, or sealed in a key epoch it does not hold yet), or after changes
    /// that no bundle or checkpoint in the store holds. The notices say which and why; a later pull
    /// applies them once what they wait for arrives.
    public var waitingDevices: [UUID] = []
    /// Checkpoints this vault could not use yet (their bundles' keys): sealed in a key epoch it does
    /// not hold, or needed and unusable (overwritten, cut short, or carrying a made-up chunk) while
    /// no other object brought the changes they name. What only they hold waits.
    public var waitingCheckpoints: [String] = []
    /// Records the checkpoints applied held that were refused for clock stamps ahead of this
    /// machine's clock (the bundles' are in ``bundles``): a later pull imports those checkpoints
    /// again until their time has come.
    public var refusedFutureRecords = 0
    /// The devices those records name, with the latest stamp refused of each.
    public var devicesAhead: [UUID: Date] = [:]

    /// Whether some changes in the store were left for a later pull (``waitingDevices``,
    /// ``waitingCheckpoints``).
    public var isIncomplete: Bool { !waitingDevices.isEmpty || !waitingCheckpoints.isEmpty }

    /// Notes that `device`'s changes wait, once however many reasons the pull finds.
    package mutating func noteWaiting(_ device: UUID) {
        if !waitingDevices.contains(device) { waitingDevices.append(device) }
    }

    package init(remote: String) { self.remote = remote }
}

/// What ``Vault/compact(remote:progress:)-1cnf4`` did.
public struct CompactSummary: Sendable, Equatable, Codable {
    /// The remote, `s3://BUCKET/PREFIX`.
    public var remote: String
    /// The checkpoint bundle written.
    public var checkpoint: String
    /// Its size.
    public var checkpointBytes: Int64 = 0
    /// Objects deleted: bundles the checkpoint holds everything of, and checkpoints it supersedes.
    public var deletedObjects = 0
    /// Their bytes.
    public var deletedBytes: Int64 = 0
    /// The bytes under the prefix before the compaction, and after.
    public var storedBytesBefore: Int64 = 0
    /// The bytes under the prefix after the compaction.
    public var storedBytesAfter: Int64 = 0
    /// The other checkpoints this one does not replace, each the key of its bundle: written while
    /// this compaction ran, or naming changes this one does not hold (its cut does not cover theirs).
    /// The next compaction whose checkpoint covers them deletes them.
    public var keptCheckpoints: [String] = []
    /// What the pull and push before it reported (see ``PullSummary/notices`` and
    /// ``PushSummary/notices``).
    public var notices: [String] = []

    package init(remote: String, checkpoint: String) {
        self.remote = remote
        self.checkpoint = checkpoint
    }
}
