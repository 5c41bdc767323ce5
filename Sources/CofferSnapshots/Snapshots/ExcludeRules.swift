internal import Foundation

/// Which paths a backup leaves out, by restic's pattern rules (`backup --exclude`, `--iexclude`,
/// `--exclude-file`), matched against each path's absolute form, as bytes:
///
/// - A pattern is split at `/` into parts, each matched against one path component with
///   `fnmatch(3)` globbing (`*`, `?`, `[a-z]`; `*` never crosses a `/`).
/// - `**` as a whole part matches any number of components, none included.
/// - A pattern starting with `/` is matched from the root; any other may match starting at any
///   component (`*.log` and `cache/tmp` match wherever they occur).
/// - A pattern that matches a directory leaves out everything under it.
/// - A pattern starting with `!` puts back what an earlier pattern left out; the last pattern that
///   matches a path decides. A directory left out is still walked when a `!` pattern could match
///   something under it, so `--exclude '/home/*' --exclude '!/home/ann'` keeps `/home/ann`.
///
/// ```swift
/// let rules = try ExcludeRules(patterns: ["*.tmp", "node_modules", "!keep.tmp"])
/// rules.decision(for: path, isDirectory: false, parentExcluded: false)   // .excluded, .included
/// ```
package struct ExcludeRules: Sendable {
    /// One pattern, parsed.
    struct Pattern: Sendable {
        let text: String
        let negated: Bool
        let anchored: Bool
        let parts: [[CChar]]
        let ignoresCase: Bool

        static let anyDepth: [CChar] = Array("**".utf8CString)
    }

    /// What to do with one path.
    package enum Decision: Sendable, Equatable {
        /// Back it up (and walk into it, for a directory).
        case included
        /// Leave it out, and everything under it.
        case excluded
        /// Leave it out, but walk into it: a `!` pattern may put back something under it, and the
        /// directory itself is kept for that (as restic does).
        case excludedWalkingInto
    }

    let patterns: [Pattern]

    /// No pattern: nothing is left out.
    package static let none = ExcludeRules(parsed: [])

    private init(parsed: [Pattern]) { patterns = parsed }

    /// Whether no pattern was given (nothing is left out).
    package var isEmpty: Bool { patterns.isEmpty }

    /// Parses `patterns` (matched exactly) and `caseInsensitive` ones (`--iexclude`), in the order
    /// given, the case-sensitive ones first.
    ///
    /// - Throws: ``CofferError`` `.param` for an empty pattern or one that is only `!`.
    package init(patterns: [String], caseInsensitive: [String] = []) throws(CofferError) {
        var parsed: [Pattern] = []
        for (text, ignoresCase) in patterns.map({ ($0, false) }) + caseInsensitive.map({ ($0, true) }) {
            var body = Substring(text)
            let negated = body.hasPrefix("!")
            if negated { body = body.dropFirst() }
            let anchored = body.hasPrefix("/")
            let parts = body.split(separator: "/", omittingEmptySubsequences: true).map {
                Array(String($0).utf8CString)
            }
            guard !parts.isEmpty else {
                throw CofferError(
                    .param,
                    "the exclude pattern '\(text)' matches nothing; give a name, a glob like '*.log', or a path like '/home/*/cache'"
                )
            }
            parsed.append(
                Pattern(text: text, negated: negated, anchored: anchored, parts: parts, ignoresCase: ignoresCase)
            )
        }
        self.init(parsed: parsed)
    }

    /// Reads patterns from an exclude file's text: one a line, blank lines and lines starting with `#`
    /// skipped, surrounding spaces trimmed.
    package static func lines(of text: String) -> [String] {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The decision for the path whose absolute components are `components`.
    ///
    /// - Parameters:
    ///   - isDirectory: Whether the path is a directory (only a directory may be walked into).
    ///   - parentExcluded: Whether the directory it is in was left out (and walked into).
    package func decision(for components: [[UInt8]], isDirectory: Bool, parentExcluded: Bool) -> Decision {
        guard !patterns.isEmpty else { return .included }
        let path = components.map { $0.map { CChar(bitPattern: $0) } + [0] }
        var excluded = parentExcluded
        for pattern in patterns where Self.matches(pattern, path) { excluded = !pattern.negated }
        guard excluded else { return .included }
        if isDirectory, patterns.contains(where: { $0.negated && Self.mayMatchBelow($0, path) }) {
            return .excludedWalkingInto
        }
        return .excluded
    }

    // MARK: Matching

    /// Whether `pattern` matches the whole of `path` (from the root if anchored, else from any
    /// component on).
    static func matches(_ pattern: Pattern, _ path: [[CChar]]) -> Bool {
        if pattern.anchored { return match(pattern, 0, path, 0) }
        return path.indices.contains { match(pattern, 0, path, $0) }
    }

    /// Whether `pattern.parts[part...]` matches exactly `path[component...]`.
    private static func match(_ pattern: Pattern, _ part: Int, _ path: [[CChar]], _ component: Int) -> Bool {
        if part == pattern.parts.count { return component == path.count }
        if pattern.parts[part] == Pattern.anyDepth {
            return (component...path.count).contains { match(pattern, part + 1, path, $0) }
        }
        guard component < path.count,
            EntryPath.glob(pattern.parts[part], path[component], ignoringCase: pattern.ignoresCase)
        else { return false }
        return match(pattern, part + 1, path, component + 1)
    }

    /// Whether `pattern` could match some path below the directory `path`.
    static func mayMatchBelow(_ pattern: Pattern, _ path: [[CChar]]) -> Bool {
        // Unanchored patterns may start in any component below.
        guard pattern.anchored else { return true }
        return prefixMatch(pattern, 0, path, 0)
    }

    /// Whether `path[component...]` is matched by a start of `pattern.parts[part...]` that leaves
    /// something of the pattern over (so a longer path could match).
    private static func prefixMatch(_ pattern: Pattern, _ part: Int, _ path: [[CChar]], _ component: Int) -> Bool {
        if component == path.count { return part < pattern.parts.count }
        guard part < pattern.parts.count else { return false }
        if pattern.parts[part] == Pattern.anyDepth { return true }
        guard EntryPath.glob(pattern.parts[part], path[component], ignoringCase: pattern.ignoresCase) else {
            return false
        }
        return prefixMatch(pattern, part + 1, path, component + 1)
    }
}
