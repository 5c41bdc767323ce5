/// A set of options and arguments declared as typed properties (``Option``, ``Flag``, ``Argument``),
/// and groups of them held as plain properties: a command, or options several commands share (the
/// global ones, a remote's, an item selection's).
protocol ArgumentGroup: Sendable {
    /// The group with every property at its default, ready to be bound to a command line.
    init()

    /// Checks what the types alone cannot (values that exclude each other, ranges). Called once, after
    /// binding and before the command runs; groups a command holds are checked first. A
    /// ``ValidationError`` is a usage error (exit 64); any other error fails the command (exit 1)
    /// before its vault is opened.
    func validate() throws
}

extension ArgumentGroup {
    func validate() throws {}
}

/// What `coffer help` and the parser know of a command: its name, what it does and its examples.
struct CommandConfiguration: Sendable {
    /// The word that selects the command.
    var name: String
    /// One line saying what it does.
    var abstract: String
    /// Longer help, under OVERVIEW.
    var discussion = ""
    /// Two or three example command lines, each with a `# comment` saying what it does.
    var examples: [String] = []
    /// The commands below this one (for a ``CommandGroup``).
    var subcommands: [any CommandDescription.Type] = []
    /// Whether a first Ctrl-C asks the command to stop and release what it holds.
    var isCancellable = false
    /// The exit statuses the command may end with, each with what it means for this command.
    var exitStatuses = ExitStatus.standard
}

/// A command's description for the parser and the help: a ``ParsableCommand`` or a
/// ``CommandGroup``.
protocol CommandDescription: Sendable {
    /// The command's name, help and subcommands.
    static var configuration: CommandConfiguration { get }
    /// The command as the parser sees it: its options and arguments, read from its properties.
    static var spec: CommandSpec { get }
}

/// A command that runs: its options and arguments are typed properties, bound and validated once;
/// `run` gets them ready to use.
protocol ParsableCommand: CommandDescription, ArgumentGroup {
    /// Does the command's work.
    func run(_ context: CommandContext) throws
}

/// A command that only holds subcommands (`item`, `key`, `remote`).
protocol CommandGroup: CommandDescription {}

extension CommandGroup {
    static var spec: CommandSpec {
        let configuration = Self.configuration
        return CommandSpec(
            name: configuration.name,
            abstract: configuration.abstract,
            discussion: configuration.discussion,
            subcommands: configuration.subcommands.map { $0.spec },
            examples: configuration.examples,
            exitStatuses: configuration.exitStatuses
        )
    }
}

extension ParsableCommand {
    static var spec: CommandSpec {
        let configuration = Self.configuration
        let definitions = ArgumentReflection.bindings(of: Self()).map { $0.binding.definition(property: $0.property) }
        return CommandSpec(
            name: configuration.name,
            abstract: configuration.abstract,
            discussion: configuration.discussion,
            options: definitions.compactMap { if case .option(let option) = $0 { option } else { nil } },
            arguments: definitions.compactMap { if case .positional(let argument) = $0 { argument } else { nil } },
            examples: configuration.examples,
            exitStatuses: configuration.exitStatuses,
            isCancellable: configuration.isCancellable,
            run: { invocation in try execute(invocation) }
        )
    }

    /// The driver every command runs through: binds the global options and the command's own,
    /// validates them, and runs the command with a context made from them.
    static func execute(_ invocation: Invocation) throws {
        let global = try GlobalOptions.bound(to: invocation)
        let command = try Self.bound(to: invocation)
        try command.run(CommandContext(invocation: invocation, global: global))
    }
}

extension ArgumentGroup {
    /// A group of this type with every property bound to `invocation` and validated; a value that
    /// does not convert, or fails validation, is a ``UsageError`` naming the command.
    static func bound(to invocation: Invocation) throws -> Self {
        let group = Self()
        var positionals = invocation.arguments[...]
        do {
            for (property, binding) in ArgumentReflection.bindings(of: group) {
                try binding.bind(options: invocation.options, positionals: &positionals, property: property)
            }
            try ArgumentReflection.validate(group)
        } catch let error as ValidationError {
            throw UsageError(message: error.description, commandPath: invocation.commandPath)
        }
        return group
    }
}

/// Finding a group's declared properties by reflection, as swift-argument-parser does.
enum ArgumentReflection {
    /// Every ``ArgumentBinding`` of `group` and of the groups it holds, in declaration order, with
    /// the name of its property (a wrapper's storage is `_name`; the name is `name`).
    static func bindings(of group: any ArgumentGroup) -> [(property: String, binding: any ArgumentBinding)] {
        Mirror(reflecting: group).children.flatMap { child -> [(property: String, binding: any ArgumentBinding)] in
            if let binding = child.value as? any ArgumentBinding, let label = child.label {
                return [(label.hasPrefix("_") ? String(label.dropFirst()) : label, binding)]
            }
            if let inner = child.value as? any ArgumentGroup { return bindings(of: inner) }
            return []
        }
    }

    /// Validates the groups `group` holds, then `group`.
    static func validate(_ group: any ArgumentGroup) throws {
        for child in Mirror(reflecting: group).children {
            if let inner = child.value as? any ArgumentGroup { try validate(inner) }
        }
        try group.validate()
    }
}
