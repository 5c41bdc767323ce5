/// What the entries an entry's author knew (its ancestors) mean, for each entry a replay checks: the
/// meaning of one set of entries is built from the meaning of the same set without its last entry
/// whenever that entry cannot change what the others mean (``GroupEffect/extended(by:)``), and the
/// latest few are kept, so a replay decides each entry about once instead of deciding every entry's
/// past from the log's start (red team round 11, F3: a chain of 4,087 made-up joins took 96 s).
///
/// Every answer is the one deciding the whole set at once gives (``GroupEffect/init(graph:subset:unproven:)``);
/// only how much is decided again differs.
struct GroupPasts {
    private let graph: GroupGraph
    /// The effect and meaning of sets of entries (each closed under ancestors), the latest used last.
    private var known: [EntrySet: Past] = [:]
    private var recent: [EntrySet] = []
    /// For each entry's past, how many entries with that past have not asked for it yet: a known set
    /// no one will ask for again is extended in place rather than copied (copying the members of a
    /// past for each of thousands of entries would be quadratic again).
    private var waiting: [EntrySet: Int] = [:]

    /// The most sets kept: one per branch a replay goes back and forth between (each takes a few
    /// KiB, and the members it holds).
    private static let capacity = 64
    /// The most entries taken off a set to find one whose meaning is known; past that, the rest is
    /// decided at once.
    private static let longestWalk = 64

    /// The meaning of a set of entries, and which of them have effect.
    private struct Past {
        var effect: GroupEffect
        var replay: GroupState.Replay
    }

    /// Pasts of the entries of `graph`.
    init(graph: GroupGraph) {
        self.graph = graph
        for ancestors in graph.ancestors { waiting[ancestors, default: 0] += 1 }
    }

    /// What the entries before `index` that its author knew (its ancestors) mean, for checking it:
    /// without which entries are void, nor whether a new epoch is needed.
    mutating func state(before index: Int) -> GroupState {
        let ancestors = graph.ancestors[index]
        let state = past(of: ancestors).replay.state(complete: false)
        if let count = waiting[ancestors] { waiting[ancestors] = count > 1 ? count - 1 : nil }
        return state
    }

    /// Which of the entries `subset` (closed under ancestors) have effect, none of the joins being
    /// unproven.
    mutating func effect(of subset: EntrySet) -> EntrySet { past(of: subset).effect.effective }

    private mutating func past(of subset: EntrySet) -> Past {
        if let past = known[subset] {
            remember(subset, past)
            return past
        }
        // Take off the last entries while each might be decided on its own, until the rest is known.
        var rest = subset
        var count = subset.count
        var peeled: [Int] = []
        var start: Past?
        while peeled.count < Self.longestWalk, let last = rest.last, mayExtend(last, count: count - 1) {
            rest.remove(last)
            count -= 1
            peeled.append(last)
            if let past = known[rest] {
                start = past
                // Extended in place when no entry will ask for it again.
                if waiting[rest] == nil { forget(rest) }
                break
            }
        }
        var past = start.take() ?? evaluate(rest)
        for index in peeled.reversed() {
            rest.insert(index)
            if let effect = past.effect.extended(by: index) {
                past.effect = effect
                past.replay.add(index, effective: effect.effective.contains(index))
            } else {
                past = evaluate(rest)
            }
        }
        remember(subset, past)
        return past
    }

    /// Whether the entry `index`, the last of a set of `count` entries besides it, might be decided
    /// on its own (``GroupEffect/extended(by:)`` decides): it follows them all, or it is no closing.
    private func mayExtend(_ index: Int, count: Int) -> Bool {
        if graph.ancestorCounts[index] == count { return true }
        switch graph.entries[index].change {
        case .revoked, .keysReplaced, .policy(.approval): return false
        default: return true
        }
    }

    /// Decides the entries `subset` all at once.
    private func evaluate(_ subset: EntrySet) -> Past {
        let effect = GroupEffect(graph: graph, subset: subset)
        var replay = GroupState.Replay(graph: graph)
        for index in subset { replay.add(index, effective: effect.effective.contains(index)) }
        return Past(effect: effect, replay: replay)
    }

    /// Forgets the meaning of `subset`.
    private mutating func forget(_ subset: EntrySet) {
        known[subset] = nil
        recent.removeAll { $0 == subset }
    }

    /// Keeps `past` as the meaning of `subset`, used last, forgetting the one used longest ago when
    /// more than ``capacity`` are kept.
    private mutating func remember(_ subset: EntrySet, _ past: Past) {
        if known.updateValue(past, forKey: subset) != nil, let position = recent.firstIndex(of: subset) {
            recent.remove(at: position)
        }
        recent.append(subset)
        if recent.count > Self.capacity { known[recent.removeFirst()] = nil }
    }
}
