import Foundation

/// A line of output as a document shows it, read as a pattern for what the command really prints in
/// a throwaway sandbox: what the sandbox cannot reproduce matches anything of its kind (ids, counts and
/// sizes, dates, a word's singular or plural after a count), `…` matches anything, and everything
/// else must be there as written. A shown line may be part of an output line (a long line wrapped for
/// the page is two shown lines).
///
/// Short ids the document shows (`3f9c2a71`) are captured, so a later command that names one can be
/// given the id the sandbox printed in its place.
struct ShownOutputPattern {
    /// The shown line.
    let shown: String
    /// The regular expression it becomes.
    let expression: NSRegularExpression
    /// The shown ids, in the order of the expression's capture groups.
    let ids: [String]

    init(_ shown: String) throws {
        self.shown = shown
        var pattern = ""
        var ids: [String] = []
        var rest = Substring(shown.trimmingCharacters(in: .whitespaces))
        var afterCount = false
        while !rest.isEmpty {
            if let match = rest.prefixMatch(of: /…|\.\.\./) {
                pattern += ".*"
                rest = rest[match.range.upperBound...]
                afterCount = false
            } else if let match = rest.prefixMatch(of: /[0-9a-f]{8}(?![0-9a-zA-Z])/),
                !match.output.allSatisfy(\.isNumber)
            {
                pattern += "([0-9a-f]{8})"
                ids.append(String(match.output))
                rest = rest[match.range.upperBound...]
                afterCount = false
            } else if let match = rest.prefixMatch(of: /[0-9A-Fa-f]{4,}(?:-[0-9A-Fa-f]+)*/),
                match.output.contains(where: \.isLetter), match.output.contains(where: \.isNumber)
            {
                pattern += "[0-9A-Fa-f-]+"
                rest = rest[match.range.upperBound...]
                afterCount = false
            } else if let match = rest.prefixMatch(of: /[0-9]+(?:[.,:][0-9]+)*/) {
                pattern += "[0-9]+(?:[.,:][0-9]+)*"
                rest = rest[match.range.upperBound...]
                afterCount = true
            } else if let match = rest.prefixMatch(of: /\s+/) {
                pattern += "\\s+"
                rest = rest[match.range.upperBound...]
            } else if afterCount, let match = rest.prefixMatch(of: /(?:B|KiB|MiB|GiB|TiB)(?![A-Za-z])/) {
                pattern += "(?:B|KiB|MiB|GiB|TiB)"
                rest = rest[match.range.upperBound...]
                afterCount = false
            } else if afterCount, let match = rest.prefixMatch(of: /[a-z]+/) {
                pattern += Self.eitherNumber(String(match.output))
                rest = rest[match.range.upperBound...]
                afterCount = false
            } else {
                pattern += NSRegularExpression.escapedPattern(for: String(rest.first!))
                rest = rest.dropFirst()
                if !(rest.first?.isWhitespace ?? true) { afterCount = false }
            }
        }
        self.ids = ids
        expression = try NSRegularExpression(pattern: pattern)
    }

    /// A word after a count, in its singular or its plural: `files?`, `director(?:y|ies)`.
    static func eitherNumber(_ word: String) -> String {
        if word.hasSuffix("ies") { return "\(word.dropLast(3))(?:y|ies)" }
        if word.hasSuffix("y") { return "\(word.dropLast())(?:y|ies)" }
        if word.hasSuffix("s") { return "\(word.dropLast())s?" }
        return "\(word)s?"
    }

    /// The ids the shown line names, each with the one `line` has in its place, if the pattern
    /// matches part of `line`; `nil` if it does not.
    func match(_ line: String) -> [String: String]? {
        let range = NSRange(line.startIndex..., in: line)
        guard let result = expression.firstMatch(in: line, range: range) else { return nil }
        var bound: [String: String] = [:]
        for (index, id) in ids.enumerated() {
            if let captured = Range(result.range(at: index + 1), in: line) { bound[id] = String(line[captured]) }
        }
        return bound
    }
}
