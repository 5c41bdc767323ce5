import Foundation

/// Rows laid out in columns under a header, for listings (`ls`, `snapshots`): each column as wide as
/// its widest cell, numbers aligned right, the last column left ragged (names can be long).
struct TextTable {
    /// A column: its header and whether its cells align right (sizes, counts).
    struct Column {
        let header: String
        var alignsRight = false
    }

    let columns: [Column]
    private(set) var rows: [[String]] = []

    init(_ columns: [Column]) { self.columns = columns }

    mutating func append(_ row: [String]) { rows.append(row) }

    /// The header and the rows, one line each, columns two spaces apart, no line ending in spaces.
    var text: String {
        let all = [columns.map(\.header)] + rows
        let widths = columns.indices.map { index in all.map { $0[index].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { index, cell in
                if index == columns.count - 1 && !columns[index].alignsRight { return cell }
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return columns[index].alignsRight ? padding + cell : cell + padding
            }.joined(separator: "  ").replacing(/\ +$/, with: "")
        }.joined(separator: "\n")
    }

    /// Dates in listings: local time with its offset from UTC (`2026-12-01 21:09:01 +01:00`).
    static func localTime(_ date: Date) -> String { formatter.string(from: date) }

    private static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
        return formatter
    }()
}
