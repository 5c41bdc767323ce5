public import Foundation

/// A vault passphrase, held in memory that is wiped when the last copy goes.
///
/// Text is normalized to Unicode NFC first, so the same passphrase typed on systems that compose
/// accents differently (macOS file names are decomposed, Linux input is usually composed) unlocks the
/// same vault.
///
/// ```swift
/// let vault = try Vault.create(at: url, passphrase: "correct horse battery staple")
/// ```
public struct Passphrase: Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    let bytes: SecureBytes

    /// A passphrase from text.
    public init(_ text: String) {
        var utf8 = Array(text.precomposedStringWithCanonicalMapping.utf8)
        defer { utf8.wipe() }
        bytes = SecureBytes(copying: utf8)
    }

    /// A passphrase from a string literal.
    public init(stringLiteral text: String) {
        self.init(text)
    }

    /// A passphrase from UTF-8 bytes (for example, read from a file). A single trailing newline is
    /// not part of the passphrase and is dropped, as `echo secret > file` adds one.
    public init(utf8 bytes: some ContiguousBytes) {
        var copy = bytes.withUnsafeBytes { Array($0) }
        if copy.last == UInt8(ascii: "\n") { copy.removeLast() }
        if copy.last == UInt8(ascii: "\r") { copy.removeLast() }
        let text = String(decoding: copy, as: UTF8.self)
        copy.wipe()
        self.init(text)
    }

    /// Whether the passphrase is empty (which Coffer refuses).
    public var isEmpty: Bool { bytes.count == 0 }

    /// A description that never shows the passphrase.
    public var description: String { "Passphrase(\(bytes.count) bytes)" }
}
