public import Foundation

/// Called with the number of bundle bytes written or read so far, from the thread doing the work.
public typealias SyncProgress = @Sendable (Int64) -> Void

/// Counts of syncable records by kind.
public struct SyncRecordCounts: Sendable, Equatable, Codable {
    /// Keychain items.
    public var items = 0
    /// Blobs.
    public var blobs = 0
    /// Snapshots.
    public var snapshots = 0
    /// Deletions (tombstones) of any kind.
    public var deletions = 0

    /// All of them.
    public var total: Int { items + blobs + snapshots + deletions }

    /// No records.
    public init() {}

    /// Adds `other`'s counts to these.
    package mutating func add(_ other: SyncRecordCounts) {
        items += other.items
        blobs += other.blobs
        snapshots += other.snapshots
        deletions += other.deletions
    }

    package mutating func count(_ kind: SyncRecordKind, deleted: Bool) {
        if deleted {
            deletions += 1
            return
        }
        switch kind {
        case .item: items += 1
        case .blob: blobs += 1
        case .snapshot: snapshots += 1
        }
    }
}

/// What an export wrote.
public struct ExportSummary: Sendable, Equatable, Codable {
    /// The peer the export was for, if any.
    public var peer: String?
    /// Whether only the changes since the last export to `peer` were written (otherwise everything
    /// syncable was).
    public var isIncremental = false
    /// The change sequences covered: changes after `firstSequence - 1` up to `lastSequence`.
    public var firstSequence: UInt64 = 1
    /// The vault's latest change when the export ran.
    public var lastSequence: UInt64 = 0
    /// The records written (live records and deletions).
    public var records = SyncRecordCounts()
    /// The chunks written.
    public var chunks = 0
    /// Chunks this vault asked its peers for in the bundle: what its held-back records lack.
    public var wantedChunks = 0
    /// Devices this vault asked, in the bundle, to resend their changes from a gap (one of their
    /// bundles never arrived here).
    public var resendRequests = 0
    /// Whether the bundle starts earlier than the peer's cursor because another device asked for a
    /// resend (a bundle of this vault's was lost on the way to it).
    public var resent = false
    /// The size of the bundle file.
    public var bytes: Int64 = 0
    /// How many device-bound records (items, blobs, snapshots) the vault holds, none of which was
    /// written; counted by full exports only (`nil` for an incremental one, whose cost follows the
    /// changes and so does not scan the vault).
    public var deviceBoundLeftBehind: Int?
    /// Records left out of a push because the object store holds them already: a pull from it
    /// brought them, and nothing changed them since.
    public var alreadyInStore = 0
    /// Chunks this vault offloaded that the object store no longer gives (no object it knows of
    /// holding them is listed, or every one is damaged), left out so that the rest goes: the records
    /// that use them wait at the other devices until a device that holds them answers their request.
    public var lostChunks = 0
    /// Records a push sent again although the store holds them: a pull brought them from the
    /// bundles of a device revoked since, which the other devices refuse, or from objects signed
    /// with keys a device has replaced since (a rekey), which they skip.
    public var resentFromRevoked = 0
    /// Whether the sync group is frozen, so no record was written: its membership log is full, or
    /// a member's log would have made it overflow (docs/FORMAT.md, "A full log freezes the group").
    /// The bundle carries the log alone, so the device that reads it learns the group is frozen.
    public var groupLogFull = false

    /// An empty summary.
    public init() {}
}

/// What an import did.
public struct ImportSummary: Sendable, Equatable, Codable {
    /// The device that exported the bundle.
    public var sourceDevice: UUID
    /// The records that changed this vault (newer than what it held, or new to it).
    public var applied = SyncRecordCounts()
    /// Records this vault already held in the same version or a newer one: left alone.
    public var skipped = 0
    /// Records both sides had changed differently, decided by last writer wins (included in
    /// `applied` when the bundle's version won, in `skipped` when this vault's did).
    public var conflicts = 0
    /// Chunks in the bundle.
    public var chunks = 0
    /// Of those, the chunks this vault did not hold yet and keeps.
    public var newChunks = 0
    /// Device-bound blobs of this vault renamed to make room for a synced blob of the same name (a
    /// name is one blob): each keeps its content under ``renamedDeviceBoundBlobs``' new name.
    public var keptDeviceBoundBlobs = 0
    /// The new names of those device-bound blobs.
    public var renamedDeviceBoundBlobs: [String] = []
    /// Records held back because this vault lacks chunks they need (a peer left them out, believing
    /// this vault had them): kept, asked for in this vault's next bundles, and applied by the import
    /// that brings the chunks. Nothing is refused for good. Those that devices no longer members
    /// (revoked, or their join voided) sent are counted apart, in ``heldFromFormerMembers``.
    public var held = 0
    /// The devices whose bundles brought the records counted in ``held``, by device id (records held
    /// before Coffer noted senders are counted in ``held`` alone). A device that sent records whose
    /// data it never sends when asked made them up (red team round 44, G2): an honest sender held
    /// every chunk of what it sent.
    public var heldBySender: [HeldSender] = []
    /// Records held back that devices no longer members sent (revoked since, or their join voided):
    /// a device out of the group sends nothing more, so these wait for data it may never send. They
    /// are applied if it arrives, from any member, and no longer make an import incomplete.
    public var heldFromFormerMembers = 0
    /// Records held back earlier that this import could apply (their chunks arrived).
    public var appliedFromHeld = 0
    /// Records held back earlier that this import dropped: each refers to chunks of a write-only
    /// client's write that its keys do not open, so a modified client made it up (a member's stolen
    /// device, say). The genuine chunks that arrived with this bundle are kept.
    public var droppedForgedRecords = 0
    /// Records refused because their clock stamp lies further ahead of this machine's clock than
    /// ``Vault/Configuration/maximumClockSkew`` allows: a device with a wrong clock must not decide
    /// last-writer-wins for the whole group. Fix that device's clock; its next changes travel.
    public var refusedFutureRecords = 0
    /// The devices whose records were refused for their clock, with the furthest-ahead stamp's time.
    public var devicesAhead: [UUID: Date] = [:]
    /// Whether the bundle changed the group's membership log here (a device added or revoked, a new
    /// key epoch, a join policy).
    public var membershipChanged = false
    /// Whether the group's membership log is full after this import, which freezes the group: this
    /// vault seals no more records for it (``Vault/syncGroupIsFrozen()-7333l``).
    public var groupLogFull = false
    /// Whether this vault joined the group with this import (it had asked to join by approval).
    public var joinedGroup: Bool { joined != nil }
    /// The group this vault joined with this import, and the member that approved it.
    public var joined: JoinedBy?
    /// The size of the bundle file.
    public var bytes: Int64 = 0

    /// Whether something in the bundle could not be applied now (held or refused records).
    public var isIncomplete: Bool { held > 0 || refusedFutureRecords > 0 }

    /// Sets ``held``, ``heldFromFormerMembers`` and ``heldBySender`` from a tally of the records
    /// held back (``HeldRecords/tally(active:in:)``).
    package mutating func tallyHeld(_ tally: (waiting: Int, fromFormerMembers: Int, bySender: [UUID: Int])) {
        held = tally.waiting
        heldFromFormerMembers = tally.fromFormerMembers
        heldBySender = tally.bySender.map { HeldSender(deviceID: $0.key, records: $0.value) }
            .sorted { $0.deviceID.uuidString < $1.deviceID.uuidString }
    }

    /// An empty summary for a bundle from `sourceDevice`.
    public init(sourceDevice: UUID) { self.sourceDevice = sourceDevice }
}

/// A device whose bundles brought records an import holds back, and how many (``ImportSummary/heldBySender``).
public struct HeldSender: Sendable, Equatable, Codable {
    /// The device that exported the bundles.
    public let deviceID: UUID
    /// How many of the records held back they brought.
    public let records: Int

    /// A sender of `records` held records.
    public init(deviceID: UUID, records: Int) {
        self.deviceID = deviceID
        self.records = records
    }
}

/// A peer this vault exports to, and how far it has been sent.
public struct SyncPeer: Sendable, Equatable, Codable {
    /// The name given to ``Vault/export(to:peer:progress:)-6p1o1``.
    public let name: String
    /// The change sequence up to which the peer has been sent everything.
    public let sentThrough: UInt64
    /// When the last export to it was made.
    public let lastExport: Date
}
