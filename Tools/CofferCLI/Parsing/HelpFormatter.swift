/// Lays out help as OVERVIEW / USAGE / ARGUMENTS / OPTIONS / SUBCOMMANDS, like swift-argument-parser.
struct HelpFormatter {
    let globalOptions: [OptionSpec]

    func help(for path: [CommandSpec]) -> String {
        let command = path[path.count - 1]
        let name = path.map(\.name).joined(separator: " ")
        var lines = ["OVERVIEW: \(command.abstract)"]
        if !command.discussion.isEmpty { lines += ["", command.discussion] }

        lines += ["", "USAGE: " + Self.usage(for: path)]

        if !command.arguments.isEmpty {
            lines += ["", "ARGUMENTS:"] + rows(command.arguments.map { ($0.name, $0.help) })
        }
        let options = command.options + globalOptions + [Self.helpFlag]
        lines += ["", "OPTIONS:"] + rows(options.map { (Self.label($0), $0.help) })
        if !command.subcommands.isEmpty {
            lines += ["", "SUBCOMMANDS:"] + rows(command.subcommands.map { ($0.name, $0.abstract) })
            let helpPath = ([path[0].name, "help"] + path.dropFirst().map(\.name)).joined(separator: " ")
            lines += ["", "  See '\(name) <subcommand> --help' (or '\(helpPath) <subcommand>') for details."]
        }
        if !command.examples.isEmpty {
            lines += ["", "EXAMPLES:"] + Self.aligned(command.examples).map { "  " + $0 }
        }
        lines += ["", "EXIT STATUS:"] + rows(command.exitStatuses.map { ("\($0.code)", $0.meaning) })
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

    /// `-h`, `--help`, which every command takes.
    static let helpFlag = OptionSpec.flag("help", short: "h", help: "Show help information.")

    /// The usage line of the last command of `path` (without `USAGE:`): `coffer item add [options]`,
    /// `coffer restore [options] SNAPSHOT [DIR]`. Every command takes the global options.
    static func usage(for path: [CommandSpec]) -> String {
        let command = path[path.count - 1]
        var usage = path.map(\.name).joined(separator: " ")
        if !command.subcommands.isEmpty { usage += " <subcommand>" }
        usage += " [options]"
        for argument in command.arguments {
            switch argument.presence {
            case .required: usage += " \(argument.name)"
            case .optional: usage += " [\(argument.name)]"
            case .repeating: usage += " \(argument.name)..."
            case .optionalRepeating: usage += " [\(argument.name)...]"
            }
        }
        return usage
    }

    /// An option as help shows it: `-x, --one-file-system`, `--name <name>`.
    static func label(_ option: OptionSpec) -> String {
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
