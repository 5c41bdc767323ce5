/// A glob in the syntax of Go's `path/filepath.Match`, which restic's patterns use, matched against
/// bytes (a name need not be UTF-8):
///
/// - `*` matches any run of bytes without a `/`; `?` one character (a UTF-8 sequence, or one byte
///   that is not part of one), never a `/`.
/// - `[abc]`, `[a-z]` match one character in the set; `[^a-z]` one not in it. `!` has no special
///   meaning in a class: `[!a]` matches `!` or `a` (fnmatch(3) would read it as "not `a`").
/// - `\c` matches `c` itself (`\*`, `\[`, `\\`). Beyond Go: `\xHH` (two hex digits) is the byte HH,
///   the form Coffer prints bytes that are not UTF-8 in, so a name shown as `r\xe9sum\xe9.doc` can be
///   typed back as a pattern.
///
/// Like Go's, the match is leftmost-first per `*`-separated chunk, which a glob needs no
/// backtracking beyond.
///
/// ```swift
/// let glob = try GoGlob(Array("*.t[^x]t".utf8))
/// glob.matches(Array("a.tmt".utf8))   // true
/// ```
package struct GoGlob: Sendable, Equatable {
    /// One element of a chunk.
    enum Token: Sendable, Equatable {
        /// This byte.
        case byte(UInt8)
        /// `?`: any one character but `/`.
        case anyCharacter
        /// `[…]`: one character in (or, `negated`, not in) the ranges of code points.
        case set(negated: Bool, ranges: [ClosedRange<UInt32>])
    }

    /// A run of tokens, and whether a `*` came before it.
    struct Chunk: Sendable, Equatable {
        let afterStar: Bool
        let tokens: [Token]
    }

    let chunks: [Chunk]

    /// Why a pattern is not a glob, as said to the user.
    package struct BadPattern: Error, Sendable, Equatable {
        /// What is wrong, e.g. "a '[' without its ']'".
        package let reason: String
    }

    /// Parses `pattern`.
    ///
    /// - Parameter lowercasingEscapes: Lowercase ASCII letters given as `\xHH` (for a pattern matched
    ///   ignoring case, whose other letters are lowercased already).
    /// - Throws: ``BadPattern`` for a `\` at the end, an unclosed or empty `[…]`, a range without an
    ///   end, or a byte in a class that is not UTF-8 (where Go's `filepath.Match` says
    ///   `ErrBadPattern`).
    package init(_ pattern: [UInt8], lowercasingEscapes: Bool = false) throws(BadPattern) {
        var parser = Parser(bytes: pattern, lowercasingEscapes: lowercasingEscapes)
        chunks = try parser.chunks()
    }

    /// Whether the glob matches all of `name`.
    package func matches(_ name: [UInt8]) -> Bool {
        name.withUnsafeBufferPointer { matches($0) }
    }

    /// Whether the glob matches all of `name`.
    package func matches(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        var position = 0
        for (index, chunk) in chunks.enumerated() {
            let isLast = index == chunks.count - 1
            if chunk.afterStar && chunk.tokens.isEmpty {
                // A trailing `*` takes the rest, unless it holds a `/`.
                return !name[position...].contains(UInt8(ascii: "/"))
            }
            // The first place the chunk matches (the last chunk must end the name): here, or after
            // a `*` any later place that skips no `/`.
            var start = position
            var found: Int?
            while true {
                if let end = Self.match(chunk.tokens, name, from: start), !isLast || end == name.count {
                    found = end
                    break
                }
                guard chunk.afterStar, start < name.count, name[start] != UInt8(ascii: "/") else { break }
                start += 1
            }
            guard let found else { return false }
            position = found
        }
        return position == name.count
    }

    /// Where `tokens` matched at `start` end, or `nil` if they do not match there.
    private static func match(_ tokens: [Token], _ name: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var position = start
        for token in tokens {
            guard position < name.count else { return nil }
            switch token {
            case .byte(let byte):
                guard name[position] == byte else { return nil }
                position += 1
            case .anyCharacter:
                guard name[position] != UInt8(ascii: "/") else { return nil }
                position += UTF8Decoding.character(in: name, at: position).length
            case .set(let negated, let ranges):
                let character = UTF8Decoding.character(in: name, at: position)
                position += character.length
                guard ranges.contains(where: { $0.contains(character.value) }) != negated else { return nil }
            }
        }
        return position
    }
}

extension GoGlob {
    /// Reads a pattern's bytes into chunks, as Go's `scanChunk` and `matchChunk` read them.
    private struct Parser {
        let bytes: [UInt8]
        let lowercasingEscapes: Bool
        var index = 0

        init(bytes: [UInt8], lowercasingEscapes: Bool) {
            self.bytes = bytes
            self.lowercasingEscapes = lowercasingEscapes
        }

        mutating func chunks() throws(BadPattern) -> [Chunk] {
            var chunks: [Chunk] = []
            while index < bytes.count {
                var star = false
                while index < bytes.count, bytes[index] == UInt8(ascii: "*") {
                    star = true
                    index += 1
                }
                var tokens: [Token] = []
                while index < bytes.count, bytes[index] != UInt8(ascii: "*") {
                    tokens.append(try token())
                }
                chunks.append(Chunk(afterStar: star, tokens: tokens))
            }
            return chunks
        }

        private mutating func token() throws(BadPattern) -> Token {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "?"): return .anyCharacter
            case UInt8(ascii: "["): return try set()
            case UInt8(ascii: "\\"): return .byte(try escaped())
            default: return .byte(byte)
            }
        }

        /// The byte after a `\` (at `index`), or the one `\xHH` stands for.
        private mutating func escaped() throws(BadPattern) -> UInt8 {
            guard index < bytes.count else {
                throw BadPattern(reason: "it ends in a '\\' that escapes nothing (write '\\\\' for a backslash)")
            }
            if bytes[index] == UInt8(ascii: "x"), index + 2 < bytes.count,
                let high = Self.hexValue(bytes[index + 1]), let low = Self.hexValue(bytes[index + 2])
            {
                index += 3
                let value = high << 4 | low
                if lowercasingEscapes, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(value) { return value + 32 }
                return value
            }
            index += 1
            return bytes[index - 1]
        }

        /// A class, after its `[`: `^` to negate, then characters and ranges up to `]`.
        private mutating func set() throws(BadPattern) -> Token {
            var negated = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "^") {
                negated = true
                index += 1
            }
            var ranges: [ClosedRange<UInt32>] = []
            while true {
                if index < bytes.count, bytes[index] == UInt8(ascii: "]"), !ranges.isEmpty {
                    index += 1
                    return .set(negated: negated, ranges: ranges)
                }
                let low = try setCharacter()
                var high = low
                if bytes[index] == UInt8(ascii: "-") {
                    index += 1
                    high = try setCharacter()
                }
                // Go's empty range (`z-a`) matches nothing, and is no error.
                ranges.append(low <= high ? low...high : Self.emptyRange)
            }
        }

        /// A range that contains no code point.
        static let emptyRange: ClosedRange<UInt32> = UInt32.max...UInt32.max

        /// One character of a class (Go's `getEsc`): never `-` or `]` unescaped, always followed by
        /// more of the pattern.
        private mutating func setCharacter() throws(BadPattern) -> UInt32 {
            guard index < bytes.count else { throw BadPattern(reason: "a '[' has no closing ']'") }
            guard bytes[index] != UInt8(ascii: "-"), bytes[index] != UInt8(ascii: "]") else {
                throw BadPattern(
                    reason:
                        "a class '[…]' is empty or has a range without a start or end (escape a literal '-' or ']' as '\\-', '\\]')"
                )
            }
            let value: UInt32
            if bytes[index] == UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { throw BadPattern(reason: "a '[' has no closing ']'") }
                let start = index
                let byte = try escaped()
                if index - start == 3 {
                    guard byte < 0x80 else {
                        throw BadPattern(
                            reason:
                                "a class '[…]' cannot hold the byte \\x\(String(byte, radix: 16)), which is not UTF-8 on its own"
                        )
                    }
                    value = UInt32(byte)
                } else {
                    index = start
                    value = try character()
                }
            } else {
                value = try character()
            }
            guard index < bytes.count else { throw BadPattern(reason: "a '[' has no closing ']'") }
            return value
        }

        /// The UTF-8 character at `index`, consumed.
        private mutating func character() throws(BadPattern) -> UInt32 {
            let decoded = bytes.withUnsafeBufferPointer { UTF8Decoding.character(in: $0, at: index) }
            guard decoded.isValid else {
                throw BadPattern(
                    reason: "a class '[…]' holds a byte that is not UTF-8 (\\x\(String(bytes[index], radix: 16)))"
                )
            }
            index += decoded.length
            return decoded.value
        }

        static func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
    }
}
