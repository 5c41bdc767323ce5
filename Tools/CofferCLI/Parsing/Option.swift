/// A named option with a value, `--offset 10` or `--offset=10`, declared as a typed property in the
/// manner of swift-argument-parser's `@Option`. Its long name comes from the property (`valueFile` is
/// `--value-file`) unless given.
///
/// ```swift
/// @Option(value: "N", help: "Start at byte N (default 0).") var offset: UInt64 = 0
/// @Option(value: "HOST", help: "Only HOST's snapshots.") var host: String?
/// @Option(value: "PATTERN", help: "Leave out PATTERN (repeatable).") var exclude: [String]
/// ```
@propertyWrapper
struct Option<Value: Sendable>: ArgumentBinding, Sendable {
    private let name: String?
    private let valueName: String
    private let help: String
    private let choices: [String]
    private let slot: ParsedSlot<Value>
    /// The value the option's given texts make, or `nil` to keep the default (it was not given).
    private let parse: @Sendable ([String]?, String) throws -> Value?

    /// The parsed value, or the default if the option was not given.
    var wrappedValue: Value { slot.value }

    func definition(property: String) -> ArgumentDefinition {
        .option(.option(name ?? optionName(forProperty: property), value: valueName, help: help, choices: choices))
    }

    func bind(
        options: [String: [String]],
        positionals: inout ArraySlice<String>,
        property: String
    ) throws {
        let name = self.name ?? optionName(forProperty: property)
        if let value = try parse(options[name], name) { slot.value = value }
    }
}

extension Option where Value: ArgumentValue {
    /// An option with a default; given more than once, the last value counts.
    init(wrappedValue: Value, name: String? = nil, value: String, help: String) {
        self.name = name
        self.valueName = value
        self.help = help
        choices = Value.choices
        slot = ParsedSlot(wrappedValue)
        parse = { values, option throws in try lastValue(values, as: Value.self, option: option) }
    }
}

extension Option {
    /// An option that is `nil` unless given; given more than once, the last value counts.
    init<Wrapped: ArgumentValue>(name: String? = nil, value: String, help: String) where Value == Wrapped? {
        self.name = name
        self.valueName = value
        self.help = help
        choices = Wrapped.choices
        slot = ParsedSlot(nil)
        parse = { values, option throws in
            try lastValue(values, as: Wrapped.self, option: option).map { $0 }
        }
    }

    /// An option that may be given any number of times: every value, in order.
    init<Element: ArgumentValue>(wrappedValue: [Element] = [], name: String? = nil, value: String, help: String)
    where Value == [Element] {
        self.name = name
        self.valueName = value
        self.help = help
        choices = Element.choices
        slot = ParsedSlot(wrappedValue)
        parse = { values, option throws in
            guard let values else { return nil }
            var elements: [Element] = []
            for text in values { elements.append(try convert(text, as: Element.self, what: "--\(option)")) }
            return elements
        }
    }
}
