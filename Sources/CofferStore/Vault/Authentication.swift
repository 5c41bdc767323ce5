/// What the keychain asks an ``AuthenticationHandler`` before revealing values of items that require
/// user presence.
public struct AuthenticationRequest: Sendable {
    /// Why, for showing to the person, e.g. `read 1 item that requires user presence (service: mail)`.
    public let reason: String
    /// How many protected items the read would reveal.
    public let itemCount: Int

    package init(reason: String, itemCount: Int) {
        self.reason = reason
        self.itemCount = itemCount
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
///     askPerson(request.reason) ? .granted : .canceled
/// }
/// ```
public typealias AuthenticationHandler = @Sendable (AuthenticationRequest) -> AuthenticationResult
