import Foundation

/// Rows laid out in columns under a header, for listings (`ls`, `snapshots`): each column as wide as
/// its widest cell, numbers aligned right, the last column left ragged (names can be long). On a
/// terminal the table fits its width, as progress lines do: columns with a shorter form take it (a
/// time without its seconds and offset), then the columns that matter least are dropped, then the last
/// column's cells are shortened (in the middle, keeping a name's start and end, or at the end).
/// Written to a pipe or a file, every column is there in full.
struct TextTable {
    /// A column: its header, how its cells align, and what may happen to it when the table is too
    /// wide.
    struct Column {
        let header: String
        var alignsRight = false
        /// When the table is too wide, columns with a drop order go, lowest first; `nil`: it stays.
        var dropOrder: Int?
        /// A shorter form of each cell, taken before any column is dropped.
        var shortened: (@Sendable (String) -> String)?
        /// As the last column: cut at the end (prose) rather than in the middle (a name or a path).
        var cutsAtEnd = false
    }

    let columns: [Column]
    private(set) var rows: [[String]] = []

    init(_ columns: [Column]) { self.columns = columns }

    mutating func append(_ row: [String]) { rows.append(row) }

    /// The table in full: the header and the rows, one line each, columns two spaces apart, no line
    /// ending in spaces.
    var text: String { text(fitting: nil) }

    /// The table at most `width` characters wide (in full when `nil`).
    func text(fitting width: Int?) -> String {
        var columns = self.columns
        var cells = [columns.map(\.header)] + rows
        func lineWidth() -> Int {
            columns.indices.map { index in cells.map { $0[index].count }.max() ?? 0 }.reduce(0, +)
                + 2 * (columns.count - 1)
        }
        if let width, lineWidth() > width {
            for index in columns.indices {
                guard let shorten = columns[index].shortened else { continue }
                for row in cells.indices.dropFirst() { cells[row][index] = shorten(cells[row][index]) }
            }
            let droppable = columns.indices.filter { columns[$0].dropOrder != nil }
                .sorted { columns[$0].dropOrder! < columns[$1].dropOrder! }
            var dropped: Set<Int> = []
            for index in droppable where lineWidth() - removedWidth(dropped, columns, cells) > width {
                dropped.insert(index)
            }
            let kept = columns.indices.filter { !dropped.contains($0) }
            columns = kept.map { columns[$0] }
            cells = cells.map { row in kept.map { row[$0] } }
            let last = columns.count - 1
            let others = lineWidth() - (cells.map { $0[last].count }.max() ?? 0)
            let room = max(width - others, 8)
            for row in cells.indices where cells[row][last].count > room {
                cells[row][last] =
                    columns[last].cutsAtEnd
                    ? String(cells[row][last].prefix(room - 1)) + "…" : cells[row][last].middleTruncated(to: room)
            }
        }
        let widths = columns.indices.map { index in cells.map { $0[index].count }.max() ?? 0 }
        return cells.map { row in
            row.enumerated().map { index, cell in
                if index == columns.count - 1 && !columns[index].alignsRight { return cell }
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return columns[index].alignsRight ? padding + cell : cell + padding
            }.joined(separator: "  ").replacing(/\ +$/, with: "")
        }.joined(separator: "\n")
    }

    /// How much narrower the table is without the columns `dropped`.
    private func removedWidth(_ dropped: Set<Int>, _ columns: [Column], _ cells: [[String]]) -> Int {
        dropped.map { index in (cells.map { $0[index].count }.max() ?? 0) + 2 }.reduce(0, +)
    }

    /// Dates in listings: local time with its offset from UTC (`2026-12-01 21:09:01 +01:00`).
    static func localTime(_ date: Date) -> String { formatter.string(from: date) }

    /// A listing's time without its seconds and offset, where room is short: `2026-12-01 21:09` (a
    /// claimed time keeps its `?`).
    @Sendable static func shortTime(_ text: String) -> String {
        guard text.count > 17 else { return text }
        return String(text.prefix(16)) + (text.hasSuffix("?") ? "?" : "")
    }

    private static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
        return formatter
    }()
}
