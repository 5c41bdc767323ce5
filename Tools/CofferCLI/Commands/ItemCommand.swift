import Coffer
import Foundation

/// `coffer item add|upsert|get|find|update|delete`: the keychain tier from the command line.
struct ItemCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "item",
        abstract: "Store and read small secrets (the keychain tier).",
        discussion: """
            Items are passwords, tokens and keys of up to 16 KiB, each with attributes (service, account,
            server, label, …) that are encrypted with it. An item is device-bound unless added with --sync.
            Errors name Keychain Services' status (e.g. itemNotFound -25300).
            """,
        examples: [
            "coffer item add --service mail --account ann   # asks for the value",
            "coffer item get --service mail --account ann",
        ],
        subcommands: [
            ItemAddCommand.self, ItemUpsertCommand.self, ItemGetCommand.self, ItemFindCommand.self,
            ItemUpdateCommand.self, ItemDeleteCommand.self,
        ]
    )

    /// Why a selection matching several items is not one, and which options would tell them apart
    /// (only the ways in which the matches really differ).
    static func ambiguity(_ items: [KeychainItem], action: String) -> String {
        var differences: [String] = []
        if Set(items.map(\.scope)).count > 1 { differences.append("--sync or --device-only") }
        if Set(items.map(\.itemClass)).count > 1 { differences.append("--class") }
        let named: [(String, ItemAttributes.Name)] = [
            ("--service", .service), ("--account", .account), ("--server", .server), ("--label", .label),
            ("--access-group", .accessGroup),
        ]
        for (option, name) in named where Set(items.map { $0.attributes[name]?.description ?? "" }).count > 1 {
            differences.append(option)
        }
        let others = Set(items.flatMap { $0.attributes.values.keys }).subtracting(named.map(\.1))
        if others.contains(where: { name in Set(items.map { $0.attributes[name]?.description ?? "" }).count > 1 }) {
            differences.append("--attribute NAME=VALUE")
        }
        guard !differences.isEmpty else {
            return "\(items.count) items match, and nothing shown here tells them apart; \(action)"
        }
        let sameButScope = differences == ["--sync or --device-only"]
        return "\(items.count) items match"
            + (sameButScope ? " (one syncable, one device-bound, with the same attributes)" : "")
            + "; add \(differences.joined(separator: ", ")) to pick one, or \(action)"
    }

    static func parseAttributes(_ assignments: [String]) throws -> ItemAttributes {
        var attributes = ItemAttributes()
        for assignment in assignments {
            guard let equals = assignment.firstIndex(of: "="),
                let name = ItemAttributes.Name(rawValue: String(assignment[..<equals]))
            else {
                throw CLIFailure(
                    "'\(assignment)' is not NAME=VALUE with a known attribute name; names: "
                        + ItemAttributes.Name.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            let text = String(assignment[assignment.index(after: equals)...])
            switch name.kind {
            case .text: attributes[name] = .text(text)
            case .number:
                guard let number = Int64(text) else {
                    throw CLIFailure("attribute \(name.rawValue) takes a whole number, not '\(text)'")
                }
                attributes[name] = .number(number)
            case .bytes:
                guard let bytes = Data(hex: text) else {
                    throw CLIFailure("attribute \(name.rawValue) takes hex bytes, not '\(text)'")
                }
                attributes[name] = .bytes(bytes)
            }
        }
        return attributes
    }

    /// An item on one line, `class  scope  accessibility  name=value …`; where that is wider than
    /// `width`, its attributes (and value) go one a line below it, indented.
    static func describe(_ item: KeychainItem, width: Int? = nil) -> String {
        var fields = item.attributes.values.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue)=\($0.value)" }
        if item.requiresUserPresence { fields.append("(requires presence)") }
        if let value = item.value {
            fields.append("value=\(String(data: value, encoding: .utf8) ?? value.base64EncodedString())")
        }
        let head = "\(item.itemClass.cliName)  \(item.scope.rawValue)  \(item.accessibility.rawValue)"
        let line = ([head] + fields).joined(separator: "  ")
        guard let width, line.count > width else { return line }
        return ([head] + fields.map { "  " + $0 }).joined(separator: "\n")
    }
}

/// `coffer item add`: adds an item, refusing a duplicate.
struct ItemAddCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "add",
        abstract: "Add an item; fails if one with the same primary key exists.",
        examples: [
            "coffer item add --service mail --account ann  # asks for the value, no echo",
            "coffer item add --service ci --account bot --value-file token.txt --sync",
        ]
    )

    var selection = ItemSelection()
    var content = ItemValueOptions()

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let item = try content.newItem(selection, context)
        do throws(CofferError) {
            try vault.keychain.add(item)
        } catch {
            guard error.code == .duplicateItem else { throw error }
            throw CofferError(
                .duplicateItem,
                "a \(item.itemClass.cliName) with these key attributes already exists (a primary key names one item, syncable or device-bound); change it with 'coffer item update' (same selection), or replace it with 'coffer item upsert'"
            )
        }
        try context.output.status(ItemListing(item.withoutValue)) {
            "Added \(item.itemClass.cliName) (\(item.scope.rawValue), \(item.accessibility.rawValue))."
        }
    }
}

/// `coffer item upsert`: adds an item, or replaces the one with the same primary key.
struct ItemUpsertCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "upsert",
        abstract: "Add an item, or replace the one with the same primary key (keeping its creation date).",
        discussion: """
            The primary key is the class, the key attributes (service and account for a generic password;
            server, account, protocol, port and path for an internet password; …) and the access group,
            whatever the scope. A replaced item keeps its scope, protection class and user presence unless
            --sync, --device-only, --accessible or --requires-presence say otherwise (naming the other scope
            moves it: the other devices delete their copy of a syncable item that becomes device-bound).
            """,
        examples: [
            "coffer item upsert --service ci --account bot --value-file new-token.txt",
            "pass show mail | coffer item upsert --service mail --account ann --value-file -",
        ]
    )

    var selection = ItemSelection()
    var content = ItemValueOptions()

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let item = try content.newItem(selection, context)
        var kept: Keychain.KeptProperties = []
        if !selection.sync && !selection.deviceOnly { kept.insert(.scope) }
        if content.accessible == nil { kept.insert(.accessibility) }
        if !content.requiresPresence { kept.insert(.userPresence) }
        let stored = try vault.keychain.save(item, keeping: kept)
        try context.output.status(ItemListing(stored)) {
            "Stored \(stored.itemClass.cliName) (\(stored.scope.rawValue), \(stored.accessibility.rawValue))."
        }
    }
}

/// `coffer item get`: the value of exactly one item, on standard output as is.
struct ItemGetCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "get",
        abstract: "Write the value of exactly one matching item to standard output, as is.",
        examples: [
            "coffer item get --service mail --account ann   # the value, as is",
            "coffer item get --service mail --account ann --sync",
        ]
    )

    var selection = ItemSelection()

    var vaultAccess: VaultAccess { .unlockedAskingForPresence }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        var query = try selection.query(defaultClass: .genericPassword)
        let items = try vault.keychain.find(query)
        guard !items.isEmpty else {
            throw CofferError(
                .itemNotFound,
                "no item matches this selection; 'coffer item find' lists the items there are"
            )
        }
        guard items.count == 1 else {
            throw CLIFailure(
                ItemCommands.ambiguity(items, action: "list them with 'coffer item find' (same selection)")
            )
        }
        query.returnsValue = true
        let value = try vault.keychain.find(query)[0].value ?? Data()
        context.console.writeOutput(raw: value)
    }
}

/// `coffer item find`: the matching items' attributes.
struct ItemFindCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "find",
        abstract: "List matching items' attributes (values only with --show-value).",
        examples: [
            "coffer item find --service mail               # attributes only",
            "coffer item find --json --show-value",
        ]
    )

    var selection = ItemSelection()

    @Flag(help: "Include values in the listing.")
    var showValue: Bool

    var vaultAccess: VaultAccess { showValue ? .unlockedAskingForPresence : .unlocked }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        var query = try selection.query(defaultClass: nil)
        query.returnsValue = showValue
        let items = try vault.keychain.find(query)
        try context.output.result(items.map(ItemListing.init)) {
            items.map { ItemCommands.describe($0, width: context.console.outputColumns) }.joined(separator: "\n")
        }
    }
}

/// `coffer item update`: changes every matching item.
struct ItemUpdateCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "update",
        abstract: "Change every matching item: value, attributes (--set), protection class or scope.",
        discussion: """
            The selection options pick the items (of either scope); the value changes only with --value or
            --value-file; --sync or --device-only move the items to that scope.
            """,
        examples: [
            "coffer item update --service mail --account ann --value-file new.txt",
            "coffer item update --service mail --sync      # make the matches syncable",
        ]
    )

    var selection = ItemSelection()
    var content = ItemValueOptions()

    @Option(value: "NAME=VALUE", help: "Set an attribute on the matching items (repeatable).")
    var set: [String]

    func run(_ vault: Vault, _ context: CommandContext) throws {
        var query = try selection.query(defaultClass: nil)
        query.scope = .any
        var changes = ItemUpdate(attributes: try ItemCommands.parseAttributes(set))
        if content.value != nil || content.valueFile != nil { changes.value = try content.secret(context) }
        changes.accessibility = try content.accessibility
        if selection.sync { changes.scope = .syncable }
        if selection.deviceOnly { changes.scope = .deviceBound }
        if content.requiresPresence { changes.requiresUserPresence = true }
        let count = try vault.keychain.update(query, with: changes)
        try context.output.status(["updated": count]) { "Updated \(count) item\(count == 1 ? "" : "s")." }
    }
}

/// `coffer item delete`: deletes the matching item (or all of them with `--all`).
struct ItemDeleteCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "delete",
        abstract: "Delete the matching item (all matching items with --all).",
        examples: [
            "coffer item delete --service mail --account ann",
            "coffer item delete --service old --all",
        ]
    )

    var selection = ItemSelection()

    @Flag(help: "Delete every matching item, not just one.")
    var all: Bool

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let query = try selection.query(defaultClass: nil)
        let matching = try vault.keychain.find(query)
        if matching.count > 1, !all {
            throw CLIFailure(ItemCommands.ambiguity(matching, action: "pass --all to delete them all"))
        }
        let count = try vault.keychain.delete(query)
        try context.output.status(["deleted": count]) { "Deleted \(count) item\(count == 1 ? "" : "s")." }
    }
}

/// The options that select items, shared by every item subcommand.
struct ItemSelection: ArgumentGroup {
    @Option(
        name: "class",
        value: "CLASS",
        help: "generic-password (default for add and get), internet-password, key, certificate, identity."
    )
    var itemClass: ItemClassName?

    @Option(value: "S", help: "The service attribute.")
    var service: String?

    @Option(value: "A", help: "The account attribute.")
    var account: String?

    @Option(value: "H", help: "The server attribute.")
    var server: String?

    @Option(value: "L", help: "The label attribute.")
    var label: String?

    @Option(value: "G", help: "The access group.")
    var accessGroup: String?

    @Option(value: "NAME=VALUE", help: "Any other attribute, e.g. port=443 or path=/ (repeatable; bytes in hex).")
    var attribute: [String]

    @Flag(help: "Syncable items only (add, update: make the item syncable).")
    var sync: Bool

    @Flag(help: "Device-bound items only (add, update: make the item device-bound).")
    var deviceOnly: Bool

    func validate() throws {
        if sync, deviceOnly { throw ValidationError("--sync and --device-only contradict each other") }
    }

    /// Which scopes the selection matches.
    var scope: SyncScope.Match { sync ? .syncable : deviceOnly ? .deviceBound : .any }

    /// The attributes given, named and `--attribute` ones.
    func attributes() throws -> ItemAttributes {
        var attributes = try ItemCommands.parseAttributes(attribute)
        let named: [(String?, ItemAttributes.Name)] = [
            (service, .service), (account, .account), (server, .server), (label, .label), (accessGroup, .accessGroup),
        ]
        for case (let value?, let name) in named { attributes[name] = .text(value) }
        return attributes
    }

    /// The query the selection makes.
    func query(defaultClass: ItemClass?) throws -> ItemQuery {
        ItemQuery(itemClass?.itemClass ?? defaultClass, attributes: try attributes(), scope: scope)
    }
}

/// An item's value and protection, for `add`, `upsert` and `update`.
struct ItemValueOptions: ArgumentGroup {
    @Option(value: "V", help: "The secret value (add: else --value-file, else standard input or a prompt).")
    var value: String?

    @Option(value: "F", help: "Read the secret value from F byte for byte ('-': standard input).")
    var valueFile: String?

    @Option(
        value: "CLASS",
        help: "Protection class: whenUnlocked (default), afterFirstUnlock, or a …ThisDeviceOnly one."
    )
    var accessible: String?

    @Flag(help: "Reading the value asks for the passphrase again.")
    var requiresPresence: Bool

    func validate() throws {
        if value != nil, valueFile != nil { throw ValidationError("give --value or --value-file, not both") }
    }

    /// The protection class `--accessible` names, if given; an unknown one is the keychain's
    /// `param` error, which says why.
    var accessibility: Accessibility? {
        get throws { try accessible.map { try Accessibility(name: $0) } }
    }

    /// The item `add` and `upsert` store (device-bound unless --sync).
    func newItem(_ selection: ItemSelection, _ context: CommandContext) throws -> KeychainItem {
        var item = KeychainItem(
            selection.itemClass?.itemClass ?? .genericPassword,
            attributes: try selection.attributes()
        )
        item.value = try secret(context)
        item.accessibility = try accessibility ?? .whenUnlocked
        item.scope = selection.sync ? .syncable : .deviceBound
        item.requiresUserPresence = requiresPresence
        return item
    }

    /// The value from --value, --value-file (`-`: standard input), else standard input, else a prompt.
    /// An empty file or standard input is refused (a script whose pipe broke would store an empty
    /// secret without a word); an empty secret must be asked for with `--value ''`.
    func secret(_ context: CommandContext) throws -> Data {
        if let value { return Data(value.utf8) }
        if valueFile == "-" { return try nonEmptyStandardInput(context) }
        if let path = valueFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIFailure("cannot read --value-file '\(path)': no such readable file")
            }
            guard !data.isEmpty else {
                throw CLIFailure(
                    "--value-file '\(path)' is empty; nothing was stored (for an empty secret, pass --value '')"
                )
            }
            return data
        }
        if context.console.inputIsTerminal {
            guard let typed = context.console.readSecret(prompt: "Value: ") else {
                throw CLIFailure("no value given: pass --value V or --value-file F, or pipe it on standard input")
            }
            return Data(typed)
        }
        return try nonEmptyStandardInput(context)
    }

    private func nonEmptyStandardInput(_ context: CommandContext) throws -> Data {
        let data = context.console.readStandardInput()
        guard !data.isEmpty else {
            throw CLIFailure(
                "standard input was empty; nothing was stored (give the value on standard input or with --value-file F; for an empty secret, pass --value '')"
            )
        }
        return data
    }
}

/// An item class as the command line names it (`generic-password`, or Keychain Services'
/// `genericPassword`).
struct ItemClassName: ArgumentValue {
    /// The class.
    let itemClass: ItemClass

    init?(argument text: String) {
        guard let found = ItemClass.allCases.first(where: { $0.cliName == text || $0.rawValue == text }) else {
            return nil
        }
        itemClass = found
    }

    static var expectation: String { "one of " + choices.joined(separator: ", ") }
    static var choices: [String] { ItemClass.allCases.map(\.cliName) }
}

extension KeychainItem {
    /// The item without its value, for a listing of what was stored.
    var withoutValue: KeychainItem {
        var item = self
        item.value = nil
        return item
    }
}

/// One item in `coffer item find --json`.
struct ItemListing: Encodable {
    let itemClass: String
    let scope: String
    let accessibility: String
    let requiresUserPresence: Bool
    let created: Date?
    let modified: Date?
    let attributes: [String: String]
    let value: String?
    let valueBase64: String?

    init(_ item: KeychainItem) {
        itemClass = item.itemClass.cliName
        scope = item.scope.rawValue
        accessibility = item.accessibility.rawValue
        requiresUserPresence = item.requiresUserPresence
        created = item.creationDate
        modified = item.modificationDate
        attributes = Dictionary(
            uniqueKeysWithValues: item.attributes.values.map { ($0.key.rawValue, $0.value.description) }
        )
        let text = item.value.flatMap { String(data: $0, encoding: .utf8) }
        value = text
        valueBase64 = text == nil ? item.value?.base64EncodedString() : nil
    }

    enum CodingKeys: String, CodingKey {
        case itemClass = "class"
        case scope, accessibility, requiresUserPresence, created, modified, attributes
        case value, valueBase64
    }
}

extension ItemClass {
    /// The class's name on the command line, e.g. `generic-password`.
    var cliName: String {
        switch self {
        case .genericPassword: return "generic-password"
        case .internetPassword: return "internet-password"
        case .key: return "key"
        case .certificate: return "certificate"
        case .identity: return "identity"
        }
    }
}

extension Data {
    /// Bytes from hex text; `nil` if it is not an even number of hex digits.
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
