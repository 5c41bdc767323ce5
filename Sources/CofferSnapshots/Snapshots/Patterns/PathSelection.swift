/// Which paths a backup or a restore takes, by restic's pattern rules, one matcher for both: paths
/// are matched as bytes in their absolute form (for a restore, as they were backed up).
///
/// - Each option's patterns form one ``PatternList``: `--exclude` (with `--exclude-file`'s lines),
///   `--iexclude`, `--include`, `--iinclude`. Within a list the last pattern that matches decides,
///   `!` patterns included; lists are kept apart, so a `!` in `--exclude` does not take back what
///   `--iexclude` matched.
/// - A path is left out when an exclude list matches it, and (given includes) when no include list
///   matches it. A pattern that matches a directory matches everything under it, so `--include docs`
///   takes all of `docs`.
/// - A directory left out is not walked, unless a `!` pattern of each list that matched it may match
///   something under it: then it is walked, and kept (as the directory above what is kept) only if
///   something under it is kept. So `--exclude cache --exclude '!cache/keep'` keeps `cache/keep` and
///   nothing else of `cache`. (restic does not walk an excluded directory: there it takes
///   `--exclude 'cache/*' --exclude '!cache/keep'`, which Coffer reads the same way.)
///
/// ```swift
/// let selection = try PathSelection(excluding: ["*.tmp", "cache", "!cache/keep"])
/// selection.decision(for: ["home", "ann", "cache"], isDirectory: true)   // .excludedWalkingInto
/// ```
package struct PathSelection: Sendable {
    /// What to do with one path.
    package enum Decision: Sendable, Equatable {
        /// Take it (and walk into it, for a directory).
        case included
        /// Leave it out, and everything under it.
        case excluded
        /// Leave it out, but walk into it: something under it may be taken, and the directory
        /// itself is kept for that.
        case excludedWalkingInto
    }

    let excludes: [PatternList]
    let includes: [PatternList]

    /// No pattern: everything is taken.
    package static let none = PathSelection(excludes: [], includes: [])

    private init(excludes: [PatternList], includes: [PatternList]) {
        self.excludes = excludes.filter { !$0.isEmpty }
        self.includes = includes.filter { !$0.isEmpty }
    }

    /// Parses each option's patterns, in the order given. A byte that is not UTF-8 is written `\xHH`.
    ///
    /// - Throws: ``CofferError`` `.param` for an empty pattern, one that is only `!`, or a glob that
    ///   cannot be parsed (an unclosed `[`), naming the option and the pattern.
    package init(
        excluding: [String],
        excludingIgnoringCase: [String] = [],
        including: [String] = [],
        includingIgnoringCase: [String] = []
    ) throws(CofferError) {
        self.init(
            excludes: [
                try PatternList(excluding, option: .excludeOption),
                try PatternList(excludingIgnoringCase, option: .excludeIgnoringCaseOption, ignoringCase: true),
            ],
            includes: [
                try PatternList(including, option: .includeOption),
                try PatternList(includingIgnoringCase, option: .includeIgnoringCaseOption, ignoringCase: true),
            ]
        )
    }

    /// Whether no pattern was given (everything is taken).
    package var isEmpty: Bool { excludes.isEmpty && includes.isEmpty }

    /// The decision for the path whose absolute components (without the root) are `components`.
    ///
    /// - Parameter isDirectory: Whether the path is a directory (only a directory may be walked
    ///   into).
    package func decision(for components: [[UInt8]], isDirectory: Bool) -> Decision {
        guard !isEmpty else { return .included }
        let path = [PathPattern.rootMarker] + components
        let excluding = excludes.filter { $0.matches(path) }
        let included = includes.isEmpty || includes.contains { $0.matches(path) }
        if excluding.isEmpty, included { return .included }
        guard isDirectory else { return .excluded }
        let mayKeepBelow =
            excluding.allSatisfy { $0.mayUnmatchBelow(path) }
            && (includes.isEmpty || includes.contains { $0.mayMatchBelow(path) })
        return mayKeepBelow ? .excludedWalkingInto : .excluded
    }
}
