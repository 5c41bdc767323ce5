internal import Foundation
internal import Glibc

/// Ctrl-C (and `SIGTERM`, `SIGHUP`) as a request to stop cleanly, for programs that would rather undo
/// a long write than leave its chunks behind for a later `gc`.
///
/// After ``install()``, the signals no longer end the process at once. Inside ``whileCancellable(_:)``
/// the first one is a request: the library's reads and writes of files, pipes and standard streams
/// (``Blobs``' and snapshots' I/O) see it at their next step, even one waiting on an idle pipe, and
/// throw ``CofferError`` `.userCanceled`; the write in progress then releases what it held, as it does
/// for any error. Outside such a scope, or at a second signal, the process ends as the signal would
/// have ended it. Once the program has cleaned up, ``terminate()`` ends it that way too, so a shell or
/// a supervisor sees "killed by SIGINT" and not an ordinary failure.
///
/// ```swift
/// try Interruption.install()   // first thing, before any thread starts
/// do {
///     try Interruption.whileCancellable { try vault.blobs.write("disk", contentsOf: image) }
/// } catch let error where Interruption.requested != nil {
///     print(error.message)     // what the write released
///     Interruption.terminate()
/// }
/// ```
///
/// The signals are taken by one thread waiting in `sigwait(2)`, not by a handler, so deciding what a
/// signal means runs as ordinary code. That needs them blocked in every thread, which each thread
/// inherits from the one that started it: hence the call before any other thread exists. A read waits
/// in `poll(2)` beside a wake-up pipe. A write to a pipe can block inside `write(2)` itself (a large
/// write waits for all its room), so once a stop is requested, the threads in such a write are sent
/// `SIGURG` every 100 ms (as Go's runtime does to preempt; its default action is to ignore it, and
/// its handler here does nothing) until they leave it: the write returns early and sees the request.
public enum Interruption {
    /// The signals that ask the process to stop.
    private static let stopSignals = [SIGINT, SIGTERM, SIGHUP]

    private struct State {
        var installed = false
        /// How many ``whileCancellable(_:)`` scopes are open.
        var cancellableDepth = 0
        /// The first signal received inside a scope.
        var requested: Int32?
        /// A pipe written once when a stop is requested and never read, so it stays readable: every
        /// `poll` that includes its read end wakes.
        var wakeRead: Int32 = -1
        var wakeWrite: Int32 = -1
        /// Threads inside a write that may block (to a pipe nobody reads), by a token each.
        var blockedWriters: [Int: pthread_t] = [:]
        var nextWriter = 0
        /// What must run before a signal ends the process, by a token each.
        var lastActions: [Int: @Sendable () -> Void] = [:]
        var nextLastAction = 0
    }

    private static let state = Locked(State())

    /// Takes the stop signals from their default action and starts the thread that waits for them.
    /// Calling it again does nothing.
    ///
    /// - Throws: ``CofferError`` `.internalError` if the signal mask, the wake pipe or the thread
    ///   cannot be set up.
    public static func install() throws(CofferError) {
        if state.withLock({ $0.installed }) { return }
        var descriptors: [Int32] = [-1, -1]
        if case .failure(let error) = valueOrErrno({ pipe(&descriptors) }) {
            throw CofferError(.internalError, "pipe for the interruption wake-up failed (\(error))")
        }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var signals = signalSet()
        // pthread_sigmask returns its error rather than setting errno.
        let blocked = pthread_sigmask(SIG_BLOCK, &signals, nil)
        guard blocked == 0 else {
            throw CofferError(.internalError, "pthread_sigmask(SIG_BLOCK) failed (\(Errno(code: blocked)))")
        }
        // A handler that does nothing, without SA_RESTART: a write it lands in returns early.
        var kick = sigaction()
        kick.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&kick.sa_mask)
        kick.sa_flags = 0
        if case .failure(let error) = valueOrErrno({ sigaction(SIGURG, &kick, nil) }) {
            throw CofferError(.internalError, "sigaction(SIGURG) failed (\(error))")
        }
        // The mask is inherited across exec: a parent's thread may have blocked SIGURG (a Dispatch
        // worker blocks nearly every signal, and a Foundation Process started from one passes it on).
        var kickOnly = sigset_t()
        sigemptyset(&kickOnly)
        sigaddset(&kickOnly, SIGURG)
        let unblocked = pthread_sigmask(SIG_UNBLOCK, &kickOnly, nil)
        guard unblocked == 0 else {
            throw CofferError(.internalError, "pthread_sigmask(SIG_UNBLOCK) failed (\(Errno(code: unblocked)))")
        }
        state.withLock { state in
            state.installed = true
            state.wakeRead = descriptors[0]
            state.wakeWrite = descriptors[1]
        }
        let watcher = Thread { waitForSignals() }
        watcher.name = "coffer-interruption"
        watcher.start()
    }

    /// Runs `body` with the stop signals as requests that its I/O sees (see the type's overview).
    public static func whileCancellable<Result, Failure: Error>(
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        state.withLock { $0.cancellableDepth += 1 }
        defer { state.withLock { $0.cancellableDepth -= 1 } }
        return try body()
    }

    /// The signal that requested a stop, if one has.
    public static var requested: Int32? { state.withLock { $0.requested } }

    /// The name of ``requested`` (`SIGINT`), or `nil`.
    public static var requestedName: String? { requested.map(signalName) }

    /// Throws when a stop has been requested.
    ///
    /// - Throws: ``CofferError`` `.userCanceled`, naming the signal.
    public static func check() throws(CofferError) {
        if let signal = requested { throw canceled(signal) }
    }

    /// Requests a stop from code (a "Cancel" button), as Ctrl-C would inside a scope.
    public static func request() { request(SIGINT) }

    private static func request(_ signal: Int32) {
        let wake = state.withLock { state -> Int32 in
            if state.requested == nil { state.requested = signal }
            return state.wakeWrite
        }
        if wake >= 0 {
            var byte: UInt8 = 1
            _ = Glibc.write(wake, &byte, 1)
        }
    }

    /// Ends the process as the requested signal would have (its default action), or with status 1
    /// when none was requested.
    public static func terminate() -> Never {
        guard let signal = requested else { exit(1) }
        end(by: signal)
    }

    /// Waits until `descriptor` can be read (or written, with `forWriting`), or a stop is requested.
    /// Without ``install()`` it returns at once and the read or write that follows simply blocks.
    ///
    /// - Throws: ``CofferError`` `.userCanceled` when a stop is requested first.
    package static func wait(for descriptor: Int32, forWriting: Bool = false) throws(CofferError) {
        let (wake, watched) = state.withLock { ($0.wakeRead, $0.installed && $0.cancellableDepth > 0) }
        try check()
        guard watched else { return }
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(forWriting ? POLLOUT : POLLIN), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready >= 0 { break }
            // EINTR: poll again. Anything else: let the read or write itself report it.
            if errno != EINTR { return }
        }
        try check()
    }

    /// The descriptor that becomes readable when a stop is requested, for a caller that waits in its
    /// own `poll(2)` on several descriptors; `nil` outside ``whileCancellable(_:)`` or without
    /// ``install()``, where a signal ends the process and nothing needs to wake.
    package static var wakeDescriptor: Int32? {
        state.withLock { $0.installed && $0.cancellableDepth > 0 ? $0.wakeRead : nil }
    }

    /// Runs `body`; if a signal ends the process meanwhile (a second Ctrl-C, which does not wait for
    /// cleanup), `lastAction` runs first, on the thread that took the signal. For what must not
    /// outlive the process however it ends, such as a mount (a dead FUSE mount point stays
    /// "not connected" until someone unmounts it).
    package static func withLastAction<Result, Failure: Error>(
        _ lastAction: @escaping @Sendable () -> Void,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let token = state.withLock { state -> Int in
            state.nextLastAction += 1
            state.lastActions[state.nextLastAction] = lastAction
            return state.nextLastAction
        }
        defer { state.withLock { _ = $0.lastActions.removeValue(forKey: token) } }
        return try body()
    }

    /// Runs `write`, a call that may block, so that a stop request interrupts it (it then returns
    /// early, with `EINTR` or a short count).
    package static func interruptibleWrite<Result>(_ write: () -> Result) -> Result {
        let token = state.withLock { state -> Int? in
            guard state.installed, state.cancellableDepth > 0 else { return nil }
            state.nextWriter += 1
            state.blockedWriters[state.nextWriter] = pthread_self()
            return state.nextWriter
        }
        defer {
            if let token { state.withLock { _ = $0.blockedWriters.removeValue(forKey: token) } }
        }
        return write()
    }

    // MARK: The watcher

    private static func waitForSignals() {
        var signals = signalSet()
        while true {
            var signal: Int32 = 0
            if requested == nil {
                guard sigwait(&signals, &signal) == 0 else { continue }
            } else {
                // A stop is under way: a second signal ends the process, and meanwhile blocked writers
                // are kicked until they leave their write (one kick can land just before it starts).
                var interval = timespec(tv_sec: 0, tv_nsec: 100_000_000)
                signal = sigtimedwait(&signals, nil, &interval)
                if signal <= 0 {
                    let writers = state.withLock { Array($0.blockedWriters.values) }
                    for writer in writers { pthread_kill(writer, SIGURG) }
                    continue
                }
            }
            let stopNow = state.withLock { state -> Bool in
                if state.cancellableDepth == 0 || state.requested != nil { return true }
                state.requested = signal
                return false
            }
            if stopNow { end(by: signal) }
            request(signal)
        }
    }

    /// Runs the last actions, gives `signal` its default action, unblocks it in this thread and
    /// raises it here.
    private static func end(by signal: Int32) -> Never {
        let lastActions = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.lastActions = [:] }
            return Array(state.lastActions.values)
        }
        for action in lastActions { action() }
        Glibc.signal(signal, SIG_DFL)
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, signal)
        pthread_sigmask(SIG_UNBLOCK, &only, nil)
        raise(signal)
        // Only reached if the signal's default action is not to end the process.
        exit(128 + signal)
    }

    private static func signalSet() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in stopSignals { sigaddset(&signals, signal) }
        return signals
    }

    private static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }

    private static func canceled(_ signal: Int32) -> CofferError {
        CofferError(
            .userCanceled,
            signal == SIGINT ? "interrupted (Ctrl-C)" : "stopped by \(signalName(signal))"
        )
    }
}
