// Writes the Swift examples of Coffer's documents as functions an app could have written, for the
// `DocumentationExamples` target (its build plugin runs this at each build).
//
//   extract-examples REPOSITORY OUTPUT DOCUMENT...
//
// Each ```swift block becomes a method of `ExampleSurroundings`, whose properties are the names the
// examples take from their surroundings (`vault`, `url`, a second device), so that the example's own
// text compiles unchanged. Three things are rewritten, and only so that an example can run here:
// an absolute path in a string literal ("/srv/photos") is placed under the run's directory, a
// loopback S3 endpoint ("http://127.0.0.1:8333") becomes the test server's, and a store's prefix
// ("s3://ann-sync/coffer") gets one of the run's own in front, so that each run has a store to itself.
import Foundation

/// One ```swift block: where it is and its lines, `import`s left out (the file imports Coffer).
struct SwiftBlock {
    let document: String
    let line: Int
    let lines: [String]

    /// A Swift identifier naming this block: the document's path and the line its fence is on.
    var functionName: String {
        document.replacingOccurrences(of: "[^A-Za-z0-9]", with: "_", options: .regularExpression) + "_line\(line)"
    }

    /// The passphrase the example gives first: the one it expects the vault it names to have (to join
    /// it, or to rekey it). Absent, the surroundings' vaults use their usual one.
    var passphrase: String? {
        for line in lines {
            if let match = line.firstMatch(of: /passphrase: "([^"]*)"/) { return String(match.1) }
        }
        return nil
    }

    /// The body, with paths, the endpoint and the store placed where this run keeps them.
    var runnableBody: String {
        lines.map { line in
            line.replacing(/"\/(?=[A-Za-z])/, with: "\"\\(sandbox)/")
                .replacing(/"http:\/\/127\.0\.0\.1:[0-9]+"/, with: "\"\\(s3Endpoint)\"")
                .replacing(/"s3:\/\/([a-z0-9.-]+)\/([^"]*)"/) { "\"s3://\($0.1)/\\(s3Prefix)\($0.2)\"" }
        }.joined(separator: "\n")
    }
}

/// The ```swift blocks of one Markdown document.
func swiftBlocks(in text: String, document: String) -> [SwiftBlock] {
    var blocks: [SwiftBlock] = []
    var body: [String]?
    var start = 0
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if var lines = body {
            if trimmed.hasPrefix("```") {
                blocks.append(SwiftBlock(document: document, line: start, lines: lines))
                body = nil
            } else {
                if !trimmed.hasPrefix("import ") { lines.append(String(line)) }
                body = lines
            }
        } else if trimmed == "```swift" {
            body = []
            start = index + 1
        }
    }
    return blocks
}

/// A Swift string literal holding `text`.
func literal(_ text: String) -> String {
    let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        .replacingOccurrences(of: "\n", with: "\\n")
    return "\"" + escaped + "\""
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: extract-examples REPOSITORY OUTPUT DOCUMENT...\n".utf8))
    exit(64)
}
let repository = URL(fileURLWithPath: arguments[arguments.startIndex]).standardizedFileURL.path + "/"
let output = URL(fileURLWithPath: arguments[arguments.startIndex + 1])
var blocks: [SwiftBlock] = []
for path in arguments.dropFirst(2) {
    let document = path.hasPrefix(repository) ? String(path.dropFirst(repository.count)) : path
    do {
        blocks += swiftBlocks(in: try String(contentsOfFile: path, encoding: .utf8), document: document)
    } catch {
        FileHandle.standardError.write(Data("extract-examples: cannot read \(path): \(error)\n".utf8))
        exit(1)
    }
}

var source = """
    // Generated at each build by extract-examples from the Swift examples of Coffer's documents.
    // Do not edit: edit the documents.
    import Coffer
    import Foundation

    extension ExampleSurroundings {

    """
for block in blocks {
    let isAsync = block.lines.contains { $0.contains("await ") }
    let body = block.runnableBody.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.isEmpty ? "" : "        " + $0 }.joined(separator: "\n")
    source += """
            /// The example at \(block.document), line \(block.line).
            func \(block.functionName)() \(isAsync ? "async " : "")throws {
        \(body)
            }


        """
}
source += """
    }

    extension DocumentedExample {
        /// Every Swift example of the documents, in their order.
        public static let all: [DocumentedExample] = [

    """
for block in blocks {
    let isAsync = block.lines.contains { $0.contains("await ") }
    let passphrase = block.passphrase.map(literal) ?? "nil"
    let createsAtURL = block.lines.contains { $0.contains("create(at: url") }
    source += """
                DocumentedExample(
                    document: \(literal(block.document)), line: \(block.line), passphrase: \(passphrase),
                    createsVaultAtURL: \(createsAtURL), source: \(literal(block.lines.joined(separator: "\n"))),
                    run: { try \(isAsync ? "await " : "")$0.\(block.functionName)() }
                ),

        """
}
source += "    ]\n}\n"

do {
    try Data(source.utf8).write(to: output, options: .atomic)
} catch {
    FileHandle.standardError.write(Data("extract-examples: cannot write \(output.path): \(error)\n".utf8))
    exit(1)
}
