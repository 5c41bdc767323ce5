import Foundation

/// The examples of one Markdown document: its fenced blocks read as terminal sessions. A line
/// `$ COMMAND` (or `HOST$ COMMAND`, for a second machine) is a command, a trailing `\` or a next line
/// with the shell's `> ` prompt continues it, and the lines after it, up to the next command, are what
/// it showed. A block that
/// runs `coffer` without prompts must say why it is not run, in a comment just above it:
/// `<!-- not run: REASON -->`.
struct DocumentationExample {
    /// One command of a session, as the document shows it.
    struct Command: Sendable, CustomStringConvertible {
        /// The machine it runs on (`laptop` when the prompt names none).
        let host: String
        /// The command line, continuation lines joined.
        let text: String
        /// What the document shows it printing.
        let shown: [String]
        /// Its line in the document, for messages.
        let line: Int

        var description: String { "line \(line): \(host)$ \(text)" }
    }

    /// A fenced block of the document.
    struct Block: Sendable {
        /// The first line inside the fence.
        let line: Int
        /// The info string after the opening fence (`console`, `swift`, empty).
        let language: String
        /// The lines inside the fences.
        let lines: [String]
        /// The reason given in a `<!-- not run: … -->` comment just above, if any.
        let notRunBecause: String?

        /// Whether a line of the block runs `coffer`: the word as a command (at the start of the line
        /// or after a prompt, a pipe, `&&`, `;`, `$(`, or a variable's assignment), followed by a
        /// subcommand or an option.
        var runsCoffer: Bool {
            lines.contains { line in
                line.range(of: #"(^\s*|[|&;(]\s*|\$ |\w+=\S*\s+)coffer\s+[a-z-]"#, options: .regularExpression) != nil
            }
        }

        /// The block's commands, when it is a terminal session (it has prompts); empty otherwise.
        var commands: [Command] {
            var commands: [Command] = []
            var index = 0
            while index < lines.count {
                guard let (host, first) = Self.prompt(lines[index]) else {
                    index += 1
                    continue
                }
                let start = line + index
                var text = first
                while index + 1 < lines.count {
                    if text.hasSuffix("\\") {
                        text = String(text.dropLast()) + " " + lines[index + 1].trimmingCharacters(in: .whitespaces)
                    } else if lines[index + 1].hasPrefix("> ") {
                        text += "\n" + lines[index + 1].dropFirst(2)
                    } else {
                        break
                    }
                    index += 1
                }
                index += 1
                var shown: [String] = []
                while index < lines.count, Self.prompt(lines[index]) == nil {
                    if !lines[index].trimmingCharacters(in: .whitespaces).isEmpty { shown.append(lines[index]) }
                    index += 1
                }
                commands.append(Command(host: host, text: text, shown: shown, line: start))
            }
            return commands
        }

        /// The host and the command of a prompt line: `$ coffer init`, `desktop$ coffer import …`.
        static func prompt(_ line: String) -> (host: String, command: String)? {
            guard let match = line.firstMatch(of: /^([a-z][a-z0-9-]*)?\$ (.*)$/) else { return nil }
            return (match.1.map(String.init) ?? "laptop", String(match.2))
        }
    }

    /// The document's path from the repository's root.
    let path: String
    /// Its fenced blocks, in order.
    let blocks: [Block]

    /// Reads the fenced blocks of `text`.
    init(path: String, text: String) {
        self.path = path
        var blocks: [Block] = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var index = 0
        var notRun: String?
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            if let match = trimmed.firstMatch(of: /^<!-- not run: (.+) -->$/) {
                notRun = String(match.1)
                index += 1
                continue
            }
            guard trimmed.hasPrefix("```") else {
                if !trimmed.isEmpty { notRun = nil }
                index += 1
                continue
            }
            let indent = lines[index].prefix { $0 == " " }.count
            let language = String(trimmed.dropFirst(3))
            var body: [String] = []
            index += 1
            while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                body.append(String(lines[index].dropFirst(min(indent, lines[index].prefix { $0 == " " }.count))))
                index += 1
            }
            blocks.append(Block(line: index - body.count + 1, language: language, lines: body, notRunBecause: notRun))
            notRun = nil
            index += 1
        }
        self.blocks = blocks
    }

    /// Every command of every session that runs `coffer`, in document order. (Sessions of other
    /// programs, such as the example app's, are left to their own tests.)
    var commands: [Command] { blocks.filter(\.runsCoffer).flatMap(\.commands) }
}
