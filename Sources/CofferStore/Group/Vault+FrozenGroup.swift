package import Foundation

/// A frozen sync group: one whose membership log is full, or would overflow with a member's log
/// (docs/FORMAT.md, "A full log freezes the group").
///
/// A stolen member's copy can fill the log with valid entries so that no revocation fits. Since no
/// one could then shut it out, no device seals records for the group again: exports and pushes carry
/// the log alone, so every member learns the group is frozen, and the way on is a new group.
extension Vault {
    /// Whether the group `context` holds is frozen: its log is full (``GroupLog/isFull``), or a
    /// valid log of the group offered to this device would have made it overflow
    /// (``recordOverflow(of:)``).
    package static func groupIsFrozen(_ context: GroupContext, in txn: Transaction, schema: Schema) throws -> Bool {
        if context.log.isFull { return true }
        let overflowed = try txn.get(schema.meta, key: Array(GroupContext.Meta.overflowed.utf8))
        return overflowed == context.log.group.bytes
    }

    /// Whether this vault's sync group is frozen: its membership log is full, or a member's log
    /// would have made it overflow. A frozen group gets no more records from this vault: exports and
    /// pushes carry the log alone (``ExportSummary/groupLogFull``). Found a new group on a device you
    /// trust (``Vault/startNewGroup()-4fuyt``) and approve the other devices into it.
    ///
    /// - Throws: ``CofferError`` `.interactionNotAllowed` if the vault is locked.
    public func syncGroupIsFrozen() throws(CofferError) -> Bool {
        let roots = try unlockedRoots()
        let deviceKeys = try self.deviceKeys()
        return try storage("reading the membership log") {
            try environment.read { txn in
                try Self.groupIsFrozen(
                    try groupContext(in: txn, roots: roots, deviceKeys: deviceKeys),
                    in: txn,
                    schema: schema
                )
            }
        }
    }

    /// Records that `group`'s log overflowed here: a log of the group, checked and valid, whose
    /// entries together with this device's would be more than a log may hold. Only members write
    /// entries that a valid log holds, so the group's log is over its cap wherever it is whole, and
    /// the group is frozen from now on (a new group, `coffer group new`, is not).
    package func recordOverflow(of group: UUID) throws(CofferError) {
        let schema = schema
        try storage("recording that the membership log is full") {
            try environment.write { txn in
                _ = try txn.put(schema.meta, key: Array(GroupContext.Meta.overflowed.utf8), value: group.bytes)
            }
        }
    }
}
