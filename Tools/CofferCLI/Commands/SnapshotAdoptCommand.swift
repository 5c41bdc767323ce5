import Coffer
import Foundation

/// `coffer snapshot adopt ID`: what the owner does with one snapshot.
struct SnapshotCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "snapshot",
        abstract: "Act on one snapshot: adopt a write-only client's as the owner's own.",
        examples: ["coffer snapshot adopt 3f9c2a71"],
        subcommands: [SnapshotAdoptCommand.self]
    )
}

/// `coffer snapshot adopt ID`.
struct SnapshotAdoptCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "adopt",
        abstract: "Make a write-only client's snapshot the owner's own, so that it counts.",
        discussion: """
            A snapshot made by a write-only client (marked W in 'coffer snapshots') carries only that
            client's claims of name, host and time, so it is never counted by 'forget --keep-*', never
            a name's latest ('restore NAME') and never a backup's parent. Adopting it records it again
            with the owner's mark (which only a holder of the vault's keys can make), vouching for its
            claims: from then on it counts like any other snapshot. Look at it first ('coffer show ID').
            """,
        examples: [
            "coffer snapshots                   # write-only clients' snapshots are marked W",
            "coffer snapshot adopt 3f9c2a71",
        ]
    )

    @Argument("ID", help: "The snapshot's id or a unique prefix of 6 or more hex digits.")
    var snapshot: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let adopted = try vault.snapshots.adopt(snapshot)
        try context.output.status(SnapshotListing(adopted)) {
            "Adopted snapshot \(adopted.shortID) ('\(PrintableText.escaping(adopted.name))' from \(PrintableText.escaping(adopted.hostname)), \(TextTable.localTime(adopted.created))); it now counts as the owner's."
        }
    }
}
