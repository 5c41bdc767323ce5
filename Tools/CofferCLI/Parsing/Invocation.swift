/// A parsed command line: which command, and the values given for its options and arguments.
public struct Invocation: Sendable {
    /// The command path from the root, e.g. `["coffer", "key", "export"]`.
    public let commandPath: [String]
    /// Option values by long name, in the order given; flags map to `[""]`.
    public let options: [String: [String]]
    /// Positional arguments in order.
    public let arguments: [String]
    /// The process environment.
    public let environment: [String: String]
    /// Where output goes.
    public let console: Console

    /// Whether a flag was given.
    public func flag(_ name: String) -> Bool { options[name] != nil }

    /// The value of an option, if given (the last, if given more than once).
    public func value(_ name: String) -> String? { options[name]?.last }

    /// Every value given for an option that may repeat, in order.
    public func values(_ name: String) -> [String] { options[name] ?? [] }
}
