import Foundation

/// Which group keys the histories in a log may give a device, and which it passes on in the
/// histories it seals (red team rounds 6 and 7: C1, F1).
///
/// A history lists `[epoch ‖ key]` pairs, and a member's modified client can list any number of
/// made-up ones. Were every later epoch's history to carry all a device holds, one such entry would
/// make every later epoch too large to record, until no revocation fit. So:
///
/// - A device takes from a history the keys of epochs an entry of the log starts (and the
///   original); keys of other epochs (*carried* keys) only from a history whose author founded the
///   log: the founder of a group made with `group new` carries the old group's keys that way. A
///   stolen founder can pad its own entries with made-up keys, at the cost of its log's room, but
///   never crowd out the real ones.
/// - The histories a device seals carry only keys of epochs the log starts, and the original: a
///   device approved later reaches every carried key through them, by the founder's history. Only a
///   group's founding epoch (``GroupContext/startEpoch(carryingEverything:)``) carries every key held,
///   and a new group's founder holds only the keys its records need (``NewGroupKeys``).
struct LearnableKeys {
    private let started: Set<KeyEpoch>
    private let founders: Set<UUID>

    /// The rule for `log`.
    init(_ log: GroupLog) {
        started = log.startedEpochs
        founders = log.founderDevices
    }

    /// Whether a history by `author` may give the key of `epoch`.
    func admits(_ epoch: KeyEpoch, from author: UUID) -> Bool {
        started.contains(epoch) || founders.contains(author)
    }

    /// Of `roots`, those a history sealed in `log` carries: the keys of epochs the log starts.
    static func passable(_ roots: [KeyEpoch: SecureBytes], in log: GroupLog) -> [KeyEpoch: SecureBytes] {
        let started = log.startedEpochs
        return roots.filter { started.contains($0.key) }
    }
}
