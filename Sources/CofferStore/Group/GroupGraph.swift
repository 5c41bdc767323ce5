import Foundation

/// The entries of a log in canonical order with what each one's author knew: its ancestors.
///
/// Built once per replay and shared by every question asked of the log: whether one entry knew
/// another is a bit test, and the entries that may void others (revocations, rekeys, policies of
/// approval) are listed by device, in canonical order, so that deciding an entry's effect never
/// scans the whole log.
struct GroupGraph {
    let entries: [GroupEntry]
    /// For each entry, the set of its ancestors (by index).
    let ancestors: [EntrySet]
    /// For each entry, how many ancestors it has: as many as there are entries before it when it
    /// follows all of them.
    let ancestorCounts: [Int]
    /// Every entry.
    let everything: EntrySet
    /// The founding entries (joins naming the group's anchor).
    let founding: EntrySet
    /// By device, the entries admitting it (joins and additions), in canonical order.
    let admissionsOf: [UUID: [Int]]
    /// By device, the revocations of it, in canonical order.
    let revocationsOf: [UUID: [Int]]
    /// By device, the revocations it wrote, in canonical order.
    let revocationsBy: [UUID: [Int]]
    /// By device, the replacements of its keys, in canonical order.
    let rekeysOf: [UUID: [Int]]
    /// The policies of approval, in canonical order.
    let approvals: [Int]
    /// For each entry, whether an entry of another device follows it: only such an entry can
    /// acknowledge a rekey (``GroupEffect``), and a rekey none follows is acknowledged by no one.
    let followedByOthers: [Bool]

    init(_ entries: [GroupEntry], group: UUID) throws(CofferError) {
        self.entries = entries
        var position: [[UInt8]: Int] = [:]
        var ancestors: [EntrySet] = []
        ancestors.reserveCapacity(entries.count)
        let anchor = GroupEntry.anchor(group: group)
        for (index, entry) in entries.enumerated() {
            var known = EntrySet(count: entries.count)
            let founding = entry.parents == [anchor]
            guard founding ? entry.change.isJoin : index > 0 else {
                throw CofferError(
                    .notTrusted,
                    "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): it does not start this group's log; it was refused and nothing changed"
                )
            }
            if !founding {
                for parent in entry.parents {
                    guard let earlier = position[parent] else {
                        throw CofferError(
                            .notTrusted,
                            "the sync group's membership log is not valid at entry \(index + 1) (by device \(entry.author.uuidString)): it does not follow entries of the log before it; it was refused and nothing changed"
                        )
                    }
                    known.insert(earlier)
                    known.formUnion(ancestors[earlier])
                }
            }
            position[entry.hash] = index
            ancestors.append(known)
        }
        self.ancestors = ancestors
        ancestorCounts = ancestors.map(\.count)
        everything = EntrySet(0..<entries.count, count: entries.count)
        var founding = EntrySet(count: entries.count)
        var admissionsOf: [UUID: [Int]] = [:]
        var revocationsOf: [UUID: [Int]] = [:]
        var revocationsBy: [UUID: [Int]] = [:]
        var rekeysOf: [UUID: [Int]] = [:]
        var approvals: [Int] = []
        for (index, entry) in entries.enumerated() {
            if entry.parents == [anchor] { founding.insert(index) }
            if let device = entry.admittedDevice { admissionsOf[device, default: []].append(index) }
            switch entry.change {
            case .revoked(let device, _):
                revocationsOf[device, default: []].append(index)
                revocationsBy[entry.author, default: []].append(index)
            case .keysReplaced: rekeysOf[entry.author, default: []].append(index)
            case .policy(.approval): approvals.append(index)
            default: break
            }
        }
        self.founding = founding
        self.admissionsOf = admissionsOf
        self.revocationsOf = revocationsOf
        self.revocationsBy = revocationsBy
        self.rekeysOf = rekeysOf
        self.approvals = approvals
        // What each device's entries followed, gathered first: a pass per device rather than per entry
        // (a log of thousands of entries from a few devices is quadratic the other way).
        let authors = entries.map(\.author)
        var followedBy: [UUID: EntrySet] = [:]
        for (index, author) in authors.enumerated() {
            followedBy[author, default: EntrySet(count: entries.count)].formUnion(ancestors[index])
        }
        var followedByOthers = [Bool](repeating: false, count: entries.count)
        for (author, followed) in followedBy {
            for ancestor in followed where authors[ancestor] != author { followedByOthers[ancestor] = true }
        }
        self.followedByOthers = followedByOthers
    }

    /// Whether neither entry was known to the other's author.
    func concurrent(_ first: Int, _ second: Int) -> Bool {
        first != second && !ancestors[first].contains(second) && !ancestors[second].contains(first)
    }
}
