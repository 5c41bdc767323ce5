public import Foundation

/// A place in a vault's journal of changes: where ``Vault/changes(after:pollInterval:)`` resumes.
/// Store ``sequence`` with what you derived from the changes, and resume after it on the next start.
public struct ChangePosition: Sendable, Hashable, Comparable, Codable {
    /// The journal's sequence number of the change (0: before the first).
    public let sequence: UInt64

    /// The position after the change numbered `sequence`.
    public init(sequence: UInt64) { self.sequence = sequence }

    /// Before every change the journal still holds.
    public static let beginning = ChangePosition(sequence: 0)

    /// Orders positions by sequence number.
    public static func < (lhs: ChangePosition, rhs: ChangePosition) -> Bool { lhs.sequence < rhs.sequence }
}

/// One change to a vault's records, as ``Vault/changes(after:pollInterval:)`` reports it: made
/// through this handle, another handle or process, a bundle import or a pull.
public struct VaultChange: Sendable, Hashable {
    /// The kind of record changed.
    public enum Record: String, Sendable, Hashable {
        /// A keychain item.
        case item
        /// A blob.
        case blob
        /// A snapshot.
        case snapshot
    }

    /// What happened.
    public enum Operation: String, Sendable, Hashable {
        /// The record was added or replaced (a blob renamed to this name, too).
        case put
        /// The record was deleted (a blob renamed away from its name, too).
        case delete
        /// Changes before ``VaultChange/position`` were trimmed from the journal before this
        /// consumer read them (it resumed from too far back): reread what you track.
        case missed
    }

    /// Where the change came from.
    public enum Origin: String, Sendable, Hashable {
        /// This `Vault` handle.
        case thisHandle
        /// Another handle on the same vault: another process, or another `Vault` in this one.
        case anotherHandle
        /// A bundle import (`coffer import`, `Vault.import(from:progress:)`).
        case bundleImport
        /// A pull from an object store.
        case pull
    }

    /// Where this change is in the journal: resume after it.
    public let position: ChangePosition
    /// What happened.
    public let operation: Operation
    /// The kind of record; `nil` for ``Operation/missed``.
    public let record: Record?
    /// The record's scope; `nil` for ``Operation/missed``.
    public let scope: SyncScope?
    /// Where the change came from.
    public let origin: Origin
    /// The record's id in hex (its table key); empty for ``Operation/missed``.
    public let recordID: String
    /// The record's name (a blob's listed name, a snapshot's name, an item's label, service, server
    /// or account); `nil` when the vault has not been unlocked since it was opened (names are sealed)
    /// or the writer held no key (a write-only client).
    public let name: String?
    /// When the change was committed, by the writer's clock.
    public let date: Date
    /// The process that made the change.
    public let processID: Int32
    /// The tier's sealed-in detail (an item's class and attributes), for ``Keychain`` to read.
    package let detail: [UInt8]
}

/// The changes to a vault, in commit order, as an `AsyncSequence` (``Vault/changes(after:pollInterval:)``).
/// It ends when the vault is closed or the consuming task is cancelled, and throws if the journal
/// cannot be read.
public struct VaultChanges: AsyncSequence, Sendable {
    /// A change.
    public typealias Element = VaultChange
    /// What reading the journal throws.
    public typealias Failure = CofferError

    let vault: Vault
    let start: ChangePosition?
    let pollInterval: Duration

    /// Reads the journal as the consumer asks, waiting `pollInterval` between looks once it has
    /// caught up.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let vault: Vault
        var position: ChangePosition?
        let pollInterval: Duration
        var buffered: [VaultChange] = []

        /// The next change, waiting for one; `nil` once the vault is closed or the task cancelled.
        public mutating func next() async throws(CofferError) -> VaultChange? {
            while true {
                if !buffered.isEmpty { return buffered.removeFirst() }
                guard !Task.isCancelled, !vault.isClosed else { return nil }
                // Two short read transactions, run here: handed to a queue, each poll would wait
                // behind whatever blocking work the app has queued there.
                if position == nil { position = try vault.latestChangePosition() }
                guard let after = position else { return nil }
                buffered = try vault.journalChanges(after: after, limit: 512)
                if let last = buffered.last { position = last.position }
                if buffered.isEmpty {
                    do {
                        try await Task.sleep(for: pollInterval)
                    } catch {
                        return nil
                    }
                }
            }
        }
    }

    /// Starts reading.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(vault: vault, position: start, pollInterval: pollInterval)
    }
}

extension Vault {
    /// The changes to this vault's records after `position` (after the latest one when `nil`: those
    /// committed from this call on), in commit
    /// order: those made through this handle, by other processes on the same vault, and by imports
    /// and pulls. The journal is read every `pollInterval` once the sequence has caught up, so a
    /// change reaches the consumer within about that long. The journal keeps the latest 100,000
    /// changes; resuming from before them yields one ``VaultChange/Operation/missed`` first.
    ///
    /// ```swift
    /// for try await change in vault.changes(after: savedPosition) {
    ///     print(change.operation, change.record!, change.name ?? "?", change.origin)
    ///     savedPosition = change.position
    /// }
    /// ```
    public func changes(
        after position: ChangePosition? = nil,
        pollInterval: Duration = .milliseconds(100)
    )
        -> VaultChanges
    {
        // "From now" is fixed here, not when the consumer first asks: a change committed between the
        // two would otherwise be missed.
        VaultChanges(vault: self, start: position ?? (try? currentChangePosition()), pollInterval: pollInterval)
    }

    /// The position of the latest change: what ``changes(after:pollInterval:)`` starts after by
    /// default. Save it to read only what changes from now on, after a restart too.
    ///
    /// - Throws: ``CofferError`` `.closed` after ``close()``.
    public func currentChangePosition() throws(CofferError) -> ChangePosition {
        try latestChangePosition()
    }

    /// What ``currentChangePosition()-8yup9`` returns, under a name async code calls synchronously.
    package func latestChangePosition() throws(CofferError) -> ChangePosition {
        try checkOpen()
        let schema = schema
        let last = try storage("reading the journal") {
            try environment.read { txn in try LocalJournal.bounds(in: txn, schema: schema).last }
        }
        return ChangePosition(sequence: last)
    }

    /// Up to `limit` changes after `position`, opened with the keys held now.
    package func journalChanges(after position: ChangePosition, limit: Int) throws(CofferError) -> [VaultChange] {
        try checkOpen()
        let schema = schema
        let (bounds, entries) = try storage("reading the journal") {
            try environment.read { txn in
                (
                    try LocalJournal.bounds(in: txn, schema: schema),
                    try LocalJournal.entries(after: position.sequence, limit: limit, in: txn, schema: schema)
                )
            }
        }
        var changes: [VaultChange] = []
        if bounds.first > position.sequence + 1 {
            changes.append(
                VaultChange(
                    position: ChangePosition(sequence: bounds.first - 1),
                    operation: .missed,
                    record: nil,
                    scope: nil,
                    origin: .anotherHandle,
                    recordID: "",
                    name: nil,
                    date: Date(),
                    processID: 0,
                    detail: []
                )
            )
        }
        let keys = try keyRing()
        for entry in entries {
            let description = try LocalJournal.description(of: entry, keys: keys)
            let origin: VaultChange.Origin =
                switch entry.origin {
                case .bundleImport: .bundleImport
                case .pull: .pull
                case .local: entry.writer == schema.handleToken ? .thisHandle : .anotherHandle
                }
            let record: VaultChange.Record =
                switch entry.kind {
                case .item: .item
                case .blob: .blob
                case .snapshot: .snapshot
                }
            changes.append(
                VaultChange(
                    position: ChangePosition(sequence: entry.sequence),
                    operation: entry.isDelete ? .delete : .put,
                    record: record,
                    scope: entry.scope,
                    origin: origin,
                    recordID: entry.recordID.hexEncoded,
                    name: description?.name,
                    date: Date(timeIntervalSince1970: Double(entry.time) / 1000),
                    processID: Int32(bitPattern: entry.processID),
                    detail: description?.detail ?? []
                )
            )
        }
        return changes
    }
}
