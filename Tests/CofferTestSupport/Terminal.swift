public import Foundation

/// A command run in a pseudo-terminal of a given size (util-linux's `script`), and the screen its
/// output leaves, drawn as a terminal would: for what only shows on a terminal (prompts, progress).
public enum Terminal {
    static let script = URL(fileURLWithPath: "/usr/bin/script")

    /// Whether `script` is installed (Debian's bsdutils, always there).
    public static var canRun: Bool { FileManager.default.isExecutableFile(atPath: script.path) }

    /// What a run drew.
    public struct Screen: Sendable, CustomStringConvertible {
        /// The lines on the screen at the end, trailing spaces removed.
        public let lines: [String]
        /// How often text ran past the last column and wrapped to the next line.
        public let wraps: Int
        /// The raw bytes written to the terminal.
        public let raw: Data

        /// Whether any line holds `text`.
        public func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }

        public var description: String { lines.joined(separator: "\n") }
    }

    /// Runs `command` (a shell command line) on a terminal `columns` wide, typing `input`.
    public static func run(
        _ command: String,
        columns: Int = 80,
        input: String = "",
        environment: [String: String] = [:]
    ) throws -> Screen {
        let process = Process()
        process.executableURL = script
        process.arguments = ["-q", "-e", "-c", "stty cols \(columns) rows 40; exec \(command)", "/dev/null"]
        var merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        merged["TERM"] = "xterm"
        for name in ["COFFER_PASSPHRASE", "COFFER_VAULT"] where environment[name] == nil { merged[name] = nil }
        process.environment = merged
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        let guarded = Watchdog.guardProcess(process)
        defer { guarded?.release() }
        // Typed after a moment, as a person would once the prompt is up (script reads it into the
        // terminal, which holds it until the program reads).
        Thread.sleep(forTimeInterval: 0.5)
        stdin.fileHandleForWriting.write(Data(input.utf8))
        let raw = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try? stdin.fileHandleForWriting.close()
        return render(raw, columns: columns)
    }

    /// Draws `raw` on a screen `columns` wide: text at the cursor (wrapping at the edge), carriage
    /// return, line feed, backspace, and the erase-in-line sequences (`ESC [ K`, `ESC [ 2K`); other
    /// escape sequences are skipped.
    public static func render(_ raw: Data, columns: Int) -> Screen {
        var lines: [[Character]] = [[]]
        var row = 0
        var column = 0
        var wraps = 0
        var pendingWrap = false
        let text = Array(String(decoding: raw, as: UTF8.self))
        var index = 0
        func put(_ character: Character) {
            if pendingWrap {
                wraps += 1
                row += 1
                column = 0
                pendingWrap = false
                if row == lines.count { lines.append([]) }
            }
            while lines[row].count < column { lines[row].append(" ") }
            if column < lines[row].count { lines[row][column] = character } else { lines[row].append(character) }
            if column == columns - 1 { pendingWrap = true } else { column += 1 }
        }
        while index < text.count {
            let character = text[index]
            index += 1
            switch character {
            case "\r":
                column = 0
                pendingWrap = false
            case "\n", "\r\n":
                row += 1
                if character == "\r\n" { column = 0 }
                pendingWrap = false
                if row == lines.count { lines.append([]) }
            case "\u{8}":
                column = max(0, column - 1)
                pendingWrap = false
            case "\u{1B}":
                guard index < text.count, text[index] == "[" else {
                    index += 1
                    continue
                }
                index += 1
                var parameters = ""
                while index < text.count, !(text[index].isLetter || text[index] == "~") {
                    parameters.append(text[index])
                    index += 1
                }
                let final = index < text.count ? text[index] : " "
                index += 1
                if final == "K" {
                    if parameters == "2" {
                        lines[row] = []
                    } else if column < lines[row].count {
                        lines[row].removeSubrange(column...)
                    }
                }
            default:
                if character.isASCII && character.asciiValue! < 0x20 { continue }
                put(character)
            }
        }
        let drawn = lines.map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
        return Screen(lines: drawn, wraps: wraps, raw: raw)
    }
}
