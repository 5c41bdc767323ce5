/// The old group keys a new group's founding epoch carries (``Vault/startNewGroup()-4fuyt``; red team
/// round 8, N3).
///
/// A founder's histories may carry keys of epochs its log never started (so that a group made with
/// `group new` reaches its old records), and a stolen founder's modified client can pad one with
/// hundreds of thousands of made-up keys: it freezes the old group, which a stolen member may do. Had
/// `group new` carried every key held, the new group's founding entry would have been as large as the
/// old log, and the new group frozen from birth: the way out of a frozen group gone for every device
/// that saw the entry. So a new group carries only keys something needs:
///
/// - the keys of epochs the old log starts (and the original): what the group sealed with, bounded by
///   the log's entry cap, the current one among them for writes under way;
/// - the keys of other epochs that seal a syncable record this vault holds: the keys an earlier
///   `group new` carried, which its records still need.
///
/// A thief who wants more carried must also plant a record under each made-up epoch in the vault;
/// past ``budget`` keys (far more than a real vault's history, and a twentieth of what fills a
/// log) the keys that seal the fewest records are left out, and those records can no longer be opened.
package struct NewGroupKeys {
    /// The keys to carry (and keep): a subset of the keys held.
    package let roots: [KeyEpoch: SecureBytes]
    /// How many held syncable records no carried key opens (made-up epochs past the budget).
    package let recordsLeftOut: Int

    /// At most this many keys of epochs the old log did not start are carried: 40 bytes each in
    /// the founding history, so 65,536 take 2.5 MiB of a log's 16 MiB.
    package static let budget = 65_536

    /// The keys of `held` that a group founded from `log` carries, given how many syncable records
    /// each epoch seals (``RecordEpochs``).
    package init(
        held: [KeyEpoch: SecureBytes],
        log: GroupLog,
        recordsByEpoch: [KeyEpoch: Int],
        budget: Int = Self.budget
    ) {
        let started = log.startedEpochs
        var roots = held.filter { started.contains($0.key) }
        let needed = recordsByEpoch.filter { !started.contains($0.key) && held[$0.key] != nil }
            .sorted { ($0.value, $1.key) > ($1.value, $0.key) }
        for (epoch, _) in needed.prefix(budget) { roots[epoch] = held[epoch] }
        self.roots = roots
        recordsLeftOut = needed.dropFirst(budget).reduce(0) { $0 + $1.value }
    }
}
