import Foundation

/// Collects failures from worker threads, for one `#expect` at the end.
public final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []

    public init() {}

    /// Notes one failure.
    public func record(_ message: String) { lock.withLock { messages.append(message) } }

    /// Every failure noted so far.
    public var all: [String] { lock.withLock { messages } }
}
