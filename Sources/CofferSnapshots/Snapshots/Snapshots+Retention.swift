public import Foundation

extension Snapshots {
    /// The snapshots `filter` passes, oldest first.
    public func list(matching filter: SnapshotFilter) throws(CofferError) -> [SnapshotInfo] {
        try list().filter(filter.matches)
    }

    /// What `policy` would keep and remove, group by group, changing nothing (`forget --dry-run`).
    ///
    /// - Parameters:
    ///   - policy: The rules; an empty one is refused.
    ///   - grouping: What snapshots are grouped by (host and name unless given).
    ///   - filter: Only these snapshots are considered; others are neither kept nor removed.
    ///   - now: Durations ignore snapshots dated after it; the real time unless given (tests).
    ///   - timeZone: Where calendar periods begin.
    /// - Throws: ``CofferError`` `.param` for an empty policy, or a policy that would remove every
    ///   snapshot of a group (restic refuses that too: no rule kept any of them).
    public func plan(
        _ policy: RetentionPolicy,
        groupedBy grouping: SnapshotGrouping = [.host, .name],
        matching filter: SnapshotFilter = SnapshotFilter(),
        now: Date = Date(),
        timeZone: TimeZone = .current
    ) throws(CofferError) -> [RetentionGroup] {
        guard !policy.isEmpty else {
            throw CofferError(
                .param,
                "the policy keeps nothing, so it would remove every snapshot; give at least one keep rule (\(InterfaceName.keepRule); \(InterfaceName.forgetOne) drops one by id)"
            )
        }
        // A write-only client's snapshots are neither kept nor removed: their dates and hosts are
        // claims, and counting them would let such a client push the owner's backups out.
        let owned = try list(matching: filter).filter { !$0.isWriteOnly }
        let groups = Dictionary(grouping: owned, by: grouping.key(of:))
        return try groups.keys.sorted().map { (key) throws(CofferError) -> RetentionGroup in
            let decisions = policy.apply(to: groups[key] ?? [], now: now, timeZone: timeZone)
            guard decisions.contains(where: \.keep) else {
                throw CofferError(
                    .param,
                    "the policy would remove all \(decisions.count) snapshots of \(key.description); nothing was removed (add a rule that keeps some, such as \(InterfaceName.keepLastOne))"
                )
            }
            return RetentionGroup(key: key, decisions: decisions)
        }
    }

    /// Applies `policy`: forgets every snapshot it does not keep. Each removal is one transaction that
    /// also frees the chunks nothing else uses, so the space is back at once, and a removal that
    /// stops midway leaves every snapshot either whole or gone.
    ///
    /// - Returns: The groups and decisions, as ``plan(_:groupedBy:matching:now:timeZone:)-4v4di`` makes
    ///   them.
    /// - Throws: The errors of ``plan(_:groupedBy:matching:now:timeZone:)-4v4di``, before anything is
    ///   removed, and those of ``forget(_:host:)-4s5es``.
    @discardableResult
    public func forget(
        keeping policy: RetentionPolicy,
        groupedBy grouping: SnapshotGrouping = [.host, .name],
        matching filter: SnapshotFilter = SnapshotFilter(),
        now: Date = Date(),
        timeZone: TimeZone = .current
    ) throws(CofferError) -> [RetentionGroup] {
        let groups = try plan(policy, groupedBy: grouping, matching: filter, now: now, timeZone: timeZone)
        let removed = Set(groups.flatMap(\.decisions).filter { !$0.keep }.map(\.snapshot.id))
        guard !removed.isEmpty else { return groups }
        let store = snapshotStore(try vault.keyRing())
        for record in try store.all(cipher: try makeCipher()) where removed.contains(record.info.id) {
            try store.forget(record)
        }
        return groups
    }
}

extension SnapshotGroupKey: CustomStringConvertible {
    /// `host laptop, name /home/ann/docs`, or `all snapshots` when nothing is grouped by.
    public var description: String {
        var parts: [String] = []
        if let hostname { parts.append("host \(hostname)") }
        if let name { parts.append("name \(name)") }
        if let tags { parts.append(tags.isEmpty ? "no tags" : "tags \(tags.joined(separator: ","))") }
        return parts.isEmpty ? "all snapshots" : parts.joined(separator: ", ")
    }
}
