import Foundation

/// Lines from standard input, for commands in a session and for passphrases (a real app would use
/// its own UI; a terminal app would turn echo off).
final class Input: @unchecked Sendable {
    private let lock = NSLock()

    /// The next line, without its newline, or `nil` at the end of input. Shows `prompt` on standard
    /// error first when there is one.
    func line(prompt: String? = nil) -> String? {
        lock.withLock {
            if let prompt { FileHandle.standardError.write(Data(prompt.utf8)) }
            return readLine(strippingNewline: true)
        }
    }
}
