import Synchronization

/// Who reads the library's messages in this process, so that a message telling people what to run
/// names it the way they run it (``InterfaceName``): an app's developer reads library calls, someone
/// at the command line reads `coffer` commands.
///
/// A process chooses once, at start, before it makes any vault call; the `coffer` tool chooses
/// ``commandLine``. Everything else, apps and tests among them, reads ``application``.
package enum MessageAudience: UInt8, Sendable {
    /// Library calls: what an app's developer can run or offer.
    case application
    /// `coffer` commands: what the command-line tool's user types.
    case commandLine

    private static let chosen = Atomic<UInt8>(MessageAudience.application.rawValue)

    /// The audience this process's messages are written for.
    package static var current: MessageAudience {
        MessageAudience(rawValue: chosen.load(ordering: .relaxed)) ?? .application
    }

    /// Makes `audience` the one this process's messages are written for from now on.
    package static func choose(_ audience: MessageAudience) {
        chosen.store(audience.rawValue, ordering: .relaxed)
    }
}
