extension CommandSpec {
    /// This command and every command below it, depth first in the order help lists them, each as
    /// its path from this one (`[coffer]`, `[coffer, init]`, …, `[coffer, item, add]`, …).
    var paths: [[CommandSpec]] {
        [[self]] + subcommands.flatMap { subcommand in subcommand.paths.map { [self] + $0 } }
    }

    /// The command's words after the program's name, joined: `item add`; empty for the program.
    static func words(_ path: [CommandSpec]) -> String {
        path.dropFirst().map(\.name).joined(separator: " ")
    }
}
