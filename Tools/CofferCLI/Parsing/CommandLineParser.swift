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
        // `help COMMAND…` is `COMMAND… --help`.
        if arguments.first == "help", !root.subcommands.contains(where: { $0.name == "help" }) {
            return try parse(Array(arguments.dropFirst()) + ["--help"], environment: environment, console: console)
        }
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
                if name == "version", path.count == 1, let version = root.version { return .help(version) }
                guard let option = known.first(where: { $0.name == name }) else {
                    if let hint = ResticHint.options[name] { throw usage("unknown option '--\(name)'; \(hint)") }
                    let suggestion = Self.closest(to: name, among: known.map(\.name)).map {
                        "; did you mean '--\($0)'?"
                    }
                    throw usage("unknown option '--\(name)'\(suggestion ?? "")")
                }
                options[name, default: []].append(try value(for: option, inline: inlineValue, arguments, &index, usage))
                continue
            }
            if !optionsEnded, token.hasPrefix("-"), token.count > 1 {
                let letters = token.dropFirst()
                for (offset, letter) in letters.enumerated() {
                    guard let option = known.first(where: { $0.shortName == letter }) else {
                        let hint = ResticHint.options[String(letter)].map { "; \($0)" } ?? ""
                        throw usage("unknown option '-\(letter)'\(hint)")
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
                    if path.count == 1, let hint = ResticHint.commands[token] {
                        throw usage("unknown command '\(token)'; \(hint)")
                    }
                    let names = command.subcommands.map(\.name)
                    if let suggestion = Self.closest(to: token, among: names) {
                        throw usage("unknown command '\(token)'; did you mean '\(suggestion)'?")
                    }
                    throw usage("unknown command '\(token)'; the commands are: \(names.joined(separator: ", "))")
                }
                path.append(subcommand)
                continue
            }
            positionals.append(token)
        }

        let command = path[path.count - 1]
        if wantsHelp {
            return .help(
                HelpFormatter(globalOptions: globalOptions, width: console.outputColumns ?? 80).help(for: path)
            )
        }
        guard command.run != nil else {
            if path.count == 1 {
                return .help(
                    HelpFormatter(globalOptions: globalOptions, width: console.outputColumns ?? 80).help(for: path)
                )
            }
            throw usage("'\(path.map(\.name).joined(separator: " "))' needs a subcommand")
        }
        let required = command.arguments.filter { !$0.isOptional }.count
        if positionals.count < required {
            let missing = command.arguments[positionals.count]
            throw usage("missing argument \(missing.name) (\(missing.help))")
        }
        if positionals.count > command.arguments.count,
            ![.repeating, .optionalRepeating].contains(command.arguments.last?.presence)
        {
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

    /// The candidate a mistyped `word` most likely meant: within two edits (insertions, deletions,
    /// substitutions, swaps of neighbours), or one for words of four letters or fewer; `nil` when none
    /// is that close or two are equally close.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = word.count <= 4 ? 1 : 2
        let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= limit }
        guard let best = scored.map(\.1).min() else { return nil }
        let winners = scored.filter { $0.1 == best }
        return winners.count == 1 ? winners[0].0 : nil
    }

    /// The optimal string alignment distance between `a` and `b` (Damerau–Levenshtein without
    /// repeated edits of one substring).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased())
        let b = Array(b.lowercased())
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
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
