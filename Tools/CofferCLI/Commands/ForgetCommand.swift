import Coffer
import Foundation

/// `coffer forget SNAPSHOT…` or `coffer forget --keep-…`: drops snapshots by id or name, or by a
/// retention policy applied to each group of snapshots, as restic's `forget` does.
struct ForgetCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "forget",
        abstract: "Drop snapshots, by id or by a retention policy; chunks nothing else uses are freed at once.",
        discussion: """
            With SNAPSHOT arguments, drops those (a name means this host's latest, or --host's). With
            --keep-* rules, groups the snapshots by host and name (--group-by), applies the rules to each
            group, newest first, and drops every snapshot no rule keeps; each is listed with what kept it.
            Rules count natural calendar periods (an hour, a day, an ISO week from Monday, a month, a
            year) that hold a snapshot, as restic does: --keep-daily 7 keeps the newest snapshot of each
            of the 7 newest days that have one. --keep-within counts back from the group's newest
            snapshot, not from now. A rule with count left at the group's oldest snapshot keeps it too.
            A policy with no rule, or one that would drop all of a group, is refused. Space comes back at
            once: each snapshot goes in one transaction with the chunks only it used. --dry-run shows the
            decisions and changes nothing.
            """,
        examples: [
            "coffer forget 3f9c2a71                                 # one snapshot, by id",
            "coffer forget --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --dry-run",
            "coffer forget --keep-within 30d --keep-tag important --host laptop",
        ]
    )

    @Option(value: "N", help: "Keep the N newest snapshots.")
    var keepLast: KeepCount?

    @Option(value: "N", help: "Keep the newest snapshot of each of the N newest hours that have one.")
    var keepHourly: KeepCount?

    @Option(value: "N", help: "Keep the newest snapshot of each of the N newest days that have one.")
    var keepDaily: KeepCount?

    @Option(value: "N", help: "Keep the newest snapshot of each of the N newest weeks (Monday to Sunday).")
    var keepWeekly: KeepCount?

    @Option(value: "N", help: "Keep the newest snapshot of each of the N newest months that have one.")
    var keepMonthly: KeepCount?

    @Option(value: "N", help: "Keep the newest snapshot of each of the N newest years that have one.")
    var keepYearly: KeepCount?

    @Option(value: "DURATION", help: "Keep every snapshot within DURATION (e.g. 2y5m7d3h) of the newest.")
    var keepWithin: RetentionDuration?

    @Option(value: "DURATION", help: "Keep the newest of each hour within DURATION of the newest snapshot.")
    var keepWithinHourly: RetentionDuration?

    @Option(value: "DURATION", help: "Keep the newest of each day within DURATION of the newest snapshot.")
    var keepWithinDaily: RetentionDuration?

    @Option(value: "DURATION", help: "Keep the newest of each week within DURATION of the newest snapshot.")
    var keepWithinWeekly: RetentionDuration?

    @Option(value: "DURATION", help: "Keep the newest of each month within DURATION of the newest snapshot.")
    var keepWithinMonthly: RetentionDuration?

    @Option(value: "DURATION", help: "Keep the newest of each year within DURATION of the newest snapshot.")
    var keepWithinYearly: RetentionDuration?

    @Option(value: "TAGS", help: "Keep every snapshot with all of TAGS (repeatable; '' keeps untagged ones).")
    var keepTag: [TagList]

    @Option(value: "KEYS", help: "Apply the policy per group of these: host, name, tags ('' for one group).")
    var groupBy = GroupingValue(argument: "host,name")!

    var selection = SnapshotSelection()

    @Flag(help: "Show what the policy keeps and drops, and change nothing.")
    var dryRun: Bool

    @Argument("SNAPSHOT", help: "Snapshots to drop: id prefixes (6+ hex digits) or names.", optional: true)
    var snapshots: [String]

    /// The policy the `--keep-*` options make.
    var policy: RetentionPolicy {
        var policy = RetentionPolicy()
        policy.last = keepLast?.value ?? 0
        policy.hourly = keepHourly?.value ?? 0
        policy.daily = keepDaily?.value ?? 0
        policy.weekly = keepWeekly?.value ?? 0
        policy.monthly = keepMonthly?.value ?? 0
        policy.yearly = keepYearly?.value ?? 0
        policy.within = keepWithin
        policy.withinHourly = keepWithinHourly
        policy.withinDaily = keepWithinDaily
        policy.withinWeekly = keepWithinWeekly
        policy.withinMonthly = keepWithinMonthly
        policy.withinYearly = keepWithinYearly
        policy.tags = keepTag.map(\.tags)
        return policy
    }

    func validate() throws {
        switch (snapshots.isEmpty, policy.isEmpty) {
        case (true, true):
            throw ValidationError("give the snapshots to drop, or a policy of --keep-* rules")
        case (false, false):
            throw ValidationError("give snapshots to drop or a --keep-* policy, not both")
        case (false, true):
            if selection.host.count > 1 || !selection.name.isEmpty || !selection.tag.isEmpty || dryRun {
                throw ValidationError(
                    "--name, --tag, --dry-run and more than one --host go with a --keep-* policy; with SNAPSHOT, --host says whose"
                )
            }
        case (true, false):
            break
        }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        guard snapshots.isEmpty else { return try forgetNamed(vault, context) }
        let groups =
            dryRun
            ? try vault.snapshots.plan(policy, groupedBy: groupBy.grouping, matching: selection.filter)
            : try vault.snapshots.forget(keeping: policy, groupedBy: groupBy.grouping, matching: selection.filter)
        let removed = groups.flatMap(\.decisions).filter { !$0.keep }.count
        try context.output.result(groups.map(GroupListing.init)) {
            let tables = groups.map { group -> String in
                let kept = group.decisions.filter(\.keep).count
                var table = TextTable([
                    .init(header: "ACTION"), .init(header: "ID"), .init(header: "TIME", shortened: TextTable.shortTime),
                    .init(header: "TAGS", dropOrder: 1), .init(header: "KEPT BECAUSE", cutsAtEnd: true),
                ])
                for decision in group.decisions {
                    table.append([
                        decision.keep ? "keep" : dryRun ? "would drop" : "drop", decision.snapshot.shortID,
                        TextTable.localTime(decision.snapshot.created),
                        PrintableText.escaping(decision.snapshot.tags.joined(separator: ",")),
                        decision.reasons.joined(separator: ", "),
                    ])
                }
                let header =
                    "\(PrintableText.escaping(group.key.description)): \(kept) kept, "
                    + "\(group.decisions.count - kept) \(dryRun ? "to drop" : "dropped")"
                let width = context.console.outputColumns
                return (width.map { WordWrap.wrap(header, width: $0) } ?? header) + "\n"
                    + table.text(fitting: width)
            }
            let summary =
                dryRun
                ? "Dry run: \(removed) snapshot\(removed == 1 ? "" : "s") would be dropped; nothing changed."
                : "Dropped \(removed) snapshot\(removed == 1 ? "" : "s"); chunks nothing else uses were freed."
            return (tables + [summary]).joined(separator: "\n\n")
        }
        let unadopted = try vault.snapshots.list(matching: selection.filter).filter(\.isWriteOnly)
        if !unadopted.isEmpty {
            context.output.note(
                "Left alone: \(unadopted.count) snapshot\(unadopted.count == 1 ? "" : "s") of write-only clients (\(unadopted.map(\.shortID).joined(separator: ", "))), which no --keep rule counts; coffer snapshot adopt ID makes one the owner's, coffer forget ID drops one."
            )
        }
    }

    /// `forget SNAPSHOT…`: each one named, on this host (or `--host`'s).
    private func forgetNamed(_ vault: Vault, _ context: CommandContext) throws {
        let found = try snapshots.map { try vault.snapshots.snapshot($0, host: selection.host.first) }
        for snapshot in found { try vault.snapshots.forget(snapshot.id) }
        try context.output.status(["forgotten": found.map(\.id)]) {
            found.map {
                "Forgot snapshot \($0.shortID) (\(PrintableText.escaping($0.name)) on \(PrintableText.escaping($0.hostname)))."
            }.joined(separator: "\n")
        }
    }

    /// One group as `forget --json` prints it.
    struct GroupListing: Encodable {
        struct Decision: Encodable {
            let id: String
            let created: Date
            let tags: [String]
            let keep: Bool
            let reasons: [String]
        }

        let host: String?
        let name: String?
        let tags: [String]?
        let decisions: [Decision]

        init(_ group: RetentionGroup) {
            host = group.key.hostname
            name = group.key.name
            tags = group.key.tags
            decisions = group.decisions.map {
                Decision(
                    id: $0.snapshot.id,
                    created: $0.snapshot.created,
                    tags: $0.snapshot.tags,
                    keep: $0.keep,
                    reasons: $0.reasons
                )
            }
        }
    }
}
