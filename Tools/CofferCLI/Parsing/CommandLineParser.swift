/// Parses `argv` against a tree of ``CommandSpec``s, in the manner of swift-argument-parser: global
/// options anywhere, `--opt value` and `--opt=value`, `--` to end options, `-h`/`--help` at every level.
public struct CommandLineParser: Sendable {
    /// What parsing produced.
    public enum Outcome: Sendable {
        /// Run this command.
        case run(CommandSpec, Invocation)
        /// Print this help text and exit 0.
        case help(String)
    }

    /// The root command (the program).
    public let root: CommandSpec
    /// Options every command accepts, before or after the subcommand.
    public let globalOptions: [OptionSpec]

    /// Creates a parser.
    public init(root: CommandSpec, globalOptions: [OptionSpec]) {
        self.root = root
        self.globalOptions = globalOptions
    }

    /// Parses `arguments` (without the program name).
    ///
    /// - Throws: ``UsageError`` naming the problem and the command whose help to read.
    public func parse(
        _ arguments: [String],
        environment: [String: String],
        console: Console
    ) throws(UsageError) -> Outcome {
        var path = [root]
        var options: [String: [String]] = [:]
        var positionals: [String] = []
        var wantsHelp = false
        var index = 0
        var optionsEnded = false

        func usage(_ message: String) -> UsageError {
            UsageError(message: message, commandPath: path.map(\.name))
        }

        while index < arguments.count {
            let token = arguments[index]
            index += 1
            let command = path[path.count - 1]
            let known = globalOptions + command.options

            if !optionsEnded, token == "--" {
                optionsEnded = true
                continue
            }
            if !optionsEnded, token == "-h" || token == "--help" {
                wantsHelp = true
                continue
            }
            if !optionsEnded, token.hasPrefix("--") {
                let body = token.dropFirst(2)
                let name = String(body.prefix { $0 != "=" })
                let inlineValue = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
                guard let option = known.first(where: { $0.name == name }) else {
                    throw usage("unknown option '--\(name)'")
                }
                options[name, default: []].append(try value(for: option, inline: inlineValue, arguments, &index, usage))
                continue
            }
            if !optionsEnded, token.hasPrefix("-"), token.count > 1 {
                let letters = token.dropFirst()
                for (offset, letter) in letters.enumerated() {
                    guard let option = known.first(where: { $0.shortName == letter }) else {
                        throw usage("unknown option '-\(letter)'")
                    }
                    let isLast = offset == letters.count - 1
                    guard !option.takesValue || isLast else {
                        throw usage("option '-\(letter)' takes a value and must come last in '\(token)'")
                    }
                    options[option.name, default: []].append(
                        try value(for: option, inline: nil, arguments, &index, usage)
                    )
                }
                continue
            }
            if !command.subcommands.isEmpty, positionals.isEmpty {
                guard let subcommand = command.subcommands.first(where: { $0.name == token }) else {
                    if wantsHelp { continue }
                    let names = command.subcommands.map(\.name).joined(separator: ", ")
                    throw usage("unknown command '\(token)'; the commands are: \(names)")
                }
                path.append(subcommand)
                continue
            }
            positionals.append(token)
        }

        let command = path[path.count - 1]
        if wantsHelp { return .help(HelpFormatter(globalOptions: globalOptions).help(for: path)) }
        guard command.run != nil else {
            if path.count == 1 { return .help(HelpFormatter(globalOptions: globalOptions).help(for: path)) }
            throw usage("'\(path.map(\.name).joined(separator: " "))' needs a subcommand")
        }
        let required = command.arguments.filter { !$0.isOptional }.count
        if positionals.count < required {
            let missing = command.arguments[positionals.count]
            throw usage("missing argument \(missing.name) (\(missing.help))")
        }
        if positionals.count > command.arguments.count {
            throw usage("unexpected argument '\(positionals[command.arguments.count])'")
        }
        let invocation = Invocation(
            commandPath: path.map(\.name),
            options: options,
            arguments: positionals,
            environment: environment,
            console: console
        )
        return .run(command, invocation)
    }

    private func value(
        for option: OptionSpec,
        inline: String?,
        _ arguments: [String],
        _ index: inout Int,
        _ usage: (String) -> UsageError
    ) throws(UsageError) -> String {
        guard option.takesValue else {
            if inline != nil { throw usage("flag '--\(option.name)' does not take a value") }
            return ""
        }
        if let inline { return inline }
        guard index < arguments.count else {
            throw usage("option '--\(option.name)' needs a value (\(option.valueName ?? "VALUE"))")
        }
        defer { index += 1 }
        return arguments[index]
    }
}

/// A mistake in the command line: the CLI prints it with a pointer to the help and exits 64.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The command being parsed when the mistake was found.
    public let commandPath: [String]

    /// The message and where to find help.
    public var description: String {
        "\(message)\nSee '\(commandPath.joined(separator: " ")) --help'."
    }
}
