import Synchronization

/// OpenSSL contexts for one keychain operation at a time: a cipher context and the keyed HMAC contexts
/// of the two index keys. Setting these up costs more than the operation's cryptography (keying an
/// HMAC context resolves its digest by name), so they are reused.
final class KeychainContexts {
    let cipher: AESGCM
    var deviceIndex: ItemIndex?
    var syncIndex: ItemIndex?

    init() throws(KeychainError) {
        do {
            cipher = try AESGCM()
        } catch {
            throw KeychainError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }
}

/// The vault's idle ``KeychainContexts``. The index contexts hold index keys, which stay in memory until
/// the vault closes anyway; ``drain()`` at close frees them (OpenSSL cleanses keys as it frees).
final class KeychainContextPool: Sendable {
    /// At most this many idle contexts are kept; more concurrent operations allocate their own.
    private static let capacity = 16

    private struct State: ~Copyable {
        var idle: [UnsafeContexts] = []
        var isDrained = false
    }

    /// Contexts are handed between threads only through the mutex, one owner at a time.
    private struct UnsafeContexts: @unchecked Sendable {
        let contexts: KeychainContexts
    }

    private let state = Mutex(State())

    /// An idle set of contexts, or a new one.
    func take() throws(KeychainError) -> KeychainContexts {
        if let reused = state.withLock({ $0.idle.popLast() }) { return reused.contexts }
        return try KeychainContexts()
    }

    /// Returns contexts after an operation. After ``drain()``, they are freed instead.
    func give(_ contexts: KeychainContexts) {
        let wrapped = UnsafeContexts(contexts: contexts)
        state.withLock { state in
            if !state.isDrained, state.idle.count < Self.capacity { state.idle.append(wrapped) }
        }
    }

    /// Frees every idle context and keeps no more (at close).
    func drain() {
        let freed = state.withLock { state in
            state.isDrained = true
            defer { state.idle = [] }
            return state.idle
        }
        _ = freed
    }
}
