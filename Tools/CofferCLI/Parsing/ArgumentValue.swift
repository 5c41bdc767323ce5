/// A type an option's or an argument's text converts to, in the manner of swift-argument-parser's
/// `ExpressibleByArgument`. A text that does not convert is a usage error saying what was expected:
/// `--offset takes a whole number (0 or more), not 'ten'`.
protocol ArgumentValue: Sendable {
    /// The value `text` gives, or `nil` if it is not one.
    init?(argument text: String)
    /// What a valid value is, for messages: `a whole number (0 or more)`.
    static var expectation: String { get }
    /// What is wrong with `text`, where saying what is expected would not explain it (a local time
    /// that does not exist): the rest of a message after the option's name. `nil` by default.
    static func problem(with text: String) -> String?
    /// Every valid value, when they are few and fixed (an enumeration): help and shell completion
    /// offer them. Empty by default.
    static var choices: [String] { get }
}

extension ArgumentValue {
    static func problem(with text: String) -> String? { nil }
    static var choices: [String] { [] }
}

extension String: ArgumentValue {
    init?(argument text: String) { self = text }
    static var expectation: String { "text" }
}

extension Int: ArgumentValue {
    init?(argument text: String) { self.init(text) }
    static var expectation: String { "a whole number" }
}

extension UInt64: ArgumentValue {
    init?(argument text: String) { self.init(text) }
    static var expectation: String { "a whole number (0 or more)" }
}

extension ArgumentValue where Self: RawRepresentable & CaseIterable, RawValue == String {
    init?(argument text: String) { self.init(rawValue: text) }
    static var expectation: String { "one of " + choices.joined(separator: ", ") }
    static var choices: [String] { allCases.map(\.rawValue) }
}

/// A problem with the values on a command line that parsing alone cannot see (two options that
/// exclude each other, a number out of range): printed as a usage error, with a pointer to the
/// command's help, and `coffer` exits 64.
struct ValidationError: Error, CustomStringConvertible {
    /// What is wrong, and what to give instead.
    let description: String

    init(_ description: String) { self.description = description }
}
