/// Whether a vault's keys are in memory, as ``Vault/lockState`` and ``Vault/lockStates()`` report it.
public enum LockState: String, Sendable, Hashable {
    /// The vault is unlocked: created, or unlocked with its passphrase or recovery key.
    case unlocked
    /// ``Vault/lock()`` locked the vault, or it was opened and not unlocked yet.
    case locked
    /// The vault locked itself after ``Vault/Configuration/autoLockInterval`` without activity.
    case autoLocked
    /// ``Vault/close()`` closed the vault: the last state a stream reports.
    case closed

    /// Whether the vault's passphrase-protected keys are out of memory (every state but ``unlocked``).
    public var isLocked: Bool { self != .unlocked }
}

/// The streams of one vault's lock state: each gets the current state, then every change, until the
/// vault closes or the consumer stops. States change under the vault's state lock, so that streams
/// see them in the order they happened.
final class LockStateObservers: Sendable {
    private struct State: Sendable {
        var current: LockState
        var next = 0
        var continuations: [Int: AsyncStream<LockState>.Continuation] = [:]
    }

    private let state: Locked<State>

    init(_ initial: LockState) { state = Locked(State(current: initial)) }

    /// The state streams last reported.
    var current: LockState { state.withLock { $0.current } }

    /// Reports `new` to every stream unless it is the current state; `.closed` ends them.
    func publish(_ new: LockState) {
        let ended = state.withLock { state -> [AsyncStream<LockState>.Continuation] in
            guard state.current != new, state.current != .closed else { return [] }
            state.current = new
            for continuation in state.continuations.values { continuation.yield(new) }
            guard new == .closed else { return [] }
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        // Outside the lock: finishing runs each stream's termination handler, which takes it.
        for continuation in ended { continuation.finish() }
    }

    /// A stream that starts with the current state. A consumer that falls behind keeps the latest few
    /// states, the last one always among them.
    func stream() -> AsyncStream<LockState> {
        let (stream, continuation) = AsyncStream.makeStream(of: LockState.self, bufferingPolicy: .bufferingNewest(8))
        state.withLock { state in
            continuation.yield(state.current)
            guard state.current != .closed else {
                continuation.finish()
                return
            }
            let id = state.next
            state.next += 1
            state.continuations[id] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.continuations.removeValue(forKey: id) }
            }
        }
        return stream
    }
}

extension Vault {
    /// The vault's lock state now: ``LockState/unlocked``, ``LockState/locked``,
    /// ``LockState/autoLocked`` or ``LockState/closed``.
    public var lockState: LockState { lockObservers.current }

    /// The vault's lock state, then every change to it: unlocks, ``lock()``, auto-locks after
    /// ``Configuration/autoLockInterval`` and ``close()``, after which the stream ends. A UI shows its
    /// lock screen from it instead of polling ``isLocked``. Locking a locked vault or unlocking an
    /// unlocked one reports nothing. A consumer that falls behind keeps the latest states, never
    /// missing the last; the stream ends, too, when the consuming task is cancelled.
    ///
    /// ```swift
    /// for await state in vault.lockStates() {
    ///     showLockScreen(state.isLocked)   // .autoLocked: "locked after 5 minutes idle"
    /// }
    /// ```
    public func lockStates() -> AsyncStream<LockState> {
        lockObservers.stream()
    }
}
