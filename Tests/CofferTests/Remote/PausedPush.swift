import Foundation

@testable import Coffer

/// A push of one vault on a thread of its own that pauses at one of its hooks until told to go on,
/// so that a test can run another copy's push at exactly that point of this one.
final class PausedPush: @unchecked Sendable {
    /// Where the push pauses.
    enum Hook {
        /// Its bundle is written but not yet complete in the store (the listing of its own folder,
        /// at its start, is done).
        case beforeFinish
        /// Its bundle is up and its last look at the head passed; its head is not written yet.
        case beforeHeadWrite
    }

    private let paused = DispatchSemaphore(value: 0)
    private let proceed = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<PushSummary, CofferError>?

    /// Starts `vault`'s push to `remote` and returns once it has reached `hook`.
    init(_ vault: Vault, to remote: S3Remote, pausingAt hook: Hook) {
        let pause: @Sendable () throws(CofferError) -> Void = { [paused, proceed] in
            paused.signal()
            proceed.wait()
        }
        let thread = Thread { [self] in
            result = Result { () throws(CofferError) in
                try vault.push(
                    to: remote,
                    progress: nil,
                    beforeFinish: hook == .beforeFinish ? pause : {},
                    beforeHead: {},
                    beforeHeadWrite: hook == .beforeHeadWrite ? pause : {}
                )
            }
            paused.signal()  // in case it failed before the hook
            done.signal()
        }
        thread.start()
        paused.wait()
    }

    /// Lets the push go on from its hook, and returns what it did once it is done.
    func finish() throws(CofferError) -> PushSummary {
        proceed.signal()
        done.wait()
        guard let result else { throw CofferError(.internalError, "the paused push did not finish") }
        return try result.get()
    }
}
