package import Foundation

/// The group keys a device holds, and which of them it may seal with (docs/FORMAT.md, "Key epochs",
/// "Epoch ids commit to their keys").
///
/// An epoch id names its key in every record and bundle header, but only 64 bits of it: an epoch
/// started by this Coffer has the id ``GroupKeys/committedEpoch(for:group:)`` of its key, so no one
/// can offer another key under that id without a 2⁶⁴ search. Ids of epochs started by older Coffers
/// commit to nothing. So:
/// - a key that commits to its id replaces a held one that does not (a forgery reusing the id of
///   a real epoch, which arrived first), and nothing replaces a committed key;
/// - of keys that do not commit, the first one held stays (as before ids committed);
/// - every other key offered under a held id is kept aside (``superseded``), only to check the join
///   proofs the log holds: a join made under a forged key is an entry of the log like any other,
///   voided by the rules, and must not make the log unreadable;
/// - a device seals only with the original key, a committed key, or a key it held before it
///   knew ids could commit (``legacy``, fixed when an older Coffer's vault is first opened): never
///   with a key that arrived since and commits to nothing, which may be a forgery that a committed
///   key replaces later, making whatever it sealed unreadable.
package struct HeldGroupKeys {
    /// The key of each epoch held, the original epoch's (the sync root) included.
    package private(set) var roots: [KeyEpoch: SecureBytes]
    /// Other keys offered under a held epoch id, kept only to check join proofs.
    package private(set) var superseded: [KeyEpoch: [SecureBytes]]
    /// Epochs whose keys commit to nothing that this device may still seal with: those it held
    /// when a Coffer that commits epoch ids first opened it.
    package private(set) var legacy: Set<KeyEpoch>
    /// The sync group the keys are of.
    package let group: UUID

    /// Keys held: `legacy` `nil` for a vault an older Coffer wrote (every key held now that does
    /// not commit to its id becomes legacy).
    package init(
        roots: [KeyEpoch: SecureBytes],
        superseded: [KeyEpoch: [SecureBytes]] = [:],
        legacy: Set<KeyEpoch>?,
        group: UUID
    ) {
        self.roots = roots
        self.superseded = superseded
        self.group = group
        self.legacy =
            legacy
            ?? Set(roots.filter { !$0.key.isOriginal && !GroupKeys.commits($0.value, to: $0.key, group: group) }.keys)
    }

    /// Learns `root` as offered for `epoch`; returns whether anything changed.
    @discardableResult
    package mutating func learn(_ root: SecureBytes, epoch: KeyEpoch) -> Bool {
        guard let held = roots[epoch] else {
            roots[epoch] = root
            return true
        }
        if held.constantTimeEquals(root) { return false }
        if !epoch.isOriginal, GroupKeys.commits(root, to: epoch, group: group),
            !GroupKeys.commits(held, to: epoch, group: group)
        {
            roots[epoch] = root
            legacy.remove(epoch)
            setAside(held, epoch: epoch)
            return true
        }
        return setAside(root, epoch: epoch)
    }

    /// Keeps `root` among the superseded keys of `epoch` unless it is there; returns whether it was
    /// not.
    @discardableResult
    private mutating func setAside(_ root: SecureBytes, epoch: KeyEpoch) -> Bool {
        guard !superseded[epoch, default: []].contains(where: { $0.constantTimeEquals(root) }) else { return false }
        superseded[epoch, default: []].append(root)
        return true
    }

    /// Starts holding the key of an epoch this device starts.
    package mutating func hold(_ root: SecureBytes, epoch: KeyEpoch) {
        roots[epoch] = root
    }

    /// Whether this device may seal with its key of `epoch` (it holds one).
    package func isSealable(_ epoch: KeyEpoch) -> Bool {
        guard let root = roots[epoch] else { return false }
        return epoch.isOriginal || legacy.contains(epoch) || GroupKeys.commits(root, to: epoch, group: group)
    }

    /// Every key this device has seen under `epoch`, to check a join proof with (one suffices).
    package func proofRoots(_ epoch: KeyEpoch) -> [SecureBytes] {
        (roots[epoch].map { [$0] } ?? []) + superseded[epoch, default: []]
    }

    /// The superseded keys as one list, for the sealed table that keeps them.
    package var supersededList: [(KeyEpoch, SecureBytes)] {
        superseded.sorted { $0.key < $1.key }.flatMap { epoch, keys in keys.map { (epoch, $0) } }
    }

    /// The superseded keys of a sealed table's list.
    package static func superseded(from list: [(KeyEpoch, SecureBytes)]) -> [KeyEpoch: [SecureBytes]] {
        var keys: [KeyEpoch: [SecureBytes]] = [:]
        for (epoch, key) in list { keys[epoch, default: []].append(key) }
        return keys
    }
}
