/// Lays out help as OVERVIEW / USAGE / ARGUMENTS / OPTIONS / SUBCOMMANDS, like swift-argument-parser,
/// broken at spaces to fit `width` columns (a terminal's, else 80): each option's help wraps under
/// itself, and an example too long for its comment beside it gets the comment on the line above.
struct HelpFormatter {
    let globalOptions: [OptionSpec]
    /// The widest a line may be.
    var width = 80

    func help(for path: [CommandSpec]) -> String {
        let command = path[path.count - 1]
        let name = path.map(\.name).joined(separator: " ")
        var lines = [WordWrap.wrap("OVERVIEW: \(command.abstract)", width: width)]
        if !command.discussion.isEmpty {
            let paragraphs = command.discussion.split(separator: "\n\n").map { paragraph in
                WordWrap.wrap(paragraph.split(separator: "\n").joined(separator: " "), width: width)
            }
            lines += ["", paragraphs.joined(separator: "\n\n")]
        }

        lines += ["", "USAGE: " + Self.usage(for: path)]

        if !command.arguments.isEmpty {
            lines += ["", "ARGUMENTS:"] + rows(command.arguments.map { ($0.name, $0.help) })
        }
        let options = command.options + globalOptions + [Self.helpFlag]
        lines += ["", "OPTIONS:"] + rows(options.map { (Self.label($0), $0.help) })
        if !command.subcommands.isEmpty {
            lines += ["", "SUBCOMMANDS:"] + rows(command.subcommands.map { ($0.name, $0.abstract) })
            let helpPath = ([path[0].name, "help"] + path.dropFirst().map(\.name)).joined(separator: " ")
            lines += [
                "",
                WordWrap.wrap(
                    "  See '\(name) <subcommand> --help' (or '\(helpPath) <subcommand>') for details.",
                    width: width
                ),
            ]
        }
        if !command.examples.isEmpty {
            lines += ["", "EXAMPLES:"] + Self.aligned(command.examples, width: width - 2).map { "  " + $0 }
        }
        lines += ["", "EXIT STATUS:"] + rows(command.exitStatuses.map { ("\($0.code)", $0.meaning) })
        return lines.joined(separator: "\n") + "\n"
    }

    /// Example lines with their `# comments` lined up in one column (up to 60 characters in); with a
    /// `width`, an example and its comment wider than that take two lines, the comment first.
    static func aligned(_ examples: [String], width: Int? = nil) -> [String] {
        let split = examples.map { example -> (String, String?) in
            guard let mark = example.range(of: " # ") else { return (example, nil) }
            return (
                String(example[..<mark.lowerBound]).trimmingCharacters(in: .whitespaces),
                String(example[mark.upperBound...])
            )
        }
        let column = min(split.filter { $0.1 != nil }.map(\.0.count).max() ?? 0, 60) + 2
        return split.flatMap { command, comment -> [String] in
            guard let comment else { return [command] }
            let padding = String(repeating: " ", count: max(2, column - command.count))
            let line = command + padding + "# " + comment
            if let width, line.count > width { return ["# " + comment, command] }
            return [line]
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

    /// Labels and their help in two columns, the help wrapped under itself.
    private func rows(_ entries: [(String, String)]) -> [String] {
        let labelWidth = min((entries.map(\.0.count).max() ?? 0) + 2, 30)
        let indent = String(repeating: " ", count: labelWidth + 2)
        return entries.map { label, help in
            let wrapped = WordWrap.wrap(help, width: max(width - labelWidth - 2, 20))
                .replacing("\n", with: "\n" + indent)
            let padded =
                label.count + 2 > labelWidth
                ? label + "\n" + indent
                : label.padding(toLength: labelWidth, withPad: " ", startingAt: 0)
            return "  " + padded + wrapped
        }
    }
}
