import Testing

@testable import Coffer

@Suite("PrintableText: names made safe to print, different names never alike")
struct PrintableTextTests {
    static let knownAnswers: [([UInt8], String)] = [
        (Array("plain/name.txt".utf8), "plain/name.txt"),
        (Array("café ünïcode 写真".utf8), "café ünïcode 写真"),
        (Array("r".utf8) + [0xE9] + Array("sum".utf8) + [0xE9], "r\\xe9sum\\xe9"),
        (Array("a\nb\tc".utf8), "a\\x0ab\\x09c"),
        ([0x1B] + Array("[31mred".utf8), "\\x1b[31mred"),
        (Array("back\\slash".utf8), "back\\\\slash"),
        ([0xC2, 0x85], "\\xc2\\x85"),  // U+0085, a C1 control
        ([0x7F], "\\x7f"),
        ([0xC0, 0x80], "\\xc0\\x80"),  // overlong NUL
        ([0xED, 0xA0, 0x80], "\\xed\\xa0\\x80"),  // a surrogate
        ([0xF4, 0x90, 0x80, 0x80], "\\xf4\\x90\\x80\\x80"),  // past U+10FFFF
        ([0xE2, 0x82], "\\xe2\\x82"),  // truncated
    ]

    @Test("known answers")
    func knownAnswers() {
        for (bytes, printed) in Self.knownAnswers {
            #expect(PrintableText.escaping(bytes) == printed, "\(bytes)")
        }
    }

    @Test("the output has no control character, and different byte strings print differently")
    func injective() {
        var generator = SystemRandomNumberGenerator()
        var seen: [String: [UInt8]] = [:]
        // The interesting bytes: controls, backslash, x, hex digits, UTF-8 lead and continuation bytes.
        let alphabet: [UInt8] = [0x00, 0x0A, 0x1B, 0x5C, 0x78, 0x61, 0x30, 0xC3, 0xA9, 0xE9, 0x80, 0xFF]
        for _ in 0..<5_000 {
            let count = Int.random(in: 0...6, using: &generator)
            let bytes: [UInt8] = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            let printed = PrintableText.escaping(bytes)
            #expect(!printed.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) })
            if let other = seen[printed] { #expect(other == bytes, "\(other) and \(bytes) both print as \(printed)") }
            seen[printed] = bytes
        }
    }
}
