package import Foundation

/// Where a typed value lives in the keychain: the generic password of a service and an account.
public struct KeychainKey: Hashable, Sendable {
    /// The service (a generic password's first primary-key attribute).
    public let service: String
    /// The account name.
    public let account: String

    /// The key of `service` and `account`.
    public init(service: String, account: String) {
        self.service = service
        self.account = account
    }
}

extension Keychain {
    /// Stores `value`, encoded as JSON (sorted keys, no extra whitespace, dates as
    /// seconds since 2001, data as base64), as the generic password of `key`, replacing any there
    /// (an atomic upsert). The encoded value must fit an item (16 KiB). Replacing keeps the item's
    /// scope, protection class and user presence unless a new scope or class is given (`nil`: keep,
    /// or ``SyncScope/deviceBound`` and ``Accessibility/whenUnlocked`` for a new item).
    ///
    /// ```swift
    /// struct Token: Codable { let value: String; let expires: Date }
    /// try vault.keychain.set(Token(value: "…", expires: later), for: KeychainKey(service: "api", account: "ann"))
    /// let token = try vault.keychain.value(KeychainKey(service: "api", account: "ann"), as: Token.self)
    /// ```
    ///
    /// - Throws: ``KeychainError`` `.param` if the value cannot be encoded or is too large, and the
    ///   errors of ``upsert(_:)-45axg``.
    public func set(
        _ value: some Encodable,
        for key: KeychainKey,
        accessibility: Accessibility? = nil,
        scope: SyncScope? = nil
    ) throws(KeychainError) {
        let apply = try stagedValueUpdate(
            Self.encoded(value, for: key),
            service: key.service,
            account: key.account,
            accessibility,
            scope
        )
        try storage("saving a keychain item") { try vault.environment.write { txn in _ = try apply(txn) } }
    }

    /// `value` as JSON, as a typed value's `set` stores it for `key`.
    package static func encoded(_ value: some Encodable, for key: KeychainKey) throws(KeychainError) -> Data {
        try TypedValueCoding.encode(value, what: "the value for \(key.service)/\(key.account)")
    }

    /// The value stored for `key`, decoded as a `T`, or `nil` if there is none.
    ///
    /// - Throws: ``KeychainError`` `.decode` if the stored value is not a `T` in JSON, and the errors
    ///   of ``find(_:)-n57e`` other than "not found".
    public func value<T: Decodable>(_ key: KeychainKey, as type: T.Type = T.self) throws(KeychainError) -> T? {
        guard let stored = try genericPasswordValue(service: key.service, account: key.account) else { return nil }
        return try TypedValueCoding.decode(
            T.self,
            from: stored,
            what: "the keychain item for \(key.service)/\(key.account)"
        )
    }
}

extension Keychain {
    /// Stores a typed value; see ``set(_:for:accessibility:scope:)-(Encodable,_,_,_)``.
    public func set(
        _ value: some Encodable & Sendable,
        for key: KeychainKey,
        accessibility: Accessibility? = nil,
        scope: SyncScope? = nil
    ) async throws(KeychainError) {
        try await offload { () throws(KeychainError) in
            try self.set(value, for: key, accessibility: accessibility, scope: scope)
        }
    }

    /// Reads a typed value; see ``value(_:as:)-18f3v``.
    public func value<T: Decodable & Sendable>(
        _ key: KeychainKey,
        as type: T.Type = T.self
    ) async throws(KeychainError)
        -> T?
    {
        try await offload { () throws(KeychainError) in try self.value(key, as: T.self) }
    }
}
