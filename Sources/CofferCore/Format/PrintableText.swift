/// Bytes made safe to print on a terminal or in a line-oriented listing: a file name may hold bytes
/// that are not UTF-8, a newline (which would forge a line of output) or an escape sequence (which a
/// terminal would obey).
///
/// Valid UTF-8 text passes through, except that control characters (C0, DEL, C1) and invalid bytes
/// are written `\xHH`, and a backslash as `\\`, so different byte strings never print alike.
package enum PrintableText {
    /// `bytes` as printable text.
    package static func escaping(_ bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var output = ""
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let length = validSequenceLength(bytes, at: index)
            guard length > 0 else {
                output += hex(bytes[index])
                index += 1
                continue
            }
            let scalarBytes = bytes[index..<(index + length)]
            let scalar = String(decoding: scalarBytes, as: UTF8.self).unicodeScalars.first!
            switch scalar.value {
            case 0x5C: output += "\\\\"
            case 0..<0x20, 0x7F, 0x80..<0xA0: output += scalarBytes.map(hex).joined()
            default: output.unicodeScalars.append(scalar)
            }
            index += length
        }
        return output
    }

    /// `text` as printable text (its control characters and backslashes escaped).
    package static func escaping(_ text: String) -> String { escaping(Array(text.utf8)) }

    /// The bytes printable `text` stands for: `\xHH` is the byte HH and `\\` a backslash, so a path
    /// shown escaped (`r\xe9sum\xe9.doc`) can be typed back; `nil` for a backslash that starts
    /// neither.
    package static func unescaping(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "\\") else {
                output.append(bytes[index])
                index += 1
                continue
            }
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\\") {
                output.append(UInt8(ascii: "\\"))
                index += 2
                continue
            }
            guard index + 3 < bytes.count, bytes[index + 1] == UInt8(ascii: "x"),
                let byte = UInt8(String(decoding: bytes[(index + 2)...(index + 3)], as: UTF8.self), radix: 16)
            else { return nil }
            output.append(byte)
            index += 4
        }
        return output
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\\x\(digits[Int(byte >> 4)])\(digits[Int(byte & 0xF)])"
    }

    /// The length of the well-formed UTF-8 sequence starting at `index` (RFC 3629: no overlong forms,
    /// no surrogates, nothing past U+10FFFF), or 0 if the byte there starts none.
    private static func validSequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            upper = 0x9F
        case 0xF0:
            length = 4
            lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            upper = 0x8F
        default: return 0
        }
        guard index + length <= bytes.count else { return 0 }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            let (low, high) = offset == 1 ? (lower, upper) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= low, byte <= high else { return 0 }
        }
        return length
    }
}
