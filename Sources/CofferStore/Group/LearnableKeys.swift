import Foundation

/// Which group keys the histories in a log may give a device, and which it may pass on in the
/// histories it seals (red team round 6, C1).
///
/// A history lists `[epoch ‖ key]` pairs, and a member's modified client can list any number of
/// made-up ones; every later epoch's history would carry them all, until no revocation fit in a log.
/// So a device takes from a history the keys of epochs an entry of the log starts (and the original),
/// and keys of other epochs only from a history written by a founder of the log (a device that left
/// its group with `group new` carries the old group's keys that way), and no more than
/// ``maximumCarried`` of those in all.
struct LearnableKeys {
    /// The most keys of epochs the log does not start that a device holds or seals: what one founding
    /// history may carry from a group that filled its own log with epochs.
    static let maximumCarried = GroupLog.maximumEntries + 1

    private let started: Set<KeyEpoch>
    private let founders: Set<UUID>
    private var carried: Int

    /// The rule for `log`, for a device holding `held` already.
    init(_ log: GroupLog, holding held: some Collection<KeyEpoch>) {
        started = log.startedEpochs
        let anchor = GroupEntry.anchor(group: log.group)
        founders = Set(log.entries.filter { $0.parents == [anchor] }.map(\.author))
        carried = held.filter { !log.startedEpochs.contains($0) }.count
    }

    /// Whether a history by `author` may give the key of `epoch` to a device that does or does not
    /// hold it yet; counts it when it does not.
    mutating func admits(_ epoch: KeyEpoch, from author: UUID, held: Bool) -> Bool {
        if started.contains(epoch) || held { return true }
        guard founders.contains(author), carried < Self.maximumCarried else { return false }
        carried += 1
        return true
    }

    /// Of `roots`, those a history sealed in `log` carries: every key of an epoch the log starts,
    /// and of the others the first ``maximumCarried`` by epoch id.
    static func sealable(_ roots: [KeyEpoch: SecureBytes], in log: GroupLog) -> [KeyEpoch: SecureBytes] {
        let started = log.startedEpochs
        let carried = roots.keys.filter { !started.contains($0) }.sorted().prefix(maximumCarried)
        return roots.filter { started.contains($0.key) || carried.contains($0.key) }
    }
}
