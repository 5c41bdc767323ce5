/// Lines of `Label:  value` with the values in one column (`info`, `stats`, `device show`). Given a
/// width (a terminal's), a value too wide for its line wraps under itself, and one that cannot be
/// broken there (a key in hexadecimal) starts on the line below, indented.
enum LabeledRows {
    /// The rows as text, at most `width` wide where the values allow it (in full when `nil`).
    static func text(_ rows: [(label: String, value: String)], width: Int? = nil) -> String {
        let column = (rows.map(\.label.count).max() ?? 0) + 3
        let indent = String(repeating: " ", count: column)
        return rows.map { label, value in
            let head = (label + ":").padding(toLength: column, withPad: " ", startingAt: 0)
            guard let width, column + value.count > width else { return head + value }
            let longestWord = value.split(separator: " ").map(\.count).max() ?? 0
            guard column + longestWord <= width else {
                return label + ":\n  " + WordWrap.wrap(value, width: width - 2).replacing("\n", with: "\n  ")
            }
            return head + WordWrap.wrap(value, width: width - column).replacing("\n", with: "\n" + indent)
        }.joined(separator: "\n")
    }
}
