/// One list of patterns, as restic keeps each option's list (`--exclude` apart from `--iexclude`,
/// `--include` apart from `--iinclude`): in order, and the last pattern that matches a path decides
/// whether the list matches it. A `!` pattern that matches un-matches what an earlier one matched;
/// one that comes before every pattern matching the path changes nothing.
///
/// ```swift
/// let list = try PatternList(["cache", "!cache/keep"])
/// list.matches(["/", "home", "cache", "tmp"])    // true
/// list.matches(["/", "home", "cache", "keep"])   // false
/// ```
struct PatternList: Sendable {
    let patterns: [PathPattern]
    let ignoresCase: Bool

    /// Whether a `!` pattern is in the list.
    let hasNegated: Bool

    /// Parses `texts`.
    ///
    /// - Parameters:
    ///   - option: The option the patterns came from, for messages (`--exclude`, `excluding:`).
    ///   - ignoringCase: Match paths ignoring case (both are lowercased).
    /// - Throws: ``CofferError`` `.param` for an empty pattern, one that is only `!`, or a glob that
    ///   cannot be parsed, naming it and why.
    init(_ texts: [String], option: InterfaceName = .excludeOption, ignoringCase: Bool = false) throws(CofferError) {
        var patterns: [PathPattern] = []
        for text in texts {
            guard !text.isEmpty, text != "!" else {
                throw CofferError(
                    .param,
                    "the \(option) pattern '\(text)' matches nothing (it is empty); give a name, a glob like '*.log', or a path like '/home/*/cache'"
                )
            }
            do {
                patterns.append(try PathPattern(text, ignoringCase: ignoringCase))
            } catch {
                throw CofferError(
                    .param,
                    "the \(option) pattern '\(PrintableText.escaping(text))' is not a valid glob: \(error.reason)"
                )
            }
        }
        self.patterns = patterns
        ignoresCase = ignoringCase
        hasNegated = patterns.contains(where: \.negated)
    }

    var isEmpty: Bool { patterns.isEmpty }

    /// Whether the list matches `path` (components, ``PathPattern/rootMarker`` first).
    func matches(_ path: [[UInt8]]) -> Bool {
        let path = folded(path)
        var matched = false
        for pattern in patterns where pattern.negated == matched && pattern.matches(path) {
            matched.toggle()
        }
        return matched
    }

    /// Whether something under the directory `path` may be matched by the list (restic's
    /// `childMayMatch`): a pattern that may match below, not undone by a later `!` pattern that
    /// matches the directory.
    func mayMatchBelow(_ path: [[UInt8]]) -> Bool {
        let path = folded(path)
        var may = false
        for pattern in patterns {
            if pattern.negated {
                if may, pattern.matches(path) { may = false }
            } else if !may, pattern.mayMatchBelow(path) {
                may = true
            }
        }
        return may
    }

    /// Whether a `!` pattern of the list may match something under the directory `path` (which
    /// the list matches): then something under it may be kept.
    func mayUnmatchBelow(_ path: [[UInt8]]) -> Bool {
        guard hasNegated else { return false }
        let path = folded(path)
        return patterns.contains { $0.negated && $0.mayMatchBelow(path) }
    }

    private func folded(_ path: [[UInt8]]) -> [[UInt8]] {
        ignoresCase ? path.map(UTF8Decoding.lowercased) : path
    }
}
