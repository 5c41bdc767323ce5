import Foundation

/// Applies imported records inside the import's final transaction, by last writer wins: a record
/// replaces this vault's only when its version (hybrid logical clock stamp, then device id) is
/// greater, deletions included, so vaults that exchange the same changes in any order end the same.
/// An applied record keeps its version and goes into this vault's change log, so it travels on to
/// this vault's own peers.
package struct ImportApplier {
    package let txn: Transaction
    package let vault: Vault
    package let keys: KeyRing
    package let keychain: Keychain
    package let session: KeychainSession
    package let coder: ChunkRecord.Coder
    private let tiers: SyncTiers
    /// Where the records come from, for the local journal.
    private let origin: LocalJournal.Origin
    /// The bundle's chunks sealed with keys agreed per write, checked as records take them.
    private let unchecked: UncheckedChunks
    private(set) var summary: ImportSummary

    private var schema: Schema { vault.schema }

    package init(
        txn: Transaction,
        vault: Vault,
        keys: KeyRing,
        keychain: Keychain,
        origin: LocalJournal.Origin,
        summary: ImportSummary,
        unchecked: UncheckedChunks? = nil
    ) throws(CofferError) {
        self.origin = origin
        self.unchecked = unchecked ?? UncheckedChunks(source: summary.sourceDevice)
        self.txn = txn
        self.vault = vault
        self.keys = keys
        self.keychain = keychain
        self.summary = summary
        let session = try KeychainSession(keychain)
        let coder = try ChunkRecord.Coder()
        self.session = session
        self.coder = coder
        tiers = SyncTiers(
            environment: vault.environment,
            schema: vault.schema,
            keys: keys,
            coder: coder,
            keychain: (keychain, session)
        )
    }

    /// Applies one record if its version wins and everything it needs is here; holds it back (see
    /// ``HeldRecords``) if chunks it needs are missing, and refuses it if its clock stamp lies beyond
    /// the configured skew ahead of this machine's clock.
    package mutating func apply(
        _ kind: SyncRecordKind,
        id: [UInt8],
        entry: VersionEntry,
        stored: [UInt8],
        body: [UInt8]
    )
        throws
    {
        let bound = UInt64(max(0, vault.configuration.maximumClockSkew.components.seconds)) * 1000 << 16
        guard entry.version.stamp <= HybridClock.wallStamp() + bound else {
            summary.refusedFutureRecords += 1
            if let device = try? UUID(storedBytes: entry.version.device, what: "device id") {
                let date = HybridClock.date(of: entry.version.stamp)
                summary.devicesAhead[device] = max(summary.devicesAhead[device] ?? date, date)
            }
            return
        }
        guard try wins(kind, id: id, entry: entry) else { return }
        let record = HeldRecords.Held(kind: kind, id: id, entry: entry, stored: stored, body: body)
        if try placeOrHold(record, wasHeld: false) != .placed { summary.held += 1 }
    }

    /// Applies the records held back by earlier imports whose chunks are here now, and drops those a
    /// newer version has overtaken. Runs after the bundle's own records, in the same transaction.
    package mutating func applyHeld() throws {
        let held = HeldRecords(schema: schema)
        for record in try held.all(in: txn) {
            if let local = try VersionEntry.load(record.kind, id: record.id, in: txn, schema: schema),
                local.version >= record.entry.version
            {
                try held.release(record.kind, id: record.id, in: txn)
                continue
            }
            if try placeOrHold(record, wasHeld: true) == .placed { summary.appliedFromHeld += 1 }
        }
        summary.tallyHeld(try held.tally(active: nil, in: txn))
    }

    /// What became of a record offered for placing.
    private enum Placement {
        case placed
        /// Held back for chunks it lacks, or behind a newer version held back.
        case held
        /// Held back by an earlier import, and dropped now: it was made up (``ForgedChunkClaim``).
        case dropped
    }

    /// Puts a winning record in place if every chunk it needs is here, taking its references in the
    /// same walk that finds what is missing; otherwise holds it back, keeping the references it could
    /// take (what has arrived stays, and a snapshot's tree, once here, shows which file chunks are
    /// still needed). A version already waiting that is newer keeps waiting instead, unless it is
    /// dropped when tried first.
    ///
    /// A record that takes a chunk of a write-only client's write its keys do not open was made up
    /// by a modified client. One in this bundle refuses the bundle, naming its device; one held back
    /// since an earlier import (`wasHeld`) is dropped, with its references, and the bundle that
    /// completed it goes on, so a forgery held back never blocks the genuine chunks that arrive after
    /// it (red team round 43, F2). (A chunk that arrived in this bundle and fails its check refuses
    /// the bundle either way.)
    private mutating func placeOrHold(_ record: HeldRecords.Held, wasHeld: Bool) throws -> Placement {
        let held = HeldRecords(schema: schema)
        var waiting = try held.held(record.kind, id: record.id, in: txn)
        if let newer = waiting, newer.entry.version > record.entry.version {
            // This bundle's record checks the chunks of its write that arrived with it first: a
            // made-up newer version held back must not make them look forged (red team round 44, G1).
            if !wasHeld, !record.entry.isDeleted {
                try MissingChunks(txn: txn, schema: schema, tiers: tiers)
                    .checkArrived(record.kind, id: record.id, stored: record.stored, unchecked: unchecked)
            }
            guard try placeOrHold(newer, wasHeld: true) == .dropped else { return .held }
            waiting = nil
        }
        // The device whose bundle brought this version: this bundle's, or the one noted when it was
        // first held (read before the release below drops it).
        // The devices whose bundles brought this version: those noted when it was first held, and
        // this bundle's when it brings the same version again (a relay: outside test of the F1 fix,
        // finding 2, where only the last sender counted, and revoking it let compaction delete the
        // bundle of an active member that had sent it too).
        var senders = [summary.sourceDevice.bytes]
        if wasHeld {
            senders = try held.senders(record.kind, id: record.id, in: txn)
        } else if let waiting, waiting.entry.version == record.entry.version {
            let noted = try held.senders(record.kind, id: record.id, in: txn)
            senders = noted.contains(summary.sourceDevice.bytes) ? noted : noted + senders
        }
        var taken: [ChunkID] = []
        var missing: [ChunkID] = []
        if !record.entry.isDeleted {
            let claim = Result {
                try MissingChunks(txn: txn, schema: schema, tiers: tiers)
                    .claim(record.kind, id: record.id, stored: record.stored, unchecked: unchecked)
            }
            switch claim {
            case .success(let outcome):
                (taken, missing) = outcome
            case .failure(let error):
                guard wasHeld, let forged = ForgedChunkClaim(error) else { throw error }
                guard !forged.arrived else {
                    // A chunk that arrived now and no record of this bundle checked: which is made
                    // up, it or the record held back, cannot be told here. The record keeps waiting
                    // as it was, and the chunk goes with the staging references unless a record
                    // takes it; the bundle, perhaps an honest device's, is not refused for it.
                    return .held
                }
                try held.release(record.kind, id: record.id, in: txn)
                summary.droppedForgedRecords += 1
                return .dropped
            }
        }
        // Only after the claim: releasing first could free a chunk the claim then finds missing.
        if waiting != nil { try held.release(record.kind, id: record.id, in: txn) }
        guard missing.isEmpty else {
            try held.hold(record, keeping: taken, senders: senders, in: txn)
            return .held
        }
        try place(record.kind, id: record.id, entry: record.entry, stored: record.stored)
        return .placed
    }

    /// Whether `entry` beats this vault's version of the record (counting conflicts and skips).
    private mutating func wins(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry) throws -> Bool {
        guard let local = try VersionEntry.load(kind, id: id, in: txn, schema: schema) else { return true }
        // Two devices changed the record: last writer wins, either way round.
        if local.version.device != entry.version.device { summary.conflicts += 1 }
        guard entry.version > local.version else {
            summary.skipped += 1
            return false
        }
        return true
    }

    /// Puts a winning record in place (its chunk references already taken) and logs it with its
    /// version.
    private mutating func place(_ kind: SyncRecordKind, id: [UInt8], entry: VersionEntry, stored: [UInt8]) throws {
        // Described before the install: a deletion's name is the record's that goes.
        let description = tiers[kind].describe(id: id, stored: entry.isDeleted ? nil : stored, in: txn)
        let outcome = try tiers[kind].install(id: id, stored: entry.isDeleted ? nil : stored, in: txn)
        summary.keptDeviceBoundBlobs += outcome.renamedDeviceBound.count
        summary.renamedDeviceBoundBlobs += outcome.renamedDeviceBound
        try ChangeLog.recordApplied(
            kind,
            recordID: id,
            entry: entry,
            origin: origin,
            description: description,
            keys: keys,
            in: txn,
            schema: schema
        )
        summary.applied.count(kind, deleted: entry.isDeleted)
    }
}
