/// A positional argument, declared as a typed property in the manner of swift-argument-parser's
/// `@Argument`. Arguments are taken in the order the properties are declared: required ones, then
/// optional ones, and last, at most one that takes all that remain (one or more, or any number).
///
/// ```swift
/// @Argument("NAME", help: "The blob's name.") var name: String
/// @Argument("FILE", help: "Where to write; standard output if none.") var file: String?
/// @Argument("DIR", help: "The directories to back up.") var directories: [String]
/// ```
@propertyWrapper
struct Argument<Value: Sendable>: ArgumentBinding, Sendable {
    private let placeholder: String
    private let help: String
    private let presence: ArgumentSpec.Presence
    private let choices: [String]
    private let slot: ParsedSlot<Value?>
    /// The value the positionals make (consuming what it takes); `nil` when none was there.
    private let take: @Sendable (inout ArraySlice<String>, String) throws -> Value?

    /// The parsed value. The parser refuses a command line without a required argument, so a
    /// command never reads one that is missing.
    var wrappedValue: Value {
        guard let value = slot.value else {
            preconditionFailure("the argument \(placeholder) was read before the command line was bound")
        }
        return value
    }

    func definition(property: String) -> ArgumentDefinition {
        .positional(ArgumentSpec(placeholder, help: help, presence: presence, choices: choices))
    }

    func bind(
        options: [String: [String]],
        positionals: inout ArraySlice<String>,
        property: String
    ) throws {
        if let value = try take(&positionals, placeholder) { slot.value = value }
    }
}

extension Argument where Value: ArgumentValue {
    /// A required argument.
    init(_ placeholder: String, help: String) {
        self.placeholder = placeholder
        self.help = help
        presence = .required
        choices = Value.choices
        slot = ParsedSlot(nil)
        take = { positionals, name throws in
            guard let text = positionals.popFirst() else { return nil }
            return try convert(text, as: Value.self, what: name)
        }
    }
}

extension Argument {
    /// An argument that may be left out: `nil` then.
    init<Wrapped: ArgumentValue>(_ placeholder: String, help: String) where Value == Wrapped? {
        self.placeholder = placeholder
        self.help = help
        presence = .optional
        choices = Wrapped.choices
        slot = ParsedSlot(.some(nil))
        take = { positionals, name throws in
            guard let text = positionals.popFirst() else { return nil }
            return .some(try convert(text, as: Wrapped.self, what: name))
        }
    }

    /// The last argument, taking every positional that remains: at least one, or any number with
    /// `optional`.
    init<Element: ArgumentValue>(_ placeholder: String, help: String, optional: Bool = false)
    where Value == [Element] {
        self.placeholder = placeholder
        self.help = help
        presence = optional ? .optionalRepeating : .repeating
        choices = Element.choices
        slot = ParsedSlot([])
        take = { positionals, name throws in
            var elements: [Element] = []
            while let text = positionals.popFirst() { elements.append(try convert(text, as: Element.self, what: name)) }
            return elements
        }
    }
}
