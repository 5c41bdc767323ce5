/// The shape of a command: its name, what it does, its options, arguments and subcommands. Help text and
/// parsing both come from this one description, so they cannot disagree.
public struct CommandSpec: Sendable {
    /// The word that selects the command, e.g. `info`.
    public let name: String
    /// One line saying what the command does.
    public let abstract: String
    /// Longer help, shown under OVERVIEW after the abstract.
    public let discussion: String
    /// The options the command takes (besides the global ones).
    public let options: [OptionSpec]
    /// Positional arguments, in order.
    public let arguments: [ArgumentSpec]
    /// Subcommands; a command with subcommands and no `run` requires one.
    public let subcommands: [CommandSpec]
    /// What runs the command; `nil` for a group that only holds subcommands.
    public let run: (@Sendable (Invocation) throws -> Void)?
    /// Example command lines shown in the help, each with a comment saying what it does.
    public let examples: [String]
    /// The exit statuses the command may end with, and what each means for it.
    public let exitStatuses: [ExitStatus]
    /// What `--version` prints (the root command only).
    public let version: String?
    /// Whether a first Ctrl-C asks the command to stop and release what it holds (its reads and
    /// writes see the request), instead of ending the process at once.
    public let isCancellable: Bool

    /// Creates a command description.
    public init(
        name: String,
        abstract: String,
        discussion: String = "",
        options: [OptionSpec] = [],
        arguments: [ArgumentSpec] = [],
        subcommands: [CommandSpec] = [],
        examples: [String] = [],
        exitStatuses: [ExitStatus] = ExitStatus.standard,
        version: String? = nil,
        isCancellable: Bool = false,
        run: (@Sendable (Invocation) throws -> Void)? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.examples = examples
        self.exitStatuses = exitStatuses
        self.version = version
        self.isCancellable = isCancellable
        self.run = run
    }
}

/// A named option: a flag (`--json`) or an option with a value (`--vault DIR`, `--vault=DIR`).
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes, e.g. `vault`.
    public let name: String
    /// A one-letter alias without the dash, e.g. `q`.
    public let shortName: Character?
    /// The placeholder for the value in help (`DIR`); `nil` for a flag.
    public let valueName: String?
    /// One line of help.
    public let help: String
    /// Every value the option takes, when they are few and fixed; empty otherwise.
    public let choices: [String]

    /// A flag, present or not.
    public static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, shortName: short, valueName: nil, help: help, choices: [])
    }

    /// An option that takes a value, one of `choices` when they are given.
    public static func option(_ name: String, value: String, help: String, choices: [String] = []) -> OptionSpec {
        OptionSpec(name: name, shortName: nil, valueName: value, help: help, choices: choices)
    }

    /// Whether the option takes a value.
    public var takesValue: Bool { valueName != nil }
}

/// A positional argument.
public struct ArgumentSpec: Sendable, Equatable {
    /// Whether an argument must be given, may be left out, or takes every positional that remains.
    public enum Presence: Sendable, Equatable {
        /// Exactly one must be given.
        case required
        /// One may be given.
        case optional
        /// One or more: the last argument, taking all that remain.
        case repeating
        /// Zero or more: the last argument, taking all that remain, if any.
        case optionalRepeating
    }

    /// The placeholder in help, e.g. `SNAPSHOT`.
    public let name: String
    /// One line of help.
    public let help: String
    /// Whether it must be given, may be left out, or repeats.
    public let presence: Presence
    /// Every value it takes, when they are few and fixed; empty otherwise.
    public let choices: [String]

    /// Whether it may be left out.
    public var isOptional: Bool { presence == .optional || presence == .optionalRepeating }

    /// Creates a positional argument.
    public init(_ name: String, help: String, optional: Bool = false) {
        self.init(name, help: help, presence: optional ? .optional : .required)
    }

    /// Creates a positional argument that is required, optional or repeating, one of `choices` when
    /// they are given.
    public init(_ name: String, help: String, presence: Presence, choices: [String] = []) {
        self.name = name
        self.help = help
        self.presence = presence
        self.choices = choices
    }
}
