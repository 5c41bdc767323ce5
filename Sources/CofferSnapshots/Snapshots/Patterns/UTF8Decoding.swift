/// Reads one character of UTF-8 from bytes that need not be UTF-8, as Go's `utf8.DecodeRune` does:
/// a well-formed sequence (no overlong form, no surrogate, nothing past U+10FFFF) is its code
/// point; any other byte is one character on its own, U+FFFD.
enum UTF8Decoding {
    /// A character read: its code point, how many bytes it took, and whether they were UTF-8.
    struct Character {
        let value: UInt32
        let length: Int
        let isValid: Bool
    }

    /// The character starting at `index` (which must be inside `bytes`).
    static func character(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Character {
        let lead = bytes[index]
        if lead < 0x80 { return Character(value: UInt32(lead), length: 1, isValid: true) }
        let length: Int
        let second: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return invalid
        }
        guard index + length <= bytes.count, second.contains(bytes[index + 1]) else { return invalid }
        var value = UInt32(lead) & (0xFF >> (length + 1))
        for offset in 1..<length {
            let byte = bytes[index + offset]
            guard (0x80...0xBF).contains(byte) else { return invalid }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        return Character(value: value, length: length, isValid: true)
    }

    static let invalid = Character(value: 0xFFFD, length: 1, isValid: false)

    /// `bytes` with each well-formed character lowercased (Unicode's mapping) and every other byte
    /// kept: how a pattern and a path are compared ignoring case.
    static func lowercased(_ bytes: [UInt8]) -> [UInt8] {
        // ASCII, the common case, without decoding.
        if bytes.allSatisfy({ $0 < 0x80 }) {
            return bytes.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 }
        }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                let character = Self.character(in: buffer, at: index)
                if character.isValid, let scalar = Unicode.Scalar(character.value) {
                    result += scalar.properties.lowercaseMapping.utf8
                } else {
                    result.append(buffer[index])
                }
                index += character.length
            }
        }
        return result
    }
}
