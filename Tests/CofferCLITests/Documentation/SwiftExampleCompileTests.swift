import CofferTestSupport
import Foundation
import Testing

/// Every Swift example in the README, `docs/` and the DocC catalog, type-checked as an app would
/// compile it: `import Coffer` alone, against the module this build made, Swift 6, warnings as
/// errors. Each block becomes a function of its own (async when it awaits); the names an example
/// takes from its surroundings (`vault`, `url`, a second device) are declared in ``standIns``, by type
/// only, so a renamed or retyped API breaks the build of its example. The error-handling examples also
/// run (``DocumentedErrorPatternTests``), and the CLI examples run as sessions
/// (``DocumentationExampleTests``). An example may leave a value unused (it shows what a call
/// returns): that warning, and only that one, is allowed.
@Suite("Documentation examples: every Swift example type-checks against the public API")
struct SwiftExampleCompileTests {
    /// The names examples use without declaring them, typed as the prose describes them.
    static let standIns = """
        var vault: Vault { fatalError() }
        var url: URL { fatalError() }
        var photoURL: URL { fatalError() }
        var bundleURL: URL { fatalError() }
        var fileURL: URL { fatalError() }
        var later: Date { fatalError() }
        var socketOrPipe: Int32 { fatalError() }
        var asyncSequenceOfData: AsyncStream<Data> { fatalError() }
        func consume(_ piece: Data) {}
        var older: SnapshotInfo { fatalError() }
        var laterBundle: URL { fatalError() }
        var other: Vault { fatalError() }
        var admin: Vault { fatalError() }
        var phoneDirectory: URL { fatalError() }
        var laptopDirectory: URL { fatalError() }
        var bundleFromDesktop: URL { fatalError() }
        var bundle: URL { fatalError() }
        var desktop: Vault { fatalError() }
        var lostPhone: GroupMember { fatalError() }
        var bytes: Data { fatalError() }
        var pinned: String { fatalError() }
        var dataDirectory: URL { fatalError() }
        func showLockScreen(_ locked: Bool) {}
        func askTheUser(_ reason: String) -> Bool { true }
        """

    /// The documents searched for Swift examples.
    static let documents: [DocumentationExample] = DocumentationExampleTests.documents

    /// Each Swift block, as a function named after its document and line.
    static func functions() -> [(name: String, body: String)] {
        var functions: [(String, String)] = []
        for document in documents {
            for block in document.blocks where block.language == "swift" {
                let name =
                    document.path.replacingOccurrences(of: "[^A-Za-z0-9]", with: "_", options: .regularExpression)
                    + "_line\(block.line)"
                let lines = block.lines.filter { !$0.hasPrefix("import ") }
                functions.append((name, lines.joined(separator: "\n")))
            }
        }
        return functions
    }

    /// The source of one file holding every example.
    static func source() -> String {
        var text = "import Coffer\nimport Foundation\n\n" + standIns + "\n"
        for (name, body) in functions() {
            let isAsync = body.contains("await ")
            let indented = body.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
                .joined(separator: "\n")
            text += "\n@available(*, deprecated, message: \"an example, never called\")\n"
            text += "func \(name)() \(isAsync ? "async " : "")throws {\n\(indented)\n}\n"
        }
        return text
    }

    @Test("the documents hold Swift examples, each in a function of its own")
    func examplesFound() {
        let functions = Self.functions()
        #expect(functions.count >= 20, "\(functions.count) Swift examples")
        #expect(Set(functions.map(\.name)).count == functions.count)
    }

    @Test("every Swift example type-checks with no warning", .enabled(if: ErrorPatternCompileTests.canCompile))
    func examplesTypeCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-examples-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("Examples.swift")
        try Data(Self.source().utf8).write(to: file)
        let result = try Products.run(
            try #require(ErrorPatternCompileTests.swiftc),
            ["-swift-version", "6", "-parse-as-library", "-typecheck"]
                + ErrorPatternCompileTests.includes + [file.path],
            currentDirectory: directory
        )
        let problems = result.error.split(separator: "\n").filter {
            $0.contains(": error: ") || ($0.contains(": warning: ") && !$0.hasSuffix("[#no-usage]"))
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(result.status == 0, "\(result.error)")
    }
}
