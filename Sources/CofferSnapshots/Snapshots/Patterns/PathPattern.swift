/// One pattern of a list (`--exclude`, `--include`, a line of `--exclude-file`), parsed by restic's
/// rules and matched against a path's components:
///
/// - A leading `!` negates the pattern (see ``PatternList``). The rest is cleaned as Go's
///   `filepath.Clean` cleans a path (`a//b/` is `a/b`, `./a` is `a`, `a/../b` is `b`) and split at `/`.
/// - Each part is a ``GoGlob`` for one component, or `**`, which spans any number of components
///   (none included).
/// - A pattern starting with `/` matches from the root; any other at any depth.
/// - A pattern matches a path when it matches the path's first components (from the root) or, not
///   starting with `/`, any run of consecutive components: `cache` and `docs/*.txt` match
///   `/home/ann/cache/x` and `/srv/docs/a.txt/old`. So what a pattern matches, it matches everything
///   under too.
struct PathPattern: Sendable {
    /// One part of the pattern.
    enum Part: Sendable, Equatable {
        /// The root, first in a pattern that starts with `/`.
        case root
        /// `**`: any number of components.
        case anyDepth
        /// A component without glob characters, compared as bytes.
        case exact([UInt8])
        /// A component glob.
        case glob(GoGlob)

        /// Whether it matches the path component `component` (``rootMarker`` for the root).
        func matches(_ component: [UInt8]) -> Bool {
            switch self {
            case .root: component == PathPattern.rootMarker
            case .anyDepth: false
            case .exact(let bytes): bytes == component
            case .glob(let glob): component != PathPattern.rootMarker && glob.matches(component)
            }
        }

        static let star = Part.glob(try! GoGlob(Array("*".utf8)))
    }

    /// The pattern as given.
    let text: String
    let negated: Bool
    let parts: [Part]

    /// A path's first component when it is absolute (no file name is `/`).
    static let rootMarker: [UInt8] = [UInt8(ascii: "/")]

    /// Parses `text` (lowercased first when `ignoringCase`).
    ///
    /// - Throws: ``GoGlob/BadPattern`` for a component that is no glob.
    init(_ text: String, ignoringCase: Bool) throws(GoGlob.BadPattern) {
        self.text = text
        var bytes = Array(text.utf8)
        if ignoringCase { bytes = UTF8Decoding.lowercased(bytes) }
        negated = bytes.first == UInt8(ascii: "!")
        if negated { bytes.removeFirst() }
        var parts: [Part] = []
        for component in Self.cleaned(bytes) {
            if component == Self.rootMarker {
                parts.append(.root)
            } else if component.isEmpty || component == Array("**".utf8) {
                // Go's split of a cleaned "/" leaves an empty second part, which restic takes as `**`.
                parts.append(.anyDepth)
            } else if !component.contains(where: { Self.globBytes.contains($0) }) {
                parts.append(.exact(component))
            } else {
                parts.append(.glob(try GoGlob(component, lowercasingEscapes: ignoringCase)))
            }
        }
        self.parts = parts
    }

    /// Bytes that make a component a glob.
    private static let globBytes: [UInt8] = Array("\\[]*?".utf8)

    /// `path` cleaned as `filepath.Clean` cleans it and split at `/`, the root as ``rootMarker``.
    static func cleaned(_ path: [UInt8]) -> [[UInt8]] {
        let slash = UInt8(ascii: "/")
        let rooted = path.first == slash
        var kept: [[UInt8]] = []
        for element in path.split(separator: slash) {
            if element.elementsEqual([UInt8(ascii: ".")]) { continue }
            if element.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                if let last = kept.last, last != Array("..".utf8) {
                    kept.removeLast()
                } else if !rooted {
                    kept.append(Array(element))
                }
                continue
            }
            kept.append(Array(element))
        }
        if rooted { return [rootMarker] + (kept.isEmpty ? [[]] : kept) }
        return kept.isEmpty ? [Array(".".utf8)] : kept
    }

    /// Whether the pattern matches `path` (components, ``rootMarker`` first for an absolute path).
    func matches(_ path: [[UInt8]]) -> Bool { Self.matches(parts[...], path[...]) }

    /// Whether the pattern may match something under the directory `path`: always for a pattern
    /// that is not rooted, else when the path agrees with the pattern's start (up to its first
    /// `**`).
    func mayMatchBelow(_ path: [[UInt8]]) -> Bool {
        guard parts.first == .root else { return true }
        var path = path[...]
        if let anyDepth = parts.firstIndex(of: .anyDepth), path.count >= anyDepth {
            path = path.prefix(anyDepth)
        }
        return Self.matches(parts.prefix(min(path.count, parts.count)), path)
    }

    /// restic's rule: a `**` is tried as 0, 1, 2, … `*` parts; a rooted pattern then matches the
    /// path's first components, another any run of them below the root.
    private static func matches(_ parts: ArraySlice<Part>, _ path: ArraySlice<[UInt8]>) -> Bool {
        if let anyDepth = parts.firstIndex(of: .anyDepth) {
            let most = path.count - parts.count + 1
            guard most >= 0 else { return false }
            for stars in 0...most {
                let expanded =
                    parts[..<anyDepth] + Array(repeating: Part.star, count: stars) + parts[(anyDepth + 1)...]
                if matches(expanded[...], path) { return true }
            }
            return false
        }
        guard !parts.isEmpty else { return path.isEmpty }
        guard parts.count <= path.count else { return false }
        var lowest = path.startIndex
        var highest = path.endIndex - parts.count
        if parts.first == .root {
            highest = path.startIndex
        } else if path.first == rootMarker {
            lowest += 1
        }
        guard lowest <= highest else { return false }
        for offset in (lowest...highest).reversed() {
            if parts.indices.allSatisfy({ parts[$0].matches(path[offset + $0 - parts.startIndex]) }) { return true }
        }
        return false
    }
}
