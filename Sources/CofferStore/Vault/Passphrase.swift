public import Foundation

/// A vault passphrase, held in memory that is wiped when the last copy goes.
///
/// Text is normalized to Unicode NFC first, so the same passphrase typed on systems that compose
/// accents differently (macOS file names are decomposed, Linux input is usually composed) unlocks the
/// same vault. Bytes that are not UTF-8 (a random key file) are used exactly as they are.
///
/// ```swift
/// let vault = try Vault.create(at: url, passphrase: "correct horse battery staple")
/// ```
public struct Passphrase: Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    package let bytes: SecureBytes

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

    /// A passphrase from bytes (for example, read from a file). A single trailing newline is not
    /// part of the passphrase and is dropped, as `echo secret > file` adds one. UTF-8 text is
    /// normalized like ``init(_:)``; anything else (a binary key file) is used byte for byte, so two
    /// different key files never open the same vault.
    public init(utf8 bytes: some ContiguousBytes) {
        var copy = Self.trimmingNewline(bytes)
        defer { copy.wipe() }
        if var text = String(validating: copy, as: UTF8.self) {
            self.init(text)
            text = ""
        } else {
            self.init(exactly: SecureBytes(copying: copy))
        }
    }

    private init(exactly bytes: SecureBytes) {
        self.bytes = bytes
    }

    /// The passphrase earlier Coffer releases made of bytes that are not UTF-8:
    /// each invalid sequence replaced by U+FFFD, so unrelated key files gave the same passphrase.
    /// Only for opening a vault whose passphrase was set that way; `nil` for UTF-8 input, which
    /// always read the same.
    public static func legacyLossy(_ bytes: some ContiguousBytes) -> Passphrase? {
        var copy = trimmingNewline(bytes)
        defer { copy.wipe() }
        guard String(validating: copy, as: UTF8.self) == nil else { return nil }
        return Passphrase(String(decoding: copy, as: UTF8.self))
    }

    private static func trimmingNewline(_ bytes: some ContiguousBytes) -> [UInt8] {
        var copy = bytes.withUnsafeBytes { Array($0) }
        if copy.last == UInt8(ascii: "\n") { copy.removeLast() }
        if copy.last == UInt8(ascii: "\r") { copy.removeLast() }
        return copy
    }

    /// Whether the passphrase is empty (which Coffer refuses).
    public var isEmpty: Bool { bytes.count == 0 }

    /// A description that never shows the passphrase.
    public var description: String { "Passphrase(\(bytes.count) bytes)" }
}
