/// Patterns from bytes (a line of an exclude file, a raw command-line argument) as the text the
/// matcher takes, where a byte that is not UTF-8 is written `\xHH`, so every byte reaches it.
///
/// ```swift
/// PatternText.from([0x64, 0xFF])                       // "d\\xff"
/// PatternText.lines(of: Array("# c\n*.tmp\r\n  a \n".utf8))   // ["*.tmp", "a"]
/// ```
package enum PatternText {
    /// `bytes` as pattern text: UTF-8 as it is, each other byte as `\xHH` (after an unpaired `\`,
    /// which escaped it, the `\` is dropped: `\xHH` is that byte, escaped already).
    package static func from(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var result: [UInt8] = []
        var backslashes = 0
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                let character = UTF8Decoding.character(in: buffer, at: index)
                if character.isValid {
                    result += buffer[index..<(index + character.length)]
                    backslashes = buffer[index] == UInt8(ascii: "\\") ? backslashes + 1 : 0
                } else {
                    if backslashes % 2 == 1 { result.removeLast() }
                    result += Array("\\x".utf8) + Array(hex(buffer[index]).utf8)
                    backslashes = 0
                }
                index += character.length
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// The patterns of an exclude file, as restic reads one: a pattern a line (`\n` or `\r\n`),
    /// spaces around it trimmed, blank lines and lines starting with `#` skipped.
    package static func lines(of file: [UInt8]) -> [String] {
        file.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).compactMap { line in
            let isSpace: (UInt8) -> Bool = { [0x20, 0x09, 0x0B, 0x0C, 0x0D].contains($0) }
            guard let first = line.firstIndex(where: { !isSpace($0) }),
                let last = line.lastIndex(where: { !isSpace($0) })
            else { return nil }
            let pattern = Array(line[first...last])
            return pattern.first == UInt8(ascii: "#") ? nil : from(pattern)
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }
}
