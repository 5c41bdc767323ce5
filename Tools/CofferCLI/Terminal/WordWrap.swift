/// Prose broken into lines of at most a terminal's width, at spaces: messages and summaries on a
/// terminal, which would otherwise wrap in the middle of a word. A word longer than the width (a long
/// path) is never split: it stays beside the words before it, and the terminal wraps it. Lines
/// already in the text stay as they are.
///
/// ```swift
/// WordWrap.wrap("Snapshot 3f9c2a71 of /home/ann/docs: 6 files …", width: 80)
/// ```
enum WordWrap {
    /// `text` with each of its lines broken at spaces so that none is longer than `width`, where it
    /// can be.
    static func wrap(_ text: String, width: Int) -> String {
        guard width > 10 else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.count > width else { return String(line) }
            var lines: [String] = []
            var current = ""
            for word in line.split(separator: " ", omittingEmptySubsequences: false) {
                if current.isEmpty {
                    current = String(word)
                } else if current.count + 1 + word.count <= width || word.count > width {
                    // A word no line can hold (a long path) stays beside the words before it.
                    current += " " + word
                } else {
                    lines.append(current)
                    current = String(word)
                }
            }
            lines.append(current)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
