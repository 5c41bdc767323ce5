/// OpenSSL contexts for one keychain operation at a time: a cipher context and the keyed HMAC contexts
/// of the two index keys. Setting these up costs more than the operation's cryptography (keying an
/// HMAC context resolves its digest by name; keying a cipher context expands the key), so they are
/// reused.
package final class KeychainContexts {
    package let cipher: AESGCM
    package var deviceIndex: ItemIndex?
    package var syncIndex: ItemIndex?
    /// The pool generation the contexts were taken in.
    fileprivate(set) var generation = 0

    package init() throws(KeychainError) {
        do {
            cipher = try AESGCM()
        } catch {
            throw KeychainError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }

    /// The index (ids and blind index) of `scope`, keyed on first use with the key `indexKey` gives.
    package func index(
        _ scope: SyncScope,
        indexKey: () throws(CofferError) -> SecureBytes
    ) throws(KeychainError) -> ItemIndex {
        if let index = scope == .deviceBound ? deviceIndex : syncIndex { return index }
        let index = try ItemIndex(key: try indexKey(), scope: scope)
        if scope == .deviceBound { deviceIndex = index } else { syncIndex = index }
        return index
    }
}

/// The vault's idle ``KeychainContexts``.
///
/// Contexts hold key material: a cipher context keeps the expanded key it last used (from which the key
/// can be recovered), an index context its HMAC key. So ``flush()`` runs at every lock and frees the
/// idle contexts, and contexts taken before a flush are freed when given back rather than kept: after
/// `lock()` returns and the operations running then finish, no `whenUnlocked` key survives here.
/// ``drain()`` at close does the same for good. (OpenSSL cleanses keys as it frees contexts.)
package final class KeychainContextPool: Sendable {
    /// At most this many idle contexts are kept; more concurrent operations allocate their own.
    private static let capacity = 16

    private struct State: ~Copyable {
        package var idle: [UnsafeContexts] = []
        package var generation = 0
        package var isDrained = false
    }

    /// Contexts are handed between threads only through the mutex, one owner at a time.
    private struct UnsafeContexts: @unchecked Sendable {
        package let contexts: KeychainContexts
    }

    private let state = Locked(State())

    /// An idle set of contexts, or a new one.
    package func take() throws(KeychainError) -> KeychainContexts {
        let (reused, generation) = state.withLock { ($0.idle.popLast(), $0.generation) }
        let contexts: KeychainContexts
        if let reused { contexts = reused.contexts } else { contexts = try KeychainContexts() }
        contexts.generation = generation
        return contexts
    }

    /// Returns contexts after an operation; they are freed instead if the pool was flushed or drained
    /// since they were taken.
    package func give(_ contexts: KeychainContexts) {
        let wrapped = UnsafeContexts(contexts: contexts)
        let kept = state.withLock { state -> Bool in
            guard !state.isDrained, state.generation == contexts.generation, state.idle.count < Self.capacity else {
                return false
            }
            state.idle.append(wrapped)
            return true
        }
        _ = kept
    }

    /// Frees the idle contexts and disowns those in use (at lock).
    package func flush() {
        let freed = state.withLock { state in
            state.generation += 1
            defer { state.idle = [] }
            return state.idle
        }
        _ = freed
    }

    /// Frees every idle context and keeps no more (at close).
    package func drain() {
        let freed = state.withLock { state in
            state.isDrained = true
            state.generation += 1
            defer { state.idle = [] }
            return state.idle
        }
        _ = freed
    }

    /// How many contexts are idle (for tests).
    package var idleCount: Int { state.withLock { $0.idle.count } }
}

extension KeychainContextPool: VaultAttachment {
    package func vaultDidLock() { flush() }
    package func vaultWillClose() { drain() }
}

extension Vault {
    /// The OpenSSL contexts keychain operations on this vault reuse.
    package var keychainContexts: KeychainContextPool { attachment { KeychainContextPool() } }
}
