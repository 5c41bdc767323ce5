import Foundation

/// Which entries of a membership log have effect, decided from the whole log (docs/FORMAT.md, "What a
/// log means").
///
/// Every entry was checked against its own ancestors when it was added. Taken together, entries void
/// one another when neither author knew of the other (they are *concurrent*):
/// - an entry needs its author's admission, known to it and with effect (a founding join needs none);
/// - a revocation of a device voids what the device wrote at the same time (its own revocations
///   excepted: two devices revoking each other are both revoked), and so does a rekey of the device
///   (what a copy holding its old keys wrote), its revocations included; a rekey at the same time as
///   the device's revocation has no effect (yet it vouches for the device's revocation of that
///   revoker: both lose), and of two rekeys of one device at the same time, one that
///   another device acknowledged while the other was not (the group heard of it first) wins: the
///   other, and whatever follows it, has no effect (two acknowledged, or none, revoke the device);
/// - a passphrase join is void when a revocation, a rekey or a policy of approval was written at the
///   same time: it came in by a door that was being closed. (A new key epoch alone closes nothing:
///   while joins are open, anyone with the passphrase may join after it too.) A closing has this power whether or not it is itself voided by the
///   joining device, so **no device defends its own admission**; it loses it only when a third
///   device's revocation or rekey voids it, and never by a device that came in by the same door
///   (``cameThroughDoor(_:closedBy:before:)``).
/// - a join whose proof does not verify under the key this device trusts for its epoch (made with a
///   forged key under a real epoch's id, or with none) has no effect;
/// - A joining device whose join was voided only by closings (revocations, policies, rekeys) of devices that it
///   revoked at the same time, having known everything they knew, still revokes them (*both lose*:
///   its join is void and they are out): a revoked device's stale copy cannot undo its revocation by
///   closing the door on its revoker, and a thief racing the door cannot get in by revoking its
///   closer. Such a revocation voids none of what the revoked device wrote at the same time: its
///   closings still void every other join made then.
///
/// The rules are applied without regard to the order of the entries: an entry has effect once
/// everything it depends on is decided in its favour, is void once anything decides against it,
/// until nothing changes. What is still undecided then depends on a cycle of entries voiding one
/// another, and **in doubt, out**: such an admission, or anything else, has no effect, but such a
/// revocation takes effect when its author's admission does. So a log's meaning never depends on which entry's hash is smaller, and
/// doubt only ever shrinks the group.
///
/// What an entry's author knew is decided for every entry a log replays; an entry that cannot change
/// what was decided of the entries before it (``extended(by:)``) is decided on its own, so that a log
/// of thousands of entries is not decided again from its start for each one (red team round 11, F3).
struct GroupEffect {
    /// The entries with effect.
    private(set) var effective: EntrySet

    private enum Verdict: Equatable {
        case undecided, effective, void
        /// A revocation that counts only because its author's join was voided by the device it
        /// revokes (both lose): it revokes that device, but voids nothing that device wrote.
        case selfDefended
    }

    /// A three-valued answer: decided yes, decided no, or not yet known.
    fileprivate enum Answer: Equatable {
        case yes, no, unknown

        static func any(_ answers: some Sequence<Answer>) -> Answer {
            var result = Answer.no
            for answer in answers {
                if answer == .yes { return .yes }
                if answer == .unknown { result = .unknown }
            }
            return result
        }

        static func all(_ answers: some Sequence<Answer>) -> Answer {
            var result = Answer.yes
            for answer in answers {
                if answer == .no { return .no }
                if answer == .unknown { result = .unknown }
            }
            return result
        }

        var negated: Answer {
            switch self {
            case .yes: return .no
            case .no: return .yes
            case .unknown: return .unknown
            }
        }
    }

    private let graph: GroupGraph
    /// The entries whose effect is decided.
    private(set) var subset: EntrySet
    /// How many entries `subset` holds.
    private var count: Int
    /// Joins whose proofs do not verify under the key this device trusts for their epoch.
    private let unproven: EntrySet
    private var verdicts: [Verdict]
    /// Whether the entries of `subset` follow one another (none is concurrent with another).
    private var isChain: Bool
    /// Whether every verdict was reached in the first pass over `subset`: what an entry added after
    /// them sees in that pass is final.
    private var settledInOnePass: Bool
    /// Whether `subset` holds two rekeys of one device: a race an entry added after them may decide
    /// (``lostRace(_:)``) by following one and not the other.
    private var rekeysTwice: Bool
    /// What the passes of ``init(graph:subset:unproven:)`` ask again and again while no verdict
    /// changes; `nil` outside them.
    private var memo: ClosingMemo?
    /// Whether a rekey was decided in doubt (``witnessed(_:)``): an entry added after it may witness
    /// it, which changes what was decided.
    private var rekeyDecidedInDoubt = false
    /// Rekeys found witnessed (``acknowledgedByWitness(_:counting:)``) by ``extended(by:)``.
    private var witnessedRekeys: Set<Int> = []
    /// The closings among `subset` that another entry of their own device is concurrent with: its
    /// history forked, and a copy wrote one side (``shutsDoor(_:on:)``).
    private var forkedClosings: EntrySet
    /// The entries of `subset` by each device that wrote a forked closing.
    private var entriesOfForkers: [UUID: [Int]] = [:]

    /// The effect of the entries `subset` of `graph` (closed under ancestors), of which the joins
    /// `unproven` do not prove the group key (they have no effect, and nor has anything that needs
    /// them).
    init(graph: GroupGraph, subset: EntrySet, unproven: EntrySet? = nil) {
        self.graph = graph
        self.subset = subset
        let unproven = unproven ?? EntrySet(count: graph.entries.count)
        self.unproven = unproven
        count = subset.count
        isChain = Self.isChain(subset, in: graph)
        rekeysTwice = graph.rekeysOf.values.contains { $0.lazy.filter { subset.contains($0) }.count > 1 }
        verdicts = [Verdict](repeating: .undecided, count: graph.entries.count)
        memo = nil
        (forkedClosings, entriesOfForkers) = Self.forks(in: graph, subset: subset)
        // Without two concurrent entries nothing voids anything: every entry was checked against its
        // ancestors, so its author was an active member, and each has effect.
        if unproven.isEmpty, isChain {
            effective = subset
            settledInOnePass = true
            for index in subset { verdicts[index] = .effective }
            return
        }
        effective = EntrySet(count: graph.entries.count)
        settledInOnePass = false
        memo = ClosingMemo(graph: graph, subset: subset)
        let passes = decideAll()
        settledInOnePass = passes <= 1
        // A rekey left in doubt depends on a cycle through entries it would void: it stands only
        // when the group heard of it first, void otherwise; then what depended on it is decided.
        while true {
            let doubtful = subset.filter { verdicts[$0] == .undecided && graph.entries[$0].change.isKeysReplaced }
            guard !doubtful.isEmpty else { break }
            rekeyDecidedInDoubt = true
            settledInOnePass = false
            let standing = doubtful.filter { witnessed($0) && supported($0) == .yes }
            for rekey in doubtful {
                verdicts[rekey] = standing.contains(rekey) ? .effective : .void
                memo?.verdictChanged(rekey)
            }
            _ = decideAll()
        }
        memo = nil
        for index in subset { include(index) }
    }

    /// Decides what it can, pass after pass in canonical order, with every decision made so far,
    /// until a pass decides nothing; a decision is never revised, so this ends after at most one
    /// pass per entry. Returns the number of passes that decided something.
    private mutating func decideAll() -> Int {
        var changed = true
        var passes = 0
        while changed {
            changed = false
            for index in subset where verdicts[index] == .undecided {
                let verdict = decide(index)
                if verdict != .undecided {
                    verdicts[index] = verdict
                    memo?.verdictChanged(index)
                    changed = true
                }
            }
            if changed { passes += 1 }
        }
        return passes
    }

    /// Whether a *witness* of the rekey `index` acknowledged it before hearing of any revocation of
    /// its device made at the same time: an entry, not decided void, by another device admitted by an
    /// entry the rekey follows (a member its author knew), that follows the rekey and no revocation of
    /// the author concurrent with it. An owner's rekey, made on the log as it stands, has witnesses in
    /// every member it knew, and each acknowledges it when it merges it
    /// (``GroupContext/acknowledgeOthers()``); a rekey a stolen copy signs on an old part of
    /// the log has as witnesses only the devices admitted before that part, and none of them
    /// acknowledges it once it knows a revocation of the device (red team round 26, F1: a revoked
    /// founder's copy signed a rekey on its own founding entry, whose voiding of the founder's
    /// approvals left the revoker's admission, and with it the revocation, in doubt; in doubt, out
    /// took the revoker, and every device the founder approved, out of the group).
    private func witnessed(_ index: Int) -> Bool {
        acknowledgedByWitness(index) { verdicts[$0] != .void }
    }

    /// Counts the entry `index`, decided, among those with effect if it has effect.
    private mutating func include(_ index: Int) {
        switch verdicts[index] {
        case .effective, .selfDefended: effective.insert(index)
        case .undecided:
            // In doubt, a revocation counts, but only one whose author's admission counts: devices
            // whose joins void one another (made-up ones from an old bundle) would otherwise revoke
            // every member (red team round 13, F4).
            if case .revoked = graph.entries[index].change, supported(index) == .yes { effective.insert(index) }
        case .void: break
        }
    }

    /// The effect of these entries and `index`, a later entry whose ancestors are all among them (a
    /// set closed under ancestors again, of which it is the last entry), when it is decided on its own:
    /// it cannot change what was decided of them, so deciding it once, after them, gives what deciding
    /// them all together does. `nil` when it might change that, or be decided differently, and
    /// everything must be decided together (``init(graph:subset:unproven:)``).
    ///
    /// An entry concurrent with none of them (it follows them all) voids nothing: every rule voids
    /// only concurrent entries, but for a rekey, which vouches for its device's revocations that
    /// another of its rekeys would void, and a revocation, decided in a later pass on what it saw in
    /// an earlier one (when it counts only because both lose). An entry concurrent with some voids
    /// nothing unless it is a closing (a revocation, a rekey or a policy of approval), but acknowledges
    /// the rekeys it follows, which decides a race between two rekeys of one device.
    func extended(by index: Int) -> GroupEffect? {
        guard !rekeyDecidedInDoubt, forkedClosings.isEmpty else { return nil }
        let entry = graph.entries[index]
        let follows = graph.ancestorCounts[index] == count
        // An entry forking its device's history may take the power of its closings away.
        if !follows, subset.contains(where: { graph.entries[$0].author == entry.author && graph.concurrent($0, index) })
        {
            return nil
        }
        // An entry of another device following a rekey no witness acknowledged yet may be its first
        // witness, which decides whether a revoker answers that rekey (both lose).
        // Once witnessed, a rekey stays so as entries are added one by one (none of them is a
        // closing beside a witness's admission), so each is asked once per replay, not per entry.
        var witnessed = witnessedRekeys
        for (device, rekeys) in graph.rekeysOf where device != entry.author {
            for rekey in rekeys
            where subset.contains(rekey) && graph.ancestors[index].contains(rekey) && !witnessed.contains(rekey) {
                guard acknowledgedByWitness(rekey) else { return nil }
                witnessed.insert(rekey)
            }
        }
        switch entry.change {
        case .keysReplaced:
            guard follows, !vouchingMatters(for: entry.author) else { return nil }
        case .revoked:
            guard follows, settledInOnePass else { return nil }
        case .policy(.approval):
            guard follows else { return nil }
        default:
            guard follows || !rekeysTwice else { return nil }
        }
        var extended = self
        extended.witnessedRekeys = witnessed
        extended.subset.insert(index)
        extended.count += 1
        extended.isChain = isChain && follows
        if case .keysReplaced = entry.change,
            (graph.rekeysOf[entry.author] ?? []).contains(where: subset.contains)
        {
            extended.rekeysTwice = true
        }
        if unproven.isEmpty, extended.isChain {
            extended.verdicts[index] = .effective
        } else {
            extended.verdicts[index] = extended.decide(index)
            // A rekey in doubt is decided with everything together.
            if extended.verdicts[index] == .undecided, entry.change.isKeysReplaced { return nil }
        }
        extended.include(index)
        return extended
    }

    /// Whether a rekey of `device` following every entry would vouch for a revocation of that device
    /// that one of its rekeys concurrent with it voids (``voidedByRekey(_:)``).
    private func vouchingMatters(for device: UUID) -> Bool {
        let rekeys = (graph.rekeysOf[device] ?? []).filter(subset.contains)
        return (graph.revocationsBy[device] ?? []).contains { revocation in
            subset.contains(revocation) && rekeys.contains { graph.concurrent($0, revocation) }
        }
    }

    /// Whether the entries `subset` (closed under ancestors) follow one another: each one's ancestors
    /// are all the entries before it.
    private static func isChain(_ subset: EntrySet, in graph: GroupGraph) -> Bool {
        var rank = 0
        for index in subset {
            guard graph.ancestorCounts[index] == rank else { return false }
            rank += 1
        }
        return true
    }

    private func answer(_ index: Int) -> Answer {
        switch verdicts[index] {
        case .effective, .selfDefended: return .yes
        case .void: return .no
        case .undecided: return .unknown
        }
    }

    private func decide(_ index: Int) -> Verdict {
        let entry = graph.entries[index]
        let answer: Answer
        switch entry.change {
        case .joined:
            answer = unproven.contains(index) ? .no : graph.founding.contains(index) ? .yes : joinStands(index)
        case .revoked(let target, _):
            // Two devices revoking each other are both revoked; a device revoked at the same time
            // revokes no one else.
            let unvoided = Answer.all([
                voidedByRekey(index).negated, voidedByRevocation(index, except: [target]).negated,
                followsRekeys(index, sparing: target),
            ])
            let stands = Answer.all([supported(index), unvoided])
            if stands == .no, unvoided != .no, supported(index) == .no {
                // Both lose, or not yet known: decided only once what it depends on is, whatever
                // the order entries are taken in.
                switch Answer.all([unvoided, selfDefended(index)]) {
                case .yes: return .selfDefended
                case .unknown: return .undecided
                case .no: break
                }
            }
            answer = stands
        case .keysReplaced:
            answer = rekeyStands(index)
        default:
            answer = Answer.all([
                supported(index), voidedByRevocation(index, except: []).negated, voidedByRekey(index).negated,
                followsRekeys(index),
            ])
        }
        switch answer {
        case .yes: return .effective
        case .no: return .void
        case .unknown: return .undecided
        }
    }

    /// Whether the author's admission, known to the entry, has effect.
    private func supported(_ index: Int) -> Answer {
        let admissions = (graph.admissionsOf[graph.entries[index].author] ?? []).filter {
            graph.ancestors[index].contains($0)
        }
        return Answer.any(admissions.map(answer))
    }

    /// Whether a revocation of the author concurrent with the entry takes effect; revocations made
    /// by the devices `except` are left out, and so are those that count only because both lose: a
    /// device revoked that way is out from then on, but what it wrote at the same time stands, its
    /// closings above all. (Otherwise a thief racing the door with an old bundle and the passphrase
    /// voided the closer's policy of approval for every other join it made at the same time, and
    /// its made-up devices got in: red team round 12, F1.)
    private func voidedByRevocation(_ index: Int, except: [UUID]) -> Answer {
        var result = Answer.no
        for revocation in graph.revocationsOf[graph.entries[index].author] ?? []
        where subset.contains(revocation) && verdicts[revocation] != .selfDefended
            && !except.contains(graph.entries[revocation].author) && graph.concurrent(revocation, index)
        {
            switch answer(revocation) {
            case .yes: return .yes
            case .unknown: result = .unknown
            case .no: break
            }
        }
        return result
    }

    /// Whether a rekey of the author concurrent with the entry has effect. A revocation is voided
    /// only by a rekey of the keys it was signed with that no other rekey of its author vouches for:
    /// one signed with keys another rekey put in place (that rekey among its ancestors), or that
    /// another rekey followed (the revocation among that rekey's ancestors), may come from the holder
    /// of the new keys as well as from a copy, and in doubt a revocation counts (red team round 8,
    /// N1: a leaked copy's late rekey voided the revocations its owner made before and after its own
    /// rekey, and a revoked device came back).
    private func voidedByRekey(_ index: Int) -> Answer {
        let rekeys = (graph.rekeysOf[graph.entries[index].author] ?? []).filter(subset.contains)
        let isRevocation = graph.entries[index].change.revokedDevice != nil
        let voiding = rekeys.filter { rekey in
            guard graph.concurrent(rekey, index) else { return false }
            guard isRevocation else { return true }
            return !rekeys.contains { other in
                other != rekey && !graph.ancestors[rekey].contains(other)
                    && (graph.ancestors[index].contains(other) || graph.ancestors[other].contains(index))
            }
        }
        return Answer.any(voiding.map(answer))
    }

    /// Whether every rekey of the author that the entry follows has effect: an entry signed with the
    /// keys a rekey without effect put in place came from whoever made that rekey.
    ///
    /// For a revocation of `target`, a rekey counts when only revocations by `target` void it: the two
    /// devices revoke each other, and both lose. (Otherwise a thief's stale copy, never told of its
    /// revoker's rekey, revoked the revoker at the same time as being revoked: that voided the rekey,
    /// with it the revocation signed with the new keys, and the thief stayed. Red team round 15, N1.)
    private func followsRekeys(_ index: Int, sparing target: UUID? = nil) -> Answer {
        let followed = (graph.rekeysOf[graph.entries[index].author] ?? []).filter {
            graph.ancestors[index].contains($0)
        }
        return Answer.all(
            followed.map { rekey in
                guard let target, verdicts[rekey] != .effective else { return answer(rekey) }
                return rekeyStands(rekey, sparing: target)
            }
        )
    }

    /// Whether the rekey `index` has effect, or would but for revocations of its author by `target`.
    private func rekeyStands(_ index: Int, sparing target: UUID? = nil) -> Answer {
        Answer.all([
            supported(index), voidedByRevocation(index, except: target.map { [$0] } ?? []).negated,
            followsRekeys(index, sparing: target), lostRace(index).negated,
        ])
    }

    /// Whether the rekey `index` lost to a concurrent rekey of the same device, one that another
    /// device acknowledged first (red team round 8, N2): an entry of another device follows the rival
    /// and not this one, and no entry of another device follows this one and not the rival. Two
    /// copies holding the same keys are told apart only by which one the group heard of first; so a
    /// leaked copy's rekey made after the owner's had reached a member has no effect, nor has
    /// anything signed with its keys, however late it comes. When each was acknowledged without the
    /// other (a true race), neither loses, and the device is revoked.
    private func lostRace(_ index: Int) -> Answer {
        let rivals = (graph.rekeysOf[graph.entries[index].author] ?? []).filter {
            subset.contains($0) && graph.concurrent($0, index)
        }
        return Answer.any(
            rivals.map { rival in
                Answer.all([
                    acknowledged(rival, notKnowing: index), acknowledged(index, notKnowing: rival).negated,
                ])
            }
        )
    }

    /// Whether an entry with effect by a device other than the author of the rekey `index` follows it
    /// and not the entry `other`.
    private func acknowledged(_ index: Int, notKnowing other: Int) -> Answer {
        // Most rekeys none follows: side by side, thousands of them made each rekey's race scan the
        // log once per rival.
        guard graph.followedByOthers[index] else { return .no }
        let author = graph.entries[index].author
        let acknowledgements = subset.filter {
            graph.entries[$0].author != author && graph.ancestors[$0].contains(index)
                && !graph.ancestors[$0].contains(other)
        }
        return Answer.any(acknowledgements.map(answer))
    }

    /// Whether nothing concurrent with the passphrase join `index` voids it.
    private func joinStands(_ index: Int) -> Answer {
        var stands = Answer.yes
        forEachClosing(concurrentWith: index) { _, power in
            if power == .yes { stands = .no }
            if power == .unknown { stands = .unknown }
            return power != .yes
        }
        return stands
    }

    /// Calls `body` with each entry concurrent with the passphrase join `index` that may void it, and
    /// whether it does, until `body` returns `false`. Their power never depends on anything the
    /// joining device did: no device defends its own admission.
    private func forEachClosing(concurrentWith index: Int, _ body: (_ closing: Int, _ power: Answer) -> Bool) {
        let device = graph.entries[index].author
        guard let memo else {
            for closing in Self.closings(in: graph, subset: subset) where graph.concurrent(closing, index) {
                let power = closingPower(closing)
                guard
                    body(
                        closing,
                        Answer.all([
                            power.standing, power.voidedByRevocation(except: device).negated,
                            shutsDoor(closing, on: index),
                        ])
                    )
                else { return }
            }
            return
        }
        memo.forEachClosing(concurrentWith: index) { closing in
            let power = memo.power(of: closing) { closingPower(closing) }
            return Answer.all([
                power.standing, power.voidedByRevocation(except: device).negated, shutsDoor(closing, on: index),
            ])
        } _: { closing, power in
            body(closing, power)
        }
    }

    /// Whether the closing `closing` may void the passphrase join `join` as far as its own device's
    /// history goes: not when another entry of that device, concurrent with the closing, follows the
    /// join (the device knew the join, so the closing claiming not to came from a copy holding its
    /// keys, signed on an old part of the log), unless a witness (``witnesses(of:)``) acknowledged the
    /// closing with an entry that has effect; undecided while such an entry is. A device that never
    /// forked is unaffected. (Red team round
    /// 26, F1: a revoked founder's copy signed a closing on its founding entry, which voided every
    /// passphrase join since, the revoker's among them, and the revocation with it.)
    private func shutsDoor(_ closing: Int, on join: Int) -> Answer {
        guard forkedClosings.contains(closing) else { return .yes }
        let author = graph.entries[closing].author
        let knew = (entriesOfForkers[author] ?? []).contains {
            $0 != closing && graph.concurrent($0, closing) && graph.ancestors[$0].contains(join)
        }
        guard knew else { return .yes }
        // A witness's entry counts once it has effect: a copy of another device signed one with keys
        // that device has replaced since, which is void once its owner's rekey is known (red team
        // round 30, F2).
        let found = witnesses(of: closing)
        if found.contains(where: { verdicts[$0] == .effective }) { return .yes }
        return found.contains(where: { verdicts[$0] == .undecided }) ? .unknown : .no
    }

    /// Whether an entry of a witness, among those `counting` admits, follows the entry `index`
    /// (``witnesses(of:)``). By default decided from the log's shape alone.
    private func acknowledgedByWitness(_ index: Int, counting: (Int) -> Bool = { _ in true }) -> Bool {
        witnesses(of: index).contains(where: counting)
    }

    /// The entries of witnesses that follow the entry `index` and no revocation of its author, nor
    /// any other entry of its author, made at the same time: of another device, undisputed and
    /// admitted by an entry `index` follows (a member its author knew). They depend on the log's
    /// shape alone, so a pass finds them once per entry asked about (a mesh of made-up devices asked
    /// about every closing for every join: red team round 14, F6).
    private func witnesses(of index: Int) -> [Int] {
        memo?.witnesses(of: index) { findWitnesses(of: index) } ?? findWitnesses(of: index)
    }

    private func findWitnesses(of index: Int) -> [Int] {
        guard graph.followedByOthers[index] else { return [] }
        let author = graph.entries[index].author
        let revocations = (graph.revocationsOf[author] ?? []).filter {
            subset.contains($0) && graph.concurrent($0, index)
        }
        // A witness that already knew another branch of the author's history (an entry of the author
        // concurrent with this one) vouches for neither: it merged a fork, not what it heard first
        // (red team round 28: a member acknowledged a revoked device's copy's rekey, signed on the
        // device's own join, although it knew the device's later acknowledgement of a join the rekey
        // then voided).
        let otherBranch = subset.filter { graph.entries[$0].author == author && graph.concurrent($0, index) }
        let closings = memo?.closings ?? Self.closings(in: graph, subset: subset)
        return subset.filter { witness in
            let device = graph.entries[witness].author
            guard device != author, graph.ancestors[witness].contains(index),
                !revocations.contains(where: graph.ancestors[witness].contains),
                !otherBranch.contains(where: graph.ancestors[witness].contains)
            else { return false }
            // A witness is a member nobody disputes, and was not revoked when it acknowledged.
            // Otherwise a made-up device joining with the original key, or another stolen device's
            // old copy, vouched for a thief's rekey (red team round 29, F1 and F2).
            let revokedThen = (graph.revocationsOf[device] ?? []).contains {
                subset.contains($0) && graph.concurrent($0, witness)
            }
            var asked: Set<UUID> = []
            return !revokedThen && undisputed(device, before: index, closings: closings, asked: &asked)
        }
    }

    /// Whether `device` is a member nobody disputes, as of the entry `index`: admitted, by an entry
    /// `index` follows, at the founding, by a passphrase join no closing was made beside, or by an
    /// approval of an undisputed member made with no revocation of that member and no other entry of
    /// it beside the approval. A device's history forks only when a copy of it signs: a copy's
    /// approval of a made-up device on the device's old entries admitted a witness for the copy's
    /// rekey (red team round 30, F1). `asked` holds the devices asked about already.
    private func undisputed(_ device: UUID, before index: Int, closings: [Int], asked: inout Set<UUID>) -> Bool {
        guard asked.insert(device).inserted else { return false }
        for admission in graph.admissionsOf[device] ?? [] where graph.ancestors[index].contains(admission) {
            if graph.founding.contains(admission) { return true }
            if graph.entries[admission].change.isJoin {
                if !closings.contains(where: { graph.concurrent($0, admission) }) { return true }
                continue
            }
            let approver = graph.entries[admission].author
            let revocations = graph.revocationsOf[approver] ?? []
            let contested = subset.contains { other in
                other != admission && graph.concurrent(other, admission)
                    && (graph.entries[other].author == approver || revocations.contains(other))
            }
            if !contested, undisputed(approver, before: index, closings: closings, asked: &asked) { return true }
        }
        return false
    }

    /// The closings among `subset` whose device's history forked (another entry of that device is
    /// concurrent with the closing), and the entries of those devices.
    private static func forks(in graph: GroupGraph, subset: EntrySet) -> (EntrySet, [UUID: [Int]]) {
        var forked = EntrySet(count: graph.entries.count)
        let closings = closings(in: graph, subset: subset)
        guard !closings.isEmpty else { return (forked, [:]) }
        let closers = Set(closings.map { graph.entries[$0].author })
        var entries: [UUID: [Int]] = [:]
        for index in subset where closers.contains(graph.entries[index].author) {
            entries[graph.entries[index].author, default: []].append(index)
        }
        var forkers: [UUID: [Int]] = [:]
        for closing in closings {
            let author = graph.entries[closing].author
            if (entries[author] ?? []).contains(where: { $0 != closing && graph.concurrent($0, closing) }) {
                forked.insert(closing)
                forkers[author] = entries[author]
            }
        }
        return (forked, forkers)
    }

    /// Every closing among `subset`: revocations, rekeys and policies of approval.
    fileprivate static func closings(in graph: GroupGraph, subset: EntrySet) -> [Int] {
        subset.filter { index in
            switch graph.entries[index].change {
            case .revoked, .keysReplaced, .policy(.approval): return true
            default: return false
            }
        }
    }

    /// The power of the closing `index` against any join, but for the revocations of its author by the
    /// joining device: the one part that depends on which device joins.
    private func closingPower(_ index: Int) -> ClosingPower {
        let entry = graph.entries[index]
        let standing: Answer
        var except: UUID?
        switch entry.change {
        case .revoked(let target, _):
            standing = Answer.all([revokerStands(index), voidedByRekey(index).negated])
            except = target
        case .keysReplaced:
            standing = supported(index)
        default:
            standing = Answer.all([supported(index), voidedByRekey(index).negated])
        }
        var power = ClosingPower(standing: standing)
        // Without standing it has no power, whatever revokes its author.
        guard standing != .no else { return power }
        for revocation in graph.revocationsOf[entry.author] ?? []
        where subset.contains(revocation) && graph.concurrent(revocation, index)
            && verdicts[revocation] != .selfDefended
        {
            let author = graph.entries[revocation].author
            guard author != except, !cameThroughDoor(author, closedBy: index, before: revocation) else { continue }
            power.note(answer(revocation), by: author)
        }
        return power
    }

    /// Whether the author of the revocation `index` stands to close the door with it: admitted, or
    /// revoking with effect only because both lose. Such a revocation still voids every other
    /// passphrase join made at the same time: a made-up device that joined from an old bundle, which a
    /// copy's closing followed so that no revocation could know it, got in when the revoker lost
    /// (red team round 33, F1). Undecided while the revocation may yet count that way.
    private func revokerStands(_ index: Int) -> Answer {
        let admitted = supported(index)
        guard admitted != .yes else { return .yes }
        switch verdicts[index] {
        case .selfDefended: return .yes
        case .undecided: return .unknown
        default: return admitted
        }
    }

    /// Whether every admission of `device` the entry `later` knew is a passphrase join made at the
    /// same time as the closing `index`: the device came in by the door that closing closes, so its
    /// revocations do not void the closing against any join. No device defends its own admission,
    /// nor do devices that came in by the same door defend one another: two made-up devices, each
    /// revoking the closer, left every closing in doubt and with it the closer's rekey and policy
    /// (red team round 14, F5).
    private func cameThroughDoor(_ device: UUID, closedBy index: Int, before later: Int) -> Bool {
        let admissions = (graph.admissionsOf[device] ?? []).filter { graph.ancestors[later].contains($0) }
        return !admissions.isEmpty
            && admissions.allSatisfy {
                graph.entries[$0].change.isJoin && !graph.founding.contains($0) && graph.concurrent($0, index)
            }
    }

    /// Whether the revocation `index`, whose author's admission was voided, takes effect all the same:
    /// the author joined by passphrase, and every entry that voided its join is a revocation or policy
    /// change by a device it revoked at the same time, having known everything that device
    /// knew then; this revocation is one of those.
    private func selfDefended(_ index: Int) -> Answer {
        let revocation = graph.entries[index]
        guard let target = revocation.change.revokedDevice else { return .no }
        let device = revocation.author
        let joins = (graph.admissionsOf[device] ?? []).filter {
            graph.ancestors[index].contains($0) && graph.entries[$0].change.isJoin && !graph.founding.contains($0)
        }
        guard let join = joins.first, joins.count == 1, !unproven.contains(join) else { return .no }
        var answersThis = false
        var result = Answer.yes
        forEachClosing(concurrentWith: join) { closing, power in
            guard power != .no else { return true }
            let answered =
                memo?.answered(closing, against: join) { answeredByRevocation(closing, against: join) }
                ?? answeredByRevocation(closing, against: join)
            guard answered else {
                result = power == .yes ? .no : .unknown
                return power != .yes
            }
            if graph.entries[closing].author == target, graph.concurrent(index, closing) { answersThis = true }
            return true
        }
        return answersThis ? result : .no
    }

    /// Whether the closing `closing`, concurrent with the passphrase join `join`, is answered by a
    /// revocation of its author that the joining device made at the same time, knowing everything
    /// the closing knew but what that revocation voids or shuts out (the closer's own entries its
    /// author had not seen, the passphrase joins made at the same time as it and what the devices
    /// they admitted wrote); for a closing whose device forked, whatever it knew. It depends on no
    /// verdict.
    private func answeredByRevocation(_ closing: Int, against join: Int) -> Bool {
        // A rekey a witness acknowledged is its owner's (a copy's on old entries has none): made-up
        // devices joining on old heads and revoking it do not take the owner out (red team round 14,
        // F5). An unwitnessed one is answered like any closing (round 28, F1: a revoked device's copy
        // signed one on its own join and came back), and so is one whose device's history forked
        // beside it, even when acknowledged: a copy's rekey, sent without the device's later
        // entries, found an honest member that had heard of none of them (round 31, F1).
        let forked = forkedClosings.contains(closing)
        if case .keysReplaced = graph.entries[closing].change, !forked, acknowledgedByWitness(closing) {
            return false
        }
        let closer = graph.entries[closing].author
        return (graph.revocationsBy[graph.entries[join].author] ?? []).contains { answering in
            guard subset.contains(answering), graph.ancestors[answering].contains(join),
                graph.entries[answering].change.revokedDevice == closer, graph.concurrent(answering, closing)
            else {
                return false
            }
            // A forked closing came from a copy, which can make it follow one more entry than any
            // revocation made before knew (a made-up device's join: red team round 32, F1): a
            // revocation of its device by the joining device answers it, whatever it knew.
            if forked { return true }
            // What the closing knew, but the closer's own entries the answering revocation voids,
            // the revocation knew. (Not what the join knew: two devices joining from one bundle
            // know nothing of each other's joins, and a revoked one's copy signed a closing on its
            // own join, which its revoker's join did not know, and came back; red team round 27, F1.)
            // Nor need it have known the devices that came in by the door it closes: a copy took in
            // a made-up device joining from an old bundle, then closed the door after it, so that no
            // revocation made before could know everything the closing knew (red team round 34, F1).
            return graph.ancestors[closing].subtracting(graph.ancestors[answering]).allSatisfy { unknown in
                guard graph.concurrent(unknown, answering) else { return false }
                let author = graph.entries[unknown].author
                if author == closer { return true }
                if graph.entries[unknown].change.isJoin, !graph.founding.contains(unknown) { return true }
                return cameThroughDoor(author, closedBy: answering, before: unknown)
            }
        }
    }
}

/// What a closing (``GroupEffect``) does against a concurrent join, for any joining device: whether
/// it stands on its own, and the revocations of its author that void it, summed up so that leaving
/// out one device's revocations takes no scan. (Its power against each join was found by scanning
/// its author's revocations once per join and closing: a mesh of 62 made-up devices revoking one
/// another took 150 s to refuse. Red team round 13, F3.)
private struct ClosingPower {
    /// Whether it has effect but for revocations of its author (its author's admission, and no rekey).
    var standing: GroupEffect.Answer
    /// Up to two authors of revocations with effect that void it: one other than any device.
    private var voidingAuthors: [UUID] = []
    /// Up to two authors of such revocations still undecided.
    private var doubtfulAuthors: [UUID] = []

    init(standing: GroupEffect.Answer) {
        self.standing = standing
    }

    mutating func note(_ answer: GroupEffect.Answer, by author: UUID) {
        switch answer {
        case .yes:
            if voidingAuthors.count < 2, !voidingAuthors.contains(author) { voidingAuthors.append(author) }
        case .unknown:
            if doubtfulAuthors.count < 2, !doubtfulAuthors.contains(author) { doubtfulAuthors.append(author) }
        case .no: break
        }
    }

    /// Whether a revocation of its author by a device other than `device` voids it.
    func voidedByRevocation(except device: UUID) -> GroupEffect.Answer {
        if voidingAuthors.contains(where: { $0 != device }) { return .yes }
        if doubtfulAuthors.contains(where: { $0 != device }) { return .unknown }
        return .no
    }
}

/// The closings of a set of entries and their powers (``ClosingPower``), kept until a verdict they
/// depend on changes: a pass of ``GroupEffect`` asks for them once per join (and per revocation whose
/// author joined by passphrase). A closing's power depends only on verdicts about its author: its
/// admissions, its rekeys, and revocations of it; so a verdict decided makes stale only the powers of
/// closings by the device it concerns (red team round 15: with every verdict making every power
/// stale, a member-carried mesh whose entries are decided one by one took minutes again).
private final class ClosingMemo {
    /// The closings among the entries, in order.
    let closings: [Int]
    private let graph: GroupGraph
    private var powers: [ClosingPower?]
    private var stamps: [Int]
    /// How many verdicts about each device were decided.
    private var versions: [UUID: Int] = [:]
    /// For each join asked about, the closings concurrent with it whose power against it is not
    /// decided against yet.
    private var open: [Int: [Int]] = [:]
    /// Which closings revocations by a joining device answer (``answered(_:against:_:)``).
    private var answers: [JoinClosing: Bool] = [:]
    /// The witnesses of each entry asked about (``witnesses(of:_:)``).
    private var witnesses: [Int: [Int]] = [:]

    private struct JoinClosing: Hashable {
        var join: Int
        var closing: Int
    }

    init(graph: GroupGraph, subset: EntrySet) {
        self.graph = graph
        closings = GroupEffect.closings(in: graph, subset: subset)
        powers = [ClosingPower?](repeating: nil, count: graph.entries.count)
        stamps = [Int](repeating: -1, count: graph.entries.count)
    }

    /// The verdict on entry `index` was decided: the powers of closings by the device it concerns
    /// (the device a revocation revokes, a rekey's author, an admission's device) may be stale.
    func verdictChanged(_ index: Int) {
        let entry = graph.entries[index]
        var concerned: [UUID] = []
        // A revocation's own verdict decides whether its author stands to close the door with it
        // (``GroupEffect``'s `revokerStands`).
        if let target = entry.change.revokedDevice { concerned += [target, entry.author] }
        if case .keysReplaced = entry.change { concerned.append(entry.author) }
        if let admitted = entry.admittedDevice { concerned.append(admitted) }
        for device in concerned { versions[device, default: 0] += 1 }
    }

    /// Calls `body` with each closing concurrent with the entry `index` (a passphrase join) and its
    /// power against it, from `power`, until `body` returns `false`; but for those already found to
    /// have none (a power decided against stays so, verdicts being never revised), and the one that
    /// stopped the last call first: a mesh of made-up devices asked each join about thousands of
    /// closings once per revocation (red team round 14, F6).
    func forEachClosing(
        concurrentWith index: Int,
        power: (Int) -> GroupEffect.Answer,
        _ body: (Int, GroupEffect.Answer) -> Bool
    ) {
        let candidates = open[index] ?? closings.filter { graph.concurrent($0, index) }
        var kept: [Int] = []
        for (position, closing) in candidates.enumerated() {
            let answer = power(closing)
            guard body(closing, answer) else {
                open[index] = [closing] + kept + candidates[(position + 1)...]
                return
            }
            if answer != .no { kept.append(closing) }
        }
        open[index] = kept
    }

    /// The witnesses of the entry `index` (``GroupEffect``'s), from `make` the first time it is
    /// asked: they depend on no verdict.
    func witnesses(of index: Int, _ make: () -> [Int]) -> [Int] {
        if let known = witnesses[index] { return known }
        let found = make()
        witnesses[index] = found
        return found
    }

    /// Whether the closing `closing` is answered against the join `join` (``GroupEffect``'s
    /// *both lose*), from `make` the first time it is asked: it depends on no verdict.
    func answered(_ closing: Int, against join: Int, _ make: () -> Bool) -> Bool {
        let key = JoinClosing(join: join, closing: closing)
        if let known = answers[key] { return known }
        let answer = make()
        answers[key] = answer
        return answer
    }

    /// The power of the closing `index`, from `make` unless noted since the last verdict about its
    /// author.
    func power(of index: Int, _ make: () -> ClosingPower) -> ClosingPower {
        let version = versions[graph.entries[index].author] ?? 0
        if stamps[index] == version, let power = powers[index] { return power }
        let power = make()
        powers[index] = power
        stamps[index] = version
        return power
    }
}

extension GroupEntry.Change {
    /// The device a revocation revokes.
    var revokedDevice: UUID? {
        if case .revoked(let device, _) = self { return device }
        return nil
    }
}
