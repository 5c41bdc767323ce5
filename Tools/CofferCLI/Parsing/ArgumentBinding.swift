/// A property a command declares with ``Option``, ``Flag`` or ``Argument``: it describes itself to
/// the parser and the help (under the name its property gives it), and takes its typed value from
/// what was parsed, once, before the command runs.
protocol ArgumentBinding {
    /// The option or positional argument this property is, named after `property` unless it was given
    /// a name of its own.
    func definition(property: String) -> ArgumentDefinition

    /// Takes the value from a parsed command line: an option's values by its name, or positional
    /// arguments, consumed from the front of `positionals`.
    func bind(
        options: [String: [String]],
        positionals: inout ArraySlice<String>,
        property: String
    ) throws
}

/// What a property declares: a named option (or flag), or a positional argument.
enum ArgumentDefinition {
    /// `--name`, with or without a value.
    case option(OptionSpec)
    /// A positional argument.
    case positional(ArgumentSpec)
}

/// Where a property wrapper keeps the value parsed for it. Commands are values, and reflection reads
/// copies of their wrappers; the slot is shared by every copy, so binding a copy binds the command.
/// It is written once, while the command line is bound, and only read after.
final class ParsedSlot<Value: Sendable>: @unchecked Sendable {
    /// The value: the declared default until the command line is bound.
    var value: Value

    init(_ value: Value) { self.value = value }
}

/// The option name a property gives: `passphraseFile` is `passphrase-file`, `toRNCryptor` is
/// `to-rncryptor` (a dash before each capital that follows a small letter or digit).
func optionName(forProperty property: String) -> String {
    var name = ""
    var previous: Character?
    for character in property {
        if character.isUppercase, let previous, previous.isLowercase || previous.isNumber { name.append("-") }
        name.append(contentsOf: character.lowercased())
        previous = character
    }
    return name
}

/// The value the last of `values` gives (an option given twice means its last), or `nil` if none
/// was given.
func lastValue<Value: ArgumentValue>(
    _ values: [String]?,
    as _: Value.Type,
    option: String
) throws -> Value? {
    guard let text = values?.last else { return nil }
    return try convert(text, as: Value.self, what: "--\(option)")
}

/// `text` as a `Value`, or a usage error naming `what` took it and what it wants.
func convert<Value: ArgumentValue>(_ text: String, as _: Value.Type, what: String) throws -> Value {
    guard let value = Value(argument: text) else {
        if let problem = Value.problem(with: text) { throw ValidationError("\(what) \(problem)") }
        throw ValidationError("\(what) takes \(Value.expectation), not '\(text)'")
    }
    return value
}
