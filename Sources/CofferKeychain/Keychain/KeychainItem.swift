public import Foundation

/// A keychain item: its class, attributes, protection, scope and (when asked for) its secret value.
///
/// ```swift
/// var item = KeychainItem(.genericPassword, value: Data("s3cret".utf8))
/// item.attributes.service = "api.example.com"
/// item.attributes.account = "deploy-bot"
/// item.accessibility = .afterFirstUnlock
/// try vault.keychain.add(item)
/// ```
public struct KeychainItem: Sendable, Hashable {
    /// The largest value an item may hold. Larger data belongs in the blob tier.
    public static let maximumValueSize = 16 << 10

    /// The item's class.
    public var itemClass: ItemClass
    /// The item's attributes.
    public var attributes: ItemAttributes
    /// When the secret can be read. Default: ``Accessibility/whenUnlocked``.
    public var accessibility: Accessibility
    /// Whether the item stays on this machine or syncs. Default: ``SyncScope/deviceBound``.
    public var scope: SyncScope
    /// Whether reading the value asks the keychain's authentication handler first.
    public var requiresUserPresence: Bool
    /// The secret. In results, `nil` unless the query asked for values.
    public var value: Data?
    /// When the item was added (set by the vault).
    public internal(set) var creationDate: Date?
    /// When the item last changed (set by the vault).
    public internal(set) var modificationDate: Date?

    /// An item of `itemClass` with no attributes yet.
    public init(
        _ itemClass: ItemClass,
        attributes: ItemAttributes = ItemAttributes(),
        value: Data? = nil,
        accessibility: Accessibility = .whenUnlocked,
        scope: SyncScope = .deviceBound,
        requiresUserPresence: Bool = false
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.value = value
        self.accessibility = accessibility
        self.scope = scope
        self.requiresUserPresence = requiresUserPresence
    }

    /// Checks what the keychain refuses to store.
    package func validate() throws(KeychainError) {
        if let value, value.count > Self.maximumValueSize {
            throw KeychainError(
                .param,
                "the value is \(value.count) bytes; keychain items hold at most \(Self.maximumValueSize) bytes. "
                    + "Store large data in the blob tier (\(InterfaceName.putBlob)) and keep only its name here"
            )
        }
        if accessibility.isThisDeviceOnly, scope == .syncable {
            throw KeychainError(
                .param,
                "accessibility \(accessibility.rawValue) keeps the item on this device, so it cannot be syncable; "
                    + "choose \(accessibility.level == .whenUnlocked ? "whenUnlocked" : "afterFirstUnlock") to sync it"
            )
        }
    }
}

/// Which items a find, update or delete applies to, and what a find returns.
///
/// ```swift
/// var query = ItemQuery(.genericPassword)
/// query.attributes.service = "api.example.com"
/// query.returnsValue = true
/// let items = try vault.keychain.find(query)
/// ```
public struct ItemQuery: Sendable, Hashable {
    /// How many items a find returns.
    public enum Limit: Sendable, Hashable {
        /// The first matching item in the keychain's order.
        case one
        /// Every matching item.
        case all
    }

    /// The class to match; `nil` matches every class.
    public var itemClass: ItemClass?
    /// Attributes that must match exactly; unset attributes match anything.
    public var attributes: ItemAttributes
    /// The scope to match. Default: ``SyncScope/Match/any``. (Apple's default is non-synchronizable
    /// only, a frequent surprise; Coffer matches both unless asked.)
    public var scope: SyncScope.Match
    /// How many items a find returns. Update and delete always apply to every match.
    public var limit: Limit
    /// Whether a find returns values (which may ask for user presence) or only attributes.
    public var returnsValue: Bool

    /// A query for items of `itemClass` (every class when `nil`).
    public init(
        _ itemClass: ItemClass? = nil,
        attributes: ItemAttributes = ItemAttributes(),
        scope: SyncScope.Match = .any,
        limit: Limit = .all,
        returnsValue: Bool = false
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.scope = scope
        self.limit = limit
        self.returnsValue = returnsValue
    }

    /// The generic password for `service` and `account`: at most one item (`limit: .one`). Should
    /// an item of that primary key exist in each scope (an import can leave a device-bound and a
    /// syncable one), it is the device-bound one, as ``Keychain/password(service:account:)-79fbd``
    /// reads; set `limit` to ``Limit/all`` (or `scope`) to see both.
    public static func genericPassword(service: String, account: String) -> ItemQuery {
        var query = ItemQuery(.genericPassword, limit: .one)
        query.attributes.service = service
        query.attributes.account = account
        return query
    }
}

/// The changes an update makes to every matching item. Unset fields stay as they are.
public struct ItemUpdate: Sendable, Hashable {
    /// Attributes to set (each one set here replaces the item's).
    public var attributes: ItemAttributes
    /// A new value.
    public var value: Data?
    /// A new protection class: the item is sealed again under that class's key.
    public var accessibility: Accessibility?
    /// A new scope: the item moves to the other scope's keys (and ids).
    public var scope: SyncScope?
    /// Whether reading the value should require user presence.
    public var requiresUserPresence: Bool?

    /// An update with the given changes.
    public init(
        attributes: ItemAttributes = ItemAttributes(),
        value: Data? = nil,
        accessibility: Accessibility? = nil,
        scope: SyncScope? = nil,
        requiresUserPresence: Bool? = nil
    ) {
        self.attributes = attributes
        self.value = value
        self.accessibility = accessibility
        self.scope = scope
        self.requiresUserPresence = requiresUserPresence
    }

    /// `item` with these changes applied.
    package func applied(to item: KeychainItem) -> KeychainItem {
        var updated = item
        updated.attributes = item.attributes.merging(attributes)
        if let value { updated.value = value }
        if let accessibility { updated.accessibility = accessibility }
        if let scope { updated.scope = scope }
        if let requiresUserPresence { updated.requiresUserPresence = requiresUserPresence }
        return updated
    }
}
