/// What the keychain asks an ``AuthenticationHandler`` before revealing values of items that require
/// user presence.
public struct AuthenticationRequest: Sendable {
    /// Why, for showing to the person, e.g. `read 1 item that requires user presence (service: mail)`.
    public let reason: String
    /// How many protected items the read would reveal.
    public let itemCount: Int
    /// Checks a passphrase the person gives against the vault's, changing nothing: the handler
    /// needs no reference to the vault of its own.
    public let passphrase: PassphraseChecker

    package init(reason: String, itemCount: Int, vault: Vault) {
        self.reason = reason
        self.itemCount = itemCount
        self.passphrase = PassphraseChecker(vault: vault)
    }
}

/// Checks whether a passphrase is a vault's, as an ``AuthenticationHandler`` does before it grants a
/// read: it derives the key-encryption key with the vault's KDF (scrypt, deliberately slow) and tries
/// it on the wrapped keys, without unlocking, locking or changing anything. ``AuthenticationRequest``
/// carries one.
///
/// ```swift
/// configuration.authenticationHandler = { request in
///     guard let answer = askPerson(request.reason) else { return .canceled }
///     return (try? request.passphrase.check(Passphrase(answer))) == true ? .granted : .failed
/// }
/// ```
public struct PassphraseChecker: Sendable {
    let vault: Vault

    /// Whether `passphrase` is the vault's. A wrong one returns `false` and changes nothing; a
    /// locked vault stays locked either way.
    ///
    /// - Throws: ``CofferError`` `.closed` after ``Vault/close()``, `.decode` if the key records are
    ///   damaged.
    public func check(_ passphrase: Passphrase) throws(CofferError) -> Bool {
        try vault.isPassphrase(passphrase)
    }

    /// Whether `passphrase` is the vault's, with the key derivation run off Swift's cooperative pool;
    /// see ``check(_:)-xzjb``.
    public func check(_ passphrase: Passphrase) async throws(CofferError) -> Bool {
        let vault = vault
        return try await offload { () throws(CofferError) in try vault.isPassphrase(passphrase) }
    }
}

extension Vault {
    /// Whether `passphrase` opens the vault's wrapped keys; the keys in memory stay as they are.
    package func isPassphrase(_ passphrase: Passphrase) throws(CofferError) -> Bool {
        try checkOpen()
        let kdf = try KDFRecord(decoding: try readMeta(MetaKey.kdf))
        let kek = try kdf.keyEncryptionKey(for: passphrase)
        return try unwrapRoots(under: kek, by: .passphrase) != nil
    }
}

/// What an ``AuthenticationHandler`` decided.
public enum AuthenticationResult: Sendable {
    /// The person is present and agreed: the values are returned.
    case granted
    /// The person declined: the read fails with ``CofferError/Code/userCanceled``.
    case canceled
    /// Authentication failed (for example, a wrong passphrase): the read fails with
    /// ``CofferError/Code/authFailed``.
    case failed
}

/// Confirms that a person is present before values of protected items are revealed. Called outside
/// any transaction, on the thread of the read; it may block (to prompt, say).
///
/// ```swift
/// var configuration = Vault.Configuration()
/// configuration.authenticationHandler = { request in
///     guard let answer = askPerson(request.reason) else { return .canceled }
///     return (try? request.passphrase.check(Passphrase(answer))) == true ? .granted : .failed
/// }
/// ```
public typealias AuthenticationHandler = @Sendable (AuthenticationRequest) -> AuthenticationResult
