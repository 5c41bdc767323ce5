import Foundation

/// One run's results with what produced them: what `--json` writes (schema version 1, documented in
/// docs/PERFORMANCE.md), and what the table, `--markdown` and `--svg` are drawn from.
struct Report: Encodable {
    /// Bumped when a field changes meaning or goes away; new fields may be added within a version.
    let schemaVersion = 1
    let machine: MachineDescription
    let date: Date
    let command: String
    let runs: Int
    let skippedPeers: [String]
    let results: [Measurement]

    /// The report as pretty-printed JSON with sorted keys and ISO 8601 dates.
    func json() throws -> Data { try reportJSON(self) }

    var dateText: String { ISO8601DateFormatter.string(from: date, timeZone: .gmt, formatOptions: [.withFullDate]) }

    /// A Markdown table, each figure beside its reference, headed by the date, command and machine.
    func markdown() -> String {
        var lines = [
            "Measured \(dateText) with `\(command)` on \(machine.summary); median of \(runs) interleaved runs "
                + "after a warm-up.",
            "",
            "| figure | median | min | max | vs reference in the same run |",
            "|---|---:|---:|---:|---|",
        ]
        for result in results {
            // A `|` in a name (tar | zstd) would end the cell.
            func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
            let ratio = result.comparisons.map { String(format: "**%.2f×** of %@", $0.ratio, cell($0.reference)) }
                .joined(separator: "; ")
            lines.append(
                "| \(cell(result.name)) | \(Self.format(result.median)) \(result.unit) | \(Self.format(result.min)) | "
                    + "\(Self.format(result.max)) | \(ratio) |"
            )
        }
        if !skippedPeers.isEmpty {
            lines.append("")
            lines.append("Skipped peers: " + skippedPeers.joined(separator: "; ") + ".")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A bar chart: for every figure measured beside a reference, a bar for each, both scaled to the
    /// larger of the two (their units are the same), with values and the ratio written out.
    func svg() -> String {
        let pairs = results.compactMap { result -> (Measurement, Measurement)? in
            guard let name = result.reference, let reference = results.first(where: { $0.name == name }) else {
                return nil
            }
            return (result, reference)
        }
        let width = 960
        let labelWidth = 420
        let barWidth = width - labelWidth - 150
        let rowHeight = 54
        let top = 56
        let height = top + max(pairs.count, 1) * rowHeight + 16
        var svg = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
                + "viewBox=\"0 0 \(width) \(height)\" font-family=\"sans-serif\" font-size=\"12\">",
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
            "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Coffer beside its references, "
                + "\(Self.escape(dateText))</text>",
            "<text x=\"12\" y=\"40\" fill=\"#555\">\(Self.escape(command)) · \(Self.escape(machine.summary)) · "
                + "median of \(runs) runs · dark: Coffer, light: reference measured in the same run</text>",
        ]
        if pairs.isEmpty {
            svg.append("<text x=\"12\" y=\"\(top + 20)\">No figure in this run has a reference.</text>")
        }
        for (index, (result, reference)) in pairs.enumerated() {
            let y = top + index * rowHeight
            let scale = max(result.median, reference.median, .leastNonzeroMagnitude)
            let figureLength = max(1, Int(Double(barWidth) * result.median / scale))
            let referenceLength = max(1, Int(Double(barWidth) * reference.median / scale))
            svg += [
                "<text x=\"12\" y=\"\(y + 16)\">\(Self.escape(result.name))</text>",
                "<text x=\"12\" y=\"\(y + 36)\" fill=\"#555\">\(Self.escape(reference.name))</text>",
                "<rect x=\"\(labelWidth)\" y=\"\(y + 5)\" width=\"\(figureLength)\" height=\"16\" fill=\"#2b6cb0\"/>",
                "<rect x=\"\(labelWidth)\" y=\"\(y + 25)\" width=\"\(referenceLength)\" height=\"16\" fill=\"#a3c4e8\"/>",
                "<text x=\"\(labelWidth + figureLength + 6)\" y=\"\(y + 17)\">\(Self.format(result.median)) "
                    + "\(result.unit) (\(String(format: "%.2f×", result.ratio ?? 0)))</text>",
                "<text x=\"\(labelWidth + referenceLength + 6)\" y=\"\(y + 37)\" fill=\"#555\">"
                    + "\(Self.format(reference.median)) \(reference.unit)</text>",
            ]
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: value >= 10 ? "%.1f" : "%.2f", value)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// The machine a report was measured on.
struct MachineDescription: Encodable {
    let cores: Int
    let cpu: String
    let memoryGiB: Int

    static var current: MachineDescription {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        return MachineDescription(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            cpu: cpu,
            memoryGiB: Int(ProcessInfo.processInfo.physicalMemory >> 30)
        )
    }

    var summary: String { "\(cores) cores, \(cpu), \(memoryGiB) GiB" }
}

/// `value` as every report's JSON is written: pretty-printed, keys sorted, dates in ISO 8601.
func reportJSON(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return try encoder.encode(value)
}
