import Foundation

/// Which group keys the histories in a log may give a device, and which it passes on in the
/// histories it seals (red team rounds 6 and 7: C1, F1).
///
/// A history lists `[epoch ‖ key]` pairs, and a member's modified client can list any number of
/// made-up ones. Were every later epoch's history to carry all a device holds, one such entry would
/// make every later epoch too large to record, until no revocation fit. So:
///
/// - A device takes from a history the keys of epochs an entry of the log starts (and the
///   original); keys of other epochs (*carried* keys) only from the history of a *founding epoch*:
///   one its founder started before anything but its own founding entries (the founder of a group
///   made with `group new` carries the old group's keys that way, in the group's third entry). A
///   stolen founder's later epochs carry nothing (red team round 10, F3: made-up keys in one, with a
///   record planted under each, crowded the real carried keys out of the next `group new`).
/// - The histories a device seals carry only keys of epochs the log starts, and the original: a
///   device approved later reaches every carried key through them, by the founder's history. Only a
///   group's founding epoch (``GroupContext/startEpoch(carryingEverything:)``) carries every key held,
///   and a new group's founder holds only the keys its records need (``NewGroupKeys``).
struct LearnableKeys {
    private let started: Set<KeyEpoch>
    private let foundingEpochs: Set<[UInt8]>

    /// The rule for `log`.
    init(_ log: GroupLog) {
        started = log.startedEpochs
        foundingEpochs = Self.foundingEpochs(of: log)
    }

    /// Whether the history of `entry` may give the key of `epoch`.
    func admits(_ epoch: KeyEpoch, from entry: GroupEntry) -> Bool {
        started.contains(epoch) || foundingEpochs.contains(entry.hash)
    }

    /// The log's founding epoch, as a set of at most one hash: the entry starting an epoch, by a
    /// device that founded the log, whose ancestors are all that device's and start no epoch, and
    /// that every entry of every other device follows (a `group new` group's third entry: devices are
    /// approved after it). A stolen founder can sign such an epoch on the founding entries at any
    /// time (red team round 11, F2), but no other device's entry follows it; should two qualify (a
    /// fork before any other device joined), in doubt, neither gives carried keys.
    static func foundingEpochs(of log: GroupLog) -> Set<[UInt8]> {
        let founders = log.founderDevices
        let byHash = Dictionary(log.entries.map { ($0.hash, $0) }) { first, _ in first }
        var children: [[UInt8]: [[UInt8]]] = [:]
        for entry in log.entries { for parent in entry.parents { children[parent, default: []].append(entry.hash) } }
        var found = Set<[UInt8]>()
        for entry in log.entries where entry.startedEpoch != nil && founders.contains(entry.author) {
            var pending = entry.parents
            var seen = Set<[UInt8]>()
            var onlyFounding = true
            while onlyFounding, let hash = pending.popLast() {
                guard seen.insert(hash).inserted, let ancestor = byHash[hash] else { continue }
                onlyFounding = ancestor.author == entry.author && ancestor.startedEpoch == nil
                pending += ancestor.parents
            }
            guard onlyFounding else { continue }
            // Every other device's entry must follow it.
            var descendants = Set<[UInt8]>()
            var next = children[entry.hash] ?? []
            while let hash = next.popLast() {
                guard descendants.insert(hash).inserted else { continue }
                next += children[hash] ?? []
            }
            if log.entries.allSatisfy({ $0.author == entry.author || descendants.contains($0.hash) }) {
                found.insert(entry.hash)
            }
        }
        return found.count == 1 ? found : []
    }

    /// Of `roots`, those a history sealed in `log` carries: the keys of epochs the log starts.
    static func passable(_ roots: [KeyEpoch: SecureBytes], in log: GroupLog) -> [KeyEpoch: SecureBytes] {
        let started = log.startedEpochs
        return roots.filter { started.contains($0.key) }
    }
}
