/// The command tree as shell completion sees it: for each command path, its subcommands, every
/// option it takes (its own, the global ones, `--help`) and what each option's value is. The bash, zsh
/// and fish scripts are written from this, so all three offer the same words.
struct CompletionTree {
    /// What an option's value, or a positional argument, completes to.
    enum ValueKind: Equatable {
        /// A file or directory name.
        case file
        /// A directory name.
        case directory
        /// One of a few fixed words.
        case choices([String])
        /// Nothing a shell can offer (a number, a name, a time).
        case none
    }

    /// One command of the tree.
    struct Node {
        /// Its words after the program's name (`item add`); empty for the program.
        let words: String
        /// The commands below it, with their abstracts.
        let subcommands: [(name: String, abstract: String)]
        /// Every option it takes, the global ones and `--help` included.
        let options: [OptionSpec]
        /// Its positional arguments.
        let arguments: [ArgumentSpec]
    }

    /// The program's name.
    let program: String
    /// Every command, the program first, depth first.
    let nodes: [Node]

    /// The tree of `root`, whose commands all take `globalOptions`.
    init(root: CommandSpec, globalOptions: [OptionSpec]) {
        program = root.name
        let helpCommand = (name: "help", abstract: "Show help for a command.")
        nodes = root.paths.map { path in
            let command = path[path.count - 1]
            var subcommands = command.subcommands.map { (name: $0.name, abstract: $0.abstract) }
            var options = command.options + globalOptions + [HelpFormatter.helpFlag]
            if path.count == 1 {
                subcommands.append(helpCommand)
                options.append(.flag("version", help: "Print the version, and the newest formats it reads."))
            }
            return Node(
                words: CommandSpec.words(path),
                subcommands: subcommands,
                options: options,
                arguments: command.arguments
            )
        }
    }

    /// What the value of `option` completes to: its choices, else a file or directory when its
    /// placeholder names one, else nothing.
    static func valueKind(of option: OptionSpec) -> ValueKind {
        if !option.choices.isEmpty { return .choices(option.choices) }
        return kind(placeholder: option.valueName ?? "")
    }

    /// What a positional argument completes to, from its placeholder.
    static func valueKind(of argument: ArgumentSpec) -> ValueKind {
        argument.choices.isEmpty ? kind(placeholder: argument.name) : .choices(argument.choices)
    }

    private static func kind(placeholder: String) -> ValueKind {
        if placeholder == "DIR" { return .directory }
        let fileWords = ["FILE", "PATH", "BUNDLE", "REQUEST", "DIR", "TARGET"]
        return fileWords.contains(where: { placeholder.contains($0) }) ? .file : .none
    }

    /// An option's spellings: `-q` and `--quiet`.
    static func spellings(_ option: OptionSpec) -> [String] {
        (option.shortName.map { ["-\($0)"] } ?? []) + ["--\(option.name)"]
    }

    /// Text inside single quotes for a POSIX shell or zsh: each `'` closed, escaped and reopened.
    static func singleQuoted(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
