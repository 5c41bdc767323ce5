/// A value read from a vault, then read again after every change that may affect it, as an
/// `AsyncSequence`: the current value first, then each new one. A value equal to the last one reported
/// is not reported again, and changes that come faster than the consumer asks are coalesced: it gets
/// the latest value, not each one in between. Made by ``Keychain/observe(_:pollInterval:)`` and
/// ``Blobs/observe(_:pollInterval:)``, after GRDB's `ValueObservation`.
///
/// While the vault is locked and the value needs a key the lock dropped, the sequence waits: it
/// reports nothing and throws nothing, and reads the value again once the vault is unlocked (watch
/// ``Vault/lockStates()`` to show a lock screen meanwhile). Values readable while locked (items and
/// blobs protected `afterFirstUnlock`) go on being reported. The sequence ends when the vault is
/// closed or the consuming task is cancelled, and throws any other error a read throws (a damaged
/// record, say), after which it ends.
///
/// ```swift
/// for try await info in vault.blobs.observe("photos/cat.jpg") {
///     showThumbnail(info)   // nil: no such blob (yet, or any more)
/// }
/// ```
public struct ValueObservation<Value: Sendable & Equatable>: AsyncSequence, Sendable {
    /// A value.
    public typealias Element = Value
    /// What a read throws.
    public typealias Failure = CofferError

    let vault: Vault
    let changes: VaultChanges
    let pollInterval: Duration
    let mayAffect: @Sendable (VaultChange) -> Bool
    let read: @Sendable () throws(CofferError) -> Value

    /// An observation of `vault` that reads `read` now and again after each change `mayAffect`
    /// says may change it, looking at the journal every `pollInterval`.
    package init(
        vault: Vault,
        pollInterval: Duration,
        mayAffect: @escaping @Sendable (VaultChange) -> Bool,
        read: @escaping @Sendable () throws(CofferError) -> Value
    ) {
        self.vault = vault
        self.changes = vault.changes(pollInterval: pollInterval)
        self.pollInterval = pollInterval
        self.mayAffect = mayAffect
        self.read = read
    }

    /// Reads the value, then follows the vault's changes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let observation: ValueObservation
        var changes: VaultChanges.AsyncIterator
        /// The value reported last; `nil` before the first.
        var last: Value?
        /// Whether a change may have made `last` out of date.
        var stale = true

        /// The first value, or the next one that differs from the last; `nil` once the vault is
        /// closed or the task cancelled.
        public mutating func next() async throws(CofferError) -> Value? {
            while true {
                if stale {
                    guard let value = try await observation.readWaitingForUnlock() else { return nil }
                    stale = false
                    if value != last {
                        last = value
                        return value
                    }
                }
                guard let change = try await changes.next() else { return nil }
                if change.operation == .missed || observation.mayAffect(change) { stale = true }
            }
        }
    }

    /// Starts observing.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(observation: self, changes: changes.makeAsyncIterator())
    }

    /// The value now; while the vault is locked and the read needs a dropped key, waits for an
    /// unlock. `nil` once the vault is closed or the task cancelled.
    func readWaitingForUnlock() async throws(CofferError) -> Value? {
        while true {
            guard !Task.isCancelled, !vault.isClosed else { return nil }
            do {
                return try read()
            } catch  where error.code == .closed {
                return nil
            } catch  where error.code == .interactionNotAllowed && vault.isLocked {
                do {
                    try await Task.sleep(for: pollInterval)
                } catch {
                    return nil
                }
            }
        }
    }
}
