/// A 256-bit key that unlocks a vault instead of its passphrase, for when the passphrase is lost.
///
/// Its text form is 56 characters of Crockford base32 in groups of four, with a checksum, so a typo
/// is caught before it is tried:
/// `7Q2M-0XKD-…`. Reading accepts lower case, no dashes, and the letters I, L (as 1) and O (as 0).
///
/// ```swift
/// let key = try vault.recoveryKey()          // while unlocked; write key.text down somewhere safe
/// try vault.unlock(recoveryKey: RecoveryKey(text: written))
/// ```
public struct RecoveryKey: Sendable, CustomStringConvertible {
    package static let byteCount = 32
    private static let checksumByteCount = 3
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    package let bytes: SecureBytes

    package init(bytes: SecureBytes) {
        precondition(bytes.count == Self.byteCount)
        self.bytes = bytes
    }

    /// Parses the text form.
    ///
    /// - Throws: ``CofferError`` `.param` if the text has the wrong length, a character outside the
    ///   alphabet, or a checksum that does not match (a typo).
    public init(text: String) throws(CofferError) {
        var bits = [UInt8]()
        for character in text.uppercased().utf8 where character != UInt8(ascii: "-") && character != UInt8(ascii: " ") {
            let normalized: UInt8
            switch character {
            case UInt8(ascii: "I"), UInt8(ascii: "L"): normalized = UInt8(ascii: "1")
            case UInt8(ascii: "O"): normalized = UInt8(ascii: "0")
            default: normalized = character
            }
            guard let value = Self.alphabet.firstIndex(of: normalized) else {
                throw CofferError(
                    .param,
                    "the recovery key has a character that cannot be in one; check it against what was printed"
                )
            }
            bits.append(UInt8(value))
        }
        let total = Self.byteCount + Self.checksumByteCount
        guard bits.count * 5 == total * 8 else {
            throw CofferError(
                .param,
                "a recovery key has \(total * 8 / 5) characters (dashes aside), this one \(bits.count); check that it was copied whole"
            )
        }
        var decoded = [UInt8](repeating: 0, count: total)
        for (index, value) in bits.enumerated() {
            for bit in 0..<5 where value & (16 >> bit) != 0 {
                let position = index * 5 + bit
                decoded[position / 8] |= 0x80 >> UInt8(position % 8)
            }
        }
        defer { decoded.wipe() }
        var key = Array(decoded[..<Self.byteCount])
        defer { key.wipe() }
        guard Self.checksum(key) == Array(decoded[Self.byteCount...]) else {
            throw CofferError(
                .param,
                "the recovery key's checksum does not match: a character is wrong; check it against what was printed"
            )
        }
        bytes = SecureBytes(copying: key)
    }

    /// A new random recovery key.
    package static func generate() -> RecoveryKey { RecoveryKey(bytes: .random(count: byteCount)) }

    /// The text form, in groups of four characters. This is the secret: show it only to its owner.
    public var text: String {
        var data = bytes.withUnsafeBytes { Array($0) }
        data += Self.checksum(data)
        defer { data.wipe() }
        var characters = [UInt8]()
        for index in 0..<(data.count * 8 / 5) {
            var value = 0
            for bit in 0..<5 {
                let position = index * 5 + bit
                if data[position / 8] & (0x80 >> UInt8(position % 8)) != 0 { value |= 16 >> bit }
            }
            if index > 0, index % 4 == 0 { characters.append(UInt8(ascii: "-")) }
            characters.append(Self.alphabet[value])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// A description that never shows the key.
    public var description: String { "RecoveryKey(redacted)" }

    private static func checksum(_ key: [UInt8]) -> [UInt8] {
        // SHA-256 cannot fail for an in-memory buffer short of OpenSSL being unusable, which
        // SecureRandom already treats as fatal.
        let digest = (try? SHA256.hash(key)) ?? []
        return Array(digest.prefix(checksumByteCount))
    }
}
