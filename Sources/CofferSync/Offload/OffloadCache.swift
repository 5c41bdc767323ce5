import Foundation

/// The local cache of an offloaded vault: chunk records fetched from the object store are kept in
/// the `chunks` table again, noted as cached (``StoreContent``), within the budget: room is made by
/// dropping the least recently used of what was cached before this cache was attached, and what
/// does not fit is not kept (docs/FORMAT.md, "Chunks in the object store").
///
/// Readers offer records while they hold a read transaction, so nothing here waits for a write:
/// offers and uses are gathered in memory (at most ``flushBytes``) and written by a background
/// queue, in one transaction per batch. Caching is best effort: a batch that cannot be written (a
/// full disk) is dropped, and the chunks are fetched again when next read.
package final class OffloadCache: Sendable {
    private let environment: Environment
    private let schema: Schema
    /// The most bytes of cached records kept.
    package let budget: UInt64
    /// When this cache was attached (ms since 1970): what it cached since, it never evicts to make
    /// room for more (a read larger than the budget keeps what it cached first).
    private let attachedAt = UInt64(Date().timeIntervalSince1970 * 1000)
    private let state = Locked(Pending())
    private let queue = DispatchQueue(label: "coffer.offload-cache")
    /// Offered bytes that start a write.
    package static let flushBytes = 8 << 20

    private struct Pending {
        var offers: [ChunkID: [UInt8]] = [:]
        /// The offered chunks in the order they were offered: when not all fit, the first stay.
        var offerOrder: [ChunkID] = []
        var offeredBytes = 0
        var uses: Set<ChunkID> = []
        var damaged: [(object: StoreObject, remembering: Bool)] = []
        /// Chunks a read fetched and checked (``StoreContent/noteChecked(_:in:)``).
        var checked: Set<ChunkID> = []
        var scheduled = false
    }

    package init(environment: Environment, schema: Schema, budget: UInt64) {
        self.environment = environment
        self.schema = schema
        self.budget = budget
    }

    /// Offers a fetched record: kept unless it alone exceeds the budget. Either way the read checked
    /// it where it fetched it, which is noted: a site only a records object gave counts from then on.
    package func offer(_ id: ChunkID, record: [UInt8]) {
        let fits = UInt64(record.count) <= budget
        let schedule = state.withLock { pending -> Bool in
            pending.checked.insert(id)
            if fits, pending.offers.updateValue(record, forKey: id) == nil {
                pending.offeredBytes += record.count
                pending.offerOrder.append(id)
            }
            return start(&pending, when: pending.offeredBytes >= Self.flushBytes || pending.checked.count >= 4096)
        }
        if schedule { queue.async { self.write() } }
    }

    /// Notes that a cached chunk was read.
    package func noteUse(of id: ChunkID) {
        let schedule = state.withLock { pending -> Bool in
            pending.uses.insert(id)
            return start(&pending, when: pending.uses.count >= 4096)
        }
        if schedule { queue.async { self.write() } }
    }

    /// Notes that a read found `object` damaged: it is forgotten (``StoreContent/forgetIfNoted(_:in:)``)
    /// with the next write, at once.
    /// With `remembering`, the damage is remembered too (its header held: what the rest holds may
    /// be intact, so this vault's compactions keep it).
    package func noteDamaged(_ object: StoreObject, remembering: Bool) {
        let schedule = state.withLock { pending -> Bool in
            pending.damaged.append((object, remembering))
            return start(&pending, when: true)
        }
        if schedule { queue.async { self.write() } }
    }

    private func start(_ pending: inout Pending, when due: Bool) -> Bool {
        guard due, !pending.scheduled else { return false }
        pending.scheduled = true
        return true
    }

    /// Writes everything gathered, waiting for it (called outside any transaction: when the vault
    /// closes, and after a command that read).
    package func finish() {
        queue.sync { write() }
    }

    private func write() {
        let pending = state.withLock { pending -> Pending in
            let taken = pending
            pending = Pending()
            return taken
        }
        guard
            !pending.offers.isEmpty || !pending.uses.isEmpty || !pending.damaged.isEmpty || !pending.checked.isEmpty,
            !environment.isClosed
        else { return }
        let schema = schema
        let budget = budget
        let attachedAt = attachedAt
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        _ = try? environment.write { txn in
            guard let content = StoreContent(schema: schema) else { return }
            for (object, remembering) in pending.damaged {
                try content.forgetIfNoted(object, rememberingDamage: remembering, in: txn)
            }
            // Room is made by dropping what was cached before this cache was attached, least
            // recently used first, never what it cached itself: a read larger than the budget (a
            // restore, `verify --read-data`) would otherwise churn through the cache, and LMDB
            // reuses freed pages only in runs that fit, so the data file grew far past the budget
            // (a 20 GiB restore on a 2 GiB budget: 4.2 GiB). What does not fit is not kept.
            let offered = pending.offers.values.reduce(UInt64(0)) { $0 + UInt64($1.count) }
            var cached = try Self.trim(
                content,
                to: budget > offered ? budget - offered : 0,
                evictingOnlyBefore: attachedAt,
                in: txn
            )
            for id in pending.offerOrder {
                guard let record = pending.offers[id], cached + UInt64(record.count) <= budget else { continue }
                // Kept only while still offloaded: referenced, not here, in the store.
                guard try content.isOffloaded(id, in: txn) else { continue }
                try schema.records.put(id, record, in: txn)
                try content.noteCached(id, length: record.count, lastUse: now, in: txn)
                cached += UInt64(record.count)
            }
            for id in pending.checked { try content.noteChecked(id, in: txn) }
            for id in pending.uses {
                guard let length = try schema.records.withRecord(id, in: txn, { $0.count }),
                    try content.isCached(id, in: txn)
                else { continue }
                try content.noteCached(id, length: length, lastUse: now, in: txn)
            }
        }
    }

    /// Drops cached records, least recently used first, until at most `budget` bytes are cached
    /// (only those last used before `evictingOnlyBefore`, when given); forgets entries of chunks gone
    /// or no longer local. Returns the bytes cached after.
    @discardableResult
    package static func trim(
        _ content: StoreContent,
        to budget: UInt64,
        evictingOnlyBefore: UInt64 = .max,
        in txn: Transaction
    ) throws -> UInt64 {
        var entries: [(id: ChunkID, lastUse: UInt64, length: Int)] = []
        var stale: [ChunkID] = []
        try content.forEachCached(in: txn) { id, lastUse, length in
            entries.append((id, lastUse, length))
            return true
        }
        var total: UInt64 = 0
        var live: [(id: ChunkID, lastUse: UInt64, length: Int)] = []
        for entry in entries {
            if try content.schema.records.contains(entry.id, in: txn), try content.site(of: entry.id, in: txn) != nil {
                live.append(entry)
                total += UInt64(entry.length)
            } else {
                stale.append(entry.id)
            }
        }
        for id in stale { try content.forgetCached(id, in: txn) }
        guard total > budget else { return total }
        for entry in live.sorted(by: { $0.lastUse < $1.lastUse })
        where total > budget && entry.lastUse < evictingOnlyBefore {
            try content.dropLocalRecord(entry.id, in: txn)
            try content.forgetCached(entry.id, in: txn)
            total -= UInt64(entry.length)
        }
        return total
    }
}
