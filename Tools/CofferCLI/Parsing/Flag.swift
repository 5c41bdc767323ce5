/// A flag, `--json` (or `-q`), present or not, declared as a `Bool` property in the manner of
/// swift-argument-parser's `@Flag`. Its long name comes from the property (`deviceOnly` is
/// `--device-only`) unless given.
///
/// ```swift
/// @Flag(help: "Keep the blob on this machine: never export it.") var deviceOnly: Bool
/// ```
@propertyWrapper
struct Flag: ArgumentBinding, Sendable {
    private let name: String?
    private let shortName: Character?
    private let help: String
    private let slot = ParsedSlot(false)

    /// Whether the flag was given.
    var wrappedValue: Bool { slot.value }

    /// A flag, with an optional one-letter alias (`-q`).
    init(name: String? = nil, short: Character? = nil, help: String) {
        self.name = name
        self.shortName = short
        self.help = help
    }

    func definition(property: String) -> ArgumentDefinition {
        .option(.flag(name ?? optionName(forProperty: property), short: shortName, help: help))
    }

    func bind(
        options: [String: [String]],
        positionals: inout ArraySlice<String>,
        property: String
    ) throws {
        slot.value = options[name ?? optionName(forProperty: property)] != nil
    }
}
