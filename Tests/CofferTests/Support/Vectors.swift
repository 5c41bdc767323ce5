import Foundation

/// Loads the known-answer vector files in `Vectors/` (each names its origin in its first lines).
enum Vectors {
    static func text(_ name: String) throws -> String {
        guard let url = Bundle.module.url(forResource: "Vectors/\(name)", withExtension: nil) else {
            throw VectorError("vector file \(name) is missing from the test bundle")
        }
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func data(_ name: String) throws -> Data {
        Data(try text(name).utf8)
    }

    /// Parses NIST CAVP `.rsp` and RFC-style `KEY = VALUE` files into records. A record starts at each
    /// `Count`/`COUNT` line and takes every `KEY = VALUE` (and a bare `FAIL`) until the next one;
    /// `[...]` section headers and `#` comments are skipped.
    static func records(_ name: String) throws -> [[String: String]] {
        var records: [[String: String]] = []
        for rawLine in try text(name).split(separator: "\n") {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.hasPrefix("[") { continue }
            if line == "FAIL", !records.isEmpty {
                records[records.count - 1]["FAIL"] = ""
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if key.lowercased() == "count" { records.append([:]) }
            if !records.isEmpty { records[records.count - 1][key] = value }
        }
        return records
    }
}

struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Array where Element == UInt8 {
    /// Bytes from a hex string (empty string: no bytes).
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self = bytes
    }

    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
