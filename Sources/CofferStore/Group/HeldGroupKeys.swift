package import Foundation

/// The group keys a device holds, and which of them it trusts (docs/FORMAT.md, "Key epochs", "Epoch
/// ids commit to their keys").
///
/// An epoch id names its key in every record and bundle header, but only 64 bits of it: an epoch
/// started by this Coffer has the id ``GroupKeys/committedEpoch(for:group:)`` of its key, so no one
/// can offer another key under that id without a 2⁶⁴ search. Ids of epochs started by older Coffers
/// commit to nothing. So:
/// - a key that commits to its id replaces a held one that does not (a forgery reusing the id of
///   a real epoch, which arrived first), and nothing replaces a committed key;
/// - of keys that do not commit, the first one held stays (as before ids committed), and others
///   offered under its id are ignored;
/// - a device *trusts* only the original key, a committed key, or a key it held before it knew ids
///   could commit (``legacy``, fixed when an older Coffer's vault is first opened): it seals only
///   with those, and checks join proofs only with those. A key that arrived since and commits to
///   nothing may be a forgery that a committed key replaces later: sealing with it would make what
///   it sealed unreadable then, and a join proven with it proves nothing.
package struct HeldGroupKeys {
    /// The key of each epoch held, the original epoch's (the sync root) included.
    package private(set) var roots: [KeyEpoch: SecureBytes]
    /// Epochs whose keys commit to nothing that this device trusts all the same: those it held
    /// when a Coffer that commits epoch ids first opened it.
    package private(set) var legacy: Set<KeyEpoch>
    /// The epochs whose held keys commit to their ids.
    package private(set) var committed: Set<KeyEpoch>
    /// The sync group the keys are of.
    package let group: UUID

    /// Keys held: `legacy` `nil` for a vault an older Coffer wrote (every key held now that does
    /// not commit to its id becomes legacy).
    package init(roots: [KeyEpoch: SecureBytes], legacy: Set<KeyEpoch>?, group: UUID) {
        self.roots = roots
        self.group = group
        committed = Set(roots.filter { GroupKeys.commits($0.value, to: $0.key, group: group) }.keys)
        self.legacy = legacy ?? Set(roots.keys.filter { !$0.isOriginal }).subtracting(committed)
    }

    /// Learns `root` as offered for `epoch`; returns whether anything changed.
    @discardableResult
    package mutating func learn(_ root: SecureBytes, epoch: KeyEpoch) -> Bool {
        let commits = !epoch.isOriginal && GroupKeys.commits(root, to: epoch, group: group)
        if roots[epoch] != nil, !commits || committed.contains(epoch) { return false }
        roots[epoch] = root
        if commits {
            committed.insert(epoch)
            legacy.remove(epoch)
        }
        return true
    }

    /// Starts holding the key of an epoch this device starts, whose id commits to it.
    package mutating func hold(_ root: SecureBytes, epoch: KeyEpoch) {
        roots[epoch] = root
        committed.insert(epoch)
    }

    /// Whether this device trusts its key of `epoch` (it holds one): the key to seal with and to
    /// check join proofs with.
    package func isTrusted(_ epoch: KeyEpoch) -> Bool {
        roots[epoch] != nil && (epoch.isOriginal || committed.contains(epoch) || legacy.contains(epoch))
    }

    /// The key of `epoch` if this device trusts it, to check a join proof with.
    package func trustedRoot(_ epoch: KeyEpoch) -> SecureBytes? {
        isTrusted(epoch) ? roots[epoch] : nil
    }
}
