/// Lays out help as OVERVIEW / USAGE / ARGUMENTS / OPTIONS / SUBCOMMANDS, like swift-argument-parser.
struct HelpFormatter {
    let globalOptions: [OptionSpec]

    func help(for path: [CommandSpec]) -> String {
        let command = path[path.count - 1]
        let name = path.map(\.name).joined(separator: " ")
        var lines = ["OVERVIEW: \(command.abstract)"]
        if !command.discussion.isEmpty { lines += ["", command.discussion] }

        var usage = "USAGE: \(name)"
        if !command.subcommands.isEmpty { usage += " <subcommand>" }
        if !command.options.isEmpty || !globalOptions.isEmpty { usage += " [options]" }
        for argument in command.arguments {
            switch argument.presence {
            case .required: usage += " \(argument.name)"
            case .optional: usage += " [\(argument.name)]"
            case .repeating: usage += " \(argument.name)..."
            case .optionalRepeating: usage += " [\(argument.name)...]"
            }
        }
        lines += ["", usage]

        if !command.arguments.isEmpty {
            lines += ["", "ARGUMENTS:"] + rows(command.arguments.map { ($0.name, $0.help) })
        }
        let options = command.options + globalOptions + [.flag("help", short: "h", help: "Show help information.")]
        lines += ["", "OPTIONS:"] + rows(options.map { (label($0), $0.help) })
        if !command.subcommands.isEmpty {
            lines += ["", "SUBCOMMANDS:"] + rows(command.subcommands.map { ($0.name, $0.abstract) })
            let helpPath = ([path[0].name, "help"] + path.dropFirst().map(\.name)).joined(separator: " ")
            lines += ["", "  See '\(name) <subcommand> --help' (or '\(helpPath) <subcommand>') for details."]
        }
        if !command.examples.isEmpty {
            lines += ["", "EXAMPLES:"] + Self.aligned(command.examples).map { "  " + $0 }
        }
        lines += ["", "EXIT STATUS:"] + rows(Self.exitStatuses)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Example lines with their `# comments` lined up in one column (up to 60 characters in).
    static func aligned(_ examples: [String]) -> [String] {
        let split = examples.map { example -> (String, String?) in
            guard let mark = example.range(of: " # ") else { return (example, nil) }
            return (
                String(example[..<mark.lowerBound]).trimmingCharacters(in: .whitespaces),
                String(example[mark.upperBound...])
            )
        }
        let column = min(split.filter { $0.1 != nil }.map(\.0.count).max() ?? 0, 60) + 2
        return split.map { command, comment in
            guard let comment else { return command }
            let padding = String(repeating: " ", count: max(2, column - command.count))
            return command + padding + "# " + comment
        }
    }

    /// What every command's exit status means.
    static let exitStatuses = [
        ("0", "Success."),
        ("1", "Failure; the message names the problem and what to do, and the vault is as it was."),
        ("3", "A backup that skipped paths it could not read (they are listed)."),
        ("64", "A usage error: the command line could not be understood."),
        ("130", "Interrupted by Ctrl-C (killed by SIGINT), after releasing what the command held."),
    ]

    private func label(_ option: OptionSpec) -> String {
        var label = option.shortName.map { "-\($0), " } ?? ""
        label += "--\(option.name)"
        if let value = option.valueName { label += " <\(value.lowercased())>" }
        return label
    }

    private func rows(_ entries: [(String, String)]) -> [String] {
        let width = min((entries.map(\.0.count).max() ?? 0) + 2, 30)
        return entries.map { label, help in
            let padded =
                label.count + 2 > width
                ? label + "\n" + String(repeating: " ", count: width + 2)
                : label.padding(toLength: width, withPad: " ", startingAt: 0)
            return "  " + padded + help
        }
    }
}
