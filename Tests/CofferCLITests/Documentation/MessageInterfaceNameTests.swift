import CofferTestSupport
import Foundation
import Testing

@testable import Coffer
@testable import CofferCLI

/// The library's messages name what to run for whoever reads them: `coffer` commands in the tool,
/// library calls in an app. Each is spelled once, in `InterfaceName`; these tests keep every other
/// message from spelling one, and every command named there a real command of the tool.
@Suite("Messages name commands for the command line and calls for apps")
struct MessageInterfaceNameTests {
    private static let catalog = "Sources/CofferCore/Messages/InterfaceName.swift"

    @Test("each audience reads its own name, in backquotes, with its own verb")
    func rendering() {
        let verify = InterfaceName.verify
        #expect(verify.description(for: .commandLine) == "`coffer verify`")
        #expect(verify.description(for: .application) == "`vault.blobs.verify()`")
        #expect(verify.instruction(for: .commandLine) == "run `coffer verify`")
        #expect(verify.instruction(for: .application) == "call `vault.blobs.verify()`")
        #expect(InterfaceName.revoke("0f3a").description(for: .commandLine) == "`coffer device revoke 0f3a`")
    }

    @Test("an app's error names the library call; this test process is an app")
    func appMessage() throws {
        let directory = try TemporaryDirectory()
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        let vault = try Vault.create(at: directory.path("v"), passphrase: "pw", configuration: configuration)
        defer { vault.close() }
        let missing = Result { () throws(CofferError) in try vault.blobs.data("absent") }
        guard case .failure(let error) = missing else {
            Issue.record("a missing blob was read")
            return
        }
        #expect(error.message == "there is no blob named 'absent'; `vault.blobs.list()` lists the blobs")
    }

    @Test("the tool's error names the command")
    func commandLineMessage() throws {
        let directory = try TemporaryDirectory()
        let vault = directory.path("v").path
        let coffer = try Products.executable("coffer")
        let environment = ["COFFER_PASSPHRASE": "pw"]
        let made = try Products.run(coffer, ["init", "--vault", vault], environment: environment)
        try #require(made.status == 0, "\(made.error)")
        let missing = try Products.run(coffer, ["get", "--vault", vault, "absent"], environment: environment)
        #expect(missing.status == 1)
        #expect(
            missing.error.contains("there is no blob named 'absent'; `coffer ls` lists the blobs"),
            "\(missing.error)"
        )
    }

    @Test("no string in the library spells a coffer command or a command-line option; InterfaceName does")
    func noSpelledCommands() throws {
        let commands = Set(CofferCommand.root.subcommands.map(\.name))
        let sources = Products.packageRoot.appendingPathComponent("Sources")
        let literal = try Regex(#""(?:[^"\\]|\\.)*""#)
        let option = try Regex(#"(?:^|[\s(`'])--[a-z][a-z-]+"#)
        var found: [String] = []
        for file in try Self.swiftFiles(under: sources) where !file.path.hasSuffix(Self.catalog) {
            let lines = try String(contentsOf: file, encoding: .utf8).split(
                separator: "\n",
                omittingEmptySubsequences: false
            )
            for (number, line) in lines.enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                for match in line.matches(of: literal) {
                    let text = String(line[match.range])
                    let words = text.split(whereSeparator: { !$0.isLetter && $0 != "-" })
                    let namesCommand = zip(words, words.dropFirst()).contains {
                        $0 == "coffer" && commands.contains(String($1))
                    }
                    if namesCommand || text.contains(option) {
                        found.append("\(file.lastPathComponent):\(number + 1): \(text)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "spell these with InterfaceName: \(found.joined(separator: "\n"))")
    }

    @Test("every command InterfaceName names is one of the tool's, with options it takes")
    func catalogNamesRealCommands() throws {
        let text = try String(contentsOf: Products.packageRoot.appendingPathComponent(Self.catalog), encoding: .utf8)
        let named = text.matches(of: try Regex(#"command: "(coffer [^"]*)""#)).compactMap { $0.output[1].substring }
        #expect(named.count >= 25, "\(named)")
        let global = Set(CofferCommand.globalOptions.map(\.name))
        for command in named {
            let words = command.split(separator: " ").map(String.init).dropFirst()
            var spec = CofferCommand.root
            var rest = words[...]
            while let word = rest.first, let sub = spec.subcommands.first(where: { $0.name == word }) {
                spec = sub
                rest = rest.dropFirst()
            }
            #expect(spec.name != "coffer", "\(command): no such command")
            #expect(spec.run != nil, "\(command): \(spec.name) needs a subcommand")
            for option in rest where option.hasPrefix("--") {
                let name = String(option.dropFirst(2))
                #expect(
                    spec.options.contains { $0.name == name } || global.contains(name),
                    "\(command): no option \(option)"
                )
            }
        }
    }

    private static func swiftFiles(under directory: URL) throws -> [URL] {
        let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        return (walker?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
    }
}
