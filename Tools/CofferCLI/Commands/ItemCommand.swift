import Coffer
import Foundation

/// `coffer item add|get|find|update|delete`: the keychain tier from the command line.
enum ItemCommand {
    /// Options that select items, shared by every item subcommand.
    static let selection: [OptionSpec] = [
        .option(
            "class",
            value: "CLASS",
            help: "generic-password (default for add and get), internet-password, key, certificate, identity."
        ),
        .option("service", value: "S", help: "The service attribute."),
        .option("account", value: "A", help: "The account attribute."),
        .option("server", value: "H", help: "The server attribute."),
        .option("label", value: "L", help: "The label attribute."),
        .option("access-group", value: "G", help: "The access group."),
        .option(
            "attribute",
            value: "NAME=VALUE",
            help: "Any other attribute, e.g. port=443 or path=/ (repeatable; bytes in hex)."
        ),
        .flag("sync", help: "Syncable items only (add, update: make the item syncable)."),
        .flag("device-only", help: "Device-bound items only (add, update: make the item device-bound)."),
    ]

    static let valueOptions: [OptionSpec] = [
        .option(
            "value",
            value: "V",
            help: "The secret value (add: else --value-file, else standard input or a prompt)."
        ),
        .option("value-file", value: "F", help: "Read the secret value from F byte for byte ('-': standard input)."),
        .option(
            "accessible",
            value: "CLASS",
            help: "Protection class: whenUnlocked (default), afterFirstUnlock, or a …ThisDeviceOnly one."
        ),
        .flag("requires-presence", help: "Reading the value asks for the passphrase again."),
    ]

    static let spec = CommandSpec(
        name: "item",
        abstract: "Store and read small secrets (the keychain tier).",
        discussion: """
            Items are passwords, tokens and keys of up to 16 KiB, each with attributes (service, account,
            server, label, …) that are encrypted with it. An item is device-bound unless added with --sync.
            Errors name Keychain Services' status (e.g. itemNotFound -25300).
            """,
        subcommands: [
            CommandSpec(
                name: "add",
                abstract: "Add an item; fails if one with the same primary key exists.",
                options: selection + valueOptions,
                examples: [
                    "coffer item add --service mail --account ann  # asks for the value, no echo",
                    "coffer item add --service ci --account bot --value-file token.txt --sync",
                ],
                run: add
            ),
            CommandSpec(
                name: "upsert",
                abstract: "Add an item, or replace the one with the same primary key (keeping its creation date).",
                discussion: """
                    The primary key is the class, the key attributes (service and account for a generic password;
                    server, account, protocol, port and path for an internet password; …), the access group and
                    the scope: a syncable and a device-bound item of the same service and account are two items.
                    """,
                options: selection + valueOptions,
                examples: [
                    "coffer item upsert --service ci --account bot --value-file new-token.txt",
                    "pass show mail | coffer item upsert --service mail --account ann --value-file -",
                ],
                run: upsert
            ),
            CommandSpec(
                name: "get",
                abstract: "Write the value of exactly one matching item to standard output, as is.",
                options: selection,
                examples: [
                    "coffer item get --service mail --account ann   # the value, as is",
                    "coffer item get --service mail --account ann --sync",
                ],
                run: get
            ),
            CommandSpec(
                name: "find",
                abstract: "List matching items' attributes (values only with --show-value).",
                options: selection + [.flag("show-value", help: "Include values in the listing.")],
                examples: [
                    "coffer item find --service mail               # attributes only",
                    "coffer item find --json --show-value",
                ],
                run: find
            ),
            CommandSpec(
                name: "update",
                abstract: "Change every matching item: value, attributes (--set), protection class or scope.",
                discussion: """
                    The selection options pick the items (of either scope); the value changes only with --value or
                    --value-file; --sync or --device-only move the items to that scope.
                    """,
                options: selection + valueOptions + [
                    .option("set", value: "NAME=VALUE", help: "Set an attribute on the matching items (repeatable).")
                ],
                examples: [
                    "coffer item update --service mail --account ann --value-file new.txt",
                    "coffer item update --service mail --sync      # make the matches syncable",
                ],
                run: update
            ),
            CommandSpec(
                name: "delete",
                abstract: "Delete the matching item (all matching items with --all).",
                options: selection + [.flag("all", help: "Delete every matching item, not just one.")],
                examples: [
                    "coffer item delete --service mail --account ann",
                    "coffer item delete --service old --all",
                ],
                run: delete
            ),
        ],
        examples: [
            "coffer item add --service mail --account ann   # asks for the value",
            "coffer item get --service mail --account ann",
        ]
    )

    // MARK: Commands

    static func add(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let item = try newItem(invocation)
        do throws(CofferError) {
            try vault.keychain.add(item)
        } catch {
            guard error.code == .duplicateItem else { throw error }
            throw CofferError(
                .duplicateItem,
                "a \(item.scope == .syncable ? "syncable" : "device-bound") \(item.itemClass.cliName) with these key attributes already exists; change it with 'coffer item update' (same selection), or replace it with 'coffer item upsert'"
            )
        }
        if !invocation.flag("quiet"), !invocation.flag("json") {
            invocation.console.message(
                "Added \(item.itemClass.cliName) (\(item.scope.rawValue), \(item.accessibility.rawValue))."
            )
        }
    }

    static func upsert(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let item = try newItem(invocation)
        try vault.keychain.upsert(item)
        if !invocation.flag("quiet"), !invocation.flag("json") {
            invocation.console.message(
                "Stored \(item.itemClass.cliName) (\(item.scope.rawValue), \(item.accessibility.rawValue))."
            )
        }
    }

    /// The item `add` and `upsert` store, from the command line (device-bound unless --sync).
    static func newItem(_ invocation: Invocation) throws -> KeychainItem {
        var item = KeychainItem(try itemClass(invocation) ?? .genericPassword, attributes: try attributes(invocation))
        item.value = try value(invocation)
        item.accessibility = try invocation.value("accessible").map { try Accessibility(name: $0) } ?? .whenUnlocked
        item.scope = try scopeMatch(invocation) == .syncable ? .syncable : .deviceBound
        item.requiresUserPresence = invocation.flag("requires-presence")
        return item
    }

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

    static func get(_ invocation: Invocation) throws {
        let vault = try openWithPresence(invocation)
        defer { vault.close() }
        var query = try query(invocation, defaultClass: .genericPassword)
        let items = try vault.keychain.find(query)
        guard !items.isEmpty else {
            throw CofferError(
                .itemNotFound,
                "no item matches this selection; 'coffer item find' lists the items there are"
            )
        }
        guard items.count == 1 else {
            throw CLIFailure(ambiguity(items, action: "list them with 'coffer item find' (same selection)"))
        }
        query.returnsValue = true
        let value = try vault.keychain.find(query)[0].value ?? Data()
        invocation.console.writeOutput(raw: value)
    }

    static func find(_ invocation: Invocation) throws {
        let vault =
            invocation.flag("show-value")
            ? try openWithPresence(invocation) : try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        var query = try query(invocation, defaultClass: nil)
        query.returnsValue = invocation.flag("show-value")
        let items = try vault.keychain.find(query)
        if invocation.flag("json") {
            try invocation.console.printJSON(items.map(ItemListing.init))
        } else {
            invocation.console.print(items.map(describe).joined(separator: "\n"))
        }
    }

    static func update(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        var query = try query(invocation, defaultClass: nil)
        query.scope = .any
        var changes = ItemUpdate(attributes: try parseAttributes(invocation.values("set")))
        if invocation.value("value") != nil || invocation.value("value-file") != nil {
            changes.value = try value(invocation)
        }
        changes.accessibility = try invocation.value("accessible").map { try Accessibility(name: $0) }
        if invocation.flag("sync") { changes.scope = .syncable }
        if invocation.flag("device-only") { changes.scope = .deviceBound }
        if invocation.flag("requires-presence") { changes.requiresUserPresence = true }
        let count = try vault.keychain.update(query, with: changes)
        if invocation.flag("json") {
            try invocation.console.printJSON(["updated": count])
        } else if !invocation.flag("quiet") {
            invocation.console.message("Updated \(count) item\(count == 1 ? "" : "s").")
        }
    }

    static func delete(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let query = try query(invocation, defaultClass: nil)
        let matching = try vault.keychain.find(query)
        if matching.count > 1, !invocation.flag("all") {
            throw CLIFailure(ambiguity(matching, action: "pass --all to delete them all"))
        }
        let count = try vault.keychain.delete(query)
        if invocation.flag("json") {
            try invocation.console.printJSON(["deleted": count])
        } else if !invocation.flag("quiet") {
            invocation.console.message("Deleted \(count) item\(count == 1 ? "" : "s").")
        }
    }

    // MARK: Reading the command line

    /// Opens and unlocks the vault with an authentication handler that asks for the passphrase again on
    /// the terminal (and cancels where there is none).
    static func openWithPresence(_ invocation: Invocation) throws -> Vault {
        let holder = VaultHolder()
        var configuration = Vault.Configuration()
        configuration.authenticationHandler = { request in
            guard let vault = holder.vault,
                invocation.console.inputIsTerminal,
                var answer = invocation.console.readSecret(prompt: "Passphrase to \(request.reason): ")
            else { return .canceled }
            defer { answer.wipe() }
            do {
                try vault.unlock(passphrase: Passphrase(utf8: answer))
                return .granted
            } catch {
                return .failed
            }
        }
        let vault = try CofferCommand.openUnlocked(invocation, configuration: configuration)
        holder.vault = vault
        return vault
    }

    static func itemClass(_ invocation: Invocation) throws -> ItemClass? {
        guard let name = invocation.value("class") else { return nil }
        guard let itemClass = ItemClass.allCases.first(where: { $0.cliName == name || $0.rawValue == name }) else {
            throw UsageError(
                message: "unknown --class '\(name)'; use \(ItemClass.allCases.map(\.cliName).joined(separator: ", "))",
                commandPath: invocation.commandPath
            )
        }
        return itemClass
    }

    static func scopeMatch(_ invocation: Invocation) throws -> SyncScope.Match {
        switch (invocation.flag("sync"), invocation.flag("device-only")) {
        case (true, true):
            throw UsageError(
                message: "--sync and --device-only contradict each other",
                commandPath: invocation.commandPath
            )
        case (true, false): return .syncable
        case (false, true): return .deviceBound
        case (false, false): return .any
        }
    }

    static func attributes(_ invocation: Invocation) throws -> ItemAttributes {
        var attributes = try parseAttributes(invocation.values("attribute"))
        let named: [(String, ItemAttributes.Name)] = [
            ("service", .service), ("account", .account), ("server", .server), ("label", .label),
            ("access-group", .accessGroup),
        ]
        for (option, name) in named {
            if let value = invocation.value(option) { attributes[name] = .text(value) }
        }
        return attributes
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

    static func query(_ invocation: Invocation, defaultClass: ItemClass?) throws -> ItemQuery {
        ItemQuery(
            try itemClass(invocation) ?? defaultClass,
            attributes: try attributes(invocation),
            scope: try scopeMatch(invocation)
        )
    }

    /// The value from --value, --value-file (`-`: standard input), else standard input, else a prompt.
    /// An empty file or standard input is refused (a script whose pipe broke would store an empty
    /// secret without a word); an empty secret must be asked for with `--value ''`.
    static func value(_ invocation: Invocation) throws -> Data {
        if let text = invocation.value("value") { return Data(text.utf8) }
        if invocation.value("value-file") == "-" { return try nonEmptyStandardInput(invocation) }
        if let path = invocation.value("value-file") {
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
        if invocation.console.inputIsTerminal {
            guard let typed = invocation.console.readSecret(prompt: "Value: ") else {
                throw CLIFailure("no value given: pass --value V or --value-file F, or pipe it on standard input")
            }
            return Data(typed)
        }
        return try nonEmptyStandardInput(invocation)
    }

    private static func nonEmptyStandardInput(_ invocation: Invocation) throws -> Data {
        let data = invocation.console.readStandardInput()
        guard !data.isEmpty else {
            throw CLIFailure(
                "standard input was empty; nothing was stored (give the value on standard input or with --value-file F; for an empty secret, pass --value '')"
            )
        }
        return data
    }

    static func describe(_ item: KeychainItem) -> String {
        let attributes = item.attributes.values.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ")
        var line = "\(item.itemClass.cliName)  \(item.scope.rawValue)  \(item.accessibility.rawValue)  \(attributes)"
        if item.requiresUserPresence { line += "  (requires presence)" }
        if let value = item.value {
            line += "  value=\(String(data: value, encoding: .utf8) ?? value.base64EncodedString())"
        }
        return line
    }
}

/// One item in `coffer item find --json`.
struct ItemListing: Encodable {
    let itemClass: String
    let scope: String
    let accessibility: String
    let requiresUserPresence: Bool
    let creationDate: Date?
    let modificationDate: Date?
    let attributes: [String: String]
    let value: String?
    let valueBase64: String?

    init(_ item: KeychainItem) {
        itemClass = item.itemClass.cliName
        scope = item.scope.rawValue
        accessibility = item.accessibility.rawValue
        requiresUserPresence = item.requiresUserPresence
        creationDate = item.creationDate
        modificationDate = item.modificationDate
        attributes = Dictionary(
            uniqueKeysWithValues: item.attributes.values.map { ($0.key.rawValue, $0.value.description) }
        )
        let text = item.value.flatMap { String(data: $0, encoding: .utf8) }
        value = text
        valueBase64 = text == nil ? item.value?.base64EncodedString() : nil
    }

    enum CodingKeys: String, CodingKey {
        case itemClass = "class"
        case scope, accessibility, requiresUserPresence, creationDate, modificationDate, attributes
        case value, valueBase64
    }
}

/// Lets the authentication handler reach the vault it was configured into.
final class VaultHolder: @unchecked Sendable {
    var vault: Vault?
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
