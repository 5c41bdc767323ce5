import Coffer
import Foundation
import Testing

@testable import CofferCLI

/// A command that declares every kind of property, for the binding tests.
struct SampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(name: "sample", abstract: "A sample.")

    struct Shared: ArgumentGroup {
        @Option(value: "N", help: "A shared count.")
        var sharedCount: Int = 7

        func validate() throws {
            if sharedCount < 0 { throw ValidationError("--shared-count must be 0 or more") }
        }
    }

    var shared = Shared()

    @Option(value: "N", help: "A count.")
    var count: Int = 3

    @Option(value: "TEXT", help: "A label.")
    var label: String?

    @Option(value: "P", help: "Patterns.")
    var pattern: [String]

    @Option(name: "to-file", value: "FILE", help: "Where.")
    var destination: String?

    @Flag(short: "f", help: "Force.")
    var force: Bool

    @Flag(help: "Devices only.")
    var deviceOnly: Bool

    @Argument("NAME", help: "A name.")
    var name: String

    @Argument("REST", help: "The rest.")
    var rest: [String]

    func validate() throws {
        if force, deviceOnly { throw ValidationError("--force and --device-only exclude each other") }
    }

    func run(_ context: CommandContext) throws {}
}

@Suite("Typed commands")
struct TypedCommandTests {
    static let parser = CommandLineParser(
        root: CommandSpec(name: "tool", abstract: "A tool.", subcommands: [SampleCommand.spec]),
        globalOptions: CofferCommand.globalOptions
    )

    func bound(_ arguments: [String]) throws -> SampleCommand {
        let outcome = try Self.parser.parse(["sample"] + arguments, environment: [:], console: ParserTests.console)
        guard case .run(_, let invocation) = outcome else { throw UsageError(message: "help", commandPath: []) }
        return try SampleCommand.bound(to: invocation)
    }

    @Test("the spec comes from the properties: names from property names, in declaration order")
    func spec() {
        let spec = SampleCommand.spec
        #expect(
            spec.options.map(\.name) == [
                "shared-count", "count", "label", "pattern", "to-file", "force", "device-only",
            ]
        )
        #expect(spec.options.first { $0.name == "force" }?.shortName == "f")
        #expect(spec.options.first { $0.name == "force" }?.takesValue == false)
        #expect(spec.arguments.map(\.name) == ["NAME", "REST"])
        #expect(spec.arguments.map(\.presence) == [.required, .repeating])
        #expect(optionName(forProperty: "passphraseFile") == "passphrase-file")
        #expect(optionName(forProperty: "toRNCryptor") == "to-rncryptor")
        #expect(optionName(forProperty: "limitUpload2x") == "limit-upload2x")
    }

    @Test("defaults when nothing is given")
    func defaults() throws {
        let command = try bound(["x", "r"])
        #expect(command.count == 3 && command.shared.sharedCount == 7)
        #expect(command.label == nil && command.destination == nil && command.pattern.isEmpty)
        #expect(!command.force && !command.deviceOnly)
        #expect(command.name == "x" && command.rest == ["r"])
    }

    @Test("typed values, the last of a repeated option, every value of a repeating one, the rest of the arguments")
    func values() throws {
        let command = try bound([
            "--count", "5", "--count=9", "--label", "a b", "--pattern", "*.log", "--pattern", "!keep.log", "-f",
            "--to-file", "out", "--shared-count", "0", "n", "r1", "r2",
        ])
        #expect(command.count == 9)
        #expect(command.label == "a b")
        #expect(command.pattern == ["*.log", "!keep.log"])
        #expect(command.destination == "out")
        #expect(command.force)
        #expect(command.shared.sharedCount == 0)
        #expect(command.name == "n" && command.rest == ["r1", "r2"])
    }

    @Test(
        "a value that does not convert, or fails validation, is a usage error naming it",
        arguments: [
            (["x", "r", "--count", "ten"], "--count takes a whole number, not 'ten'"),
            (["x", "r", "--shared-count", "-1"], "--shared-count must be 0 or more"),
            (["x", "r", "-f", "--device-only"], "--force and --device-only exclude each other"),
            (["x"], "missing argument REST (The rest.)"),
        ]
    )
    func refused(arguments: [String], message: String) {
        let error = #expect(throws: UsageError.self) { _ = try bound(arguments) }
        #expect(error?.message == message)
        #expect(error?.commandPath == ["tool", "sample"])
    }

    @Test("no command declares an option twice, or one of the global options")
    func noClashes() {
        let globals = Set(CofferCommand.globalOptions.map(\.name))
        func visit(_ spec: CommandSpec, _ path: String) {
            let names = spec.options.map(\.name)
            #expect(Set(names).count == names.count, "\(path) declares an option twice: \(names)")
            #expect(globals.isDisjoint(with: names), "\(path) redeclares a global option")
            if let repeating = spec.arguments.firstIndex(where: {
                [.repeating, .optionalRepeating].contains($0.presence)
            }) {
                #expect(repeating == spec.arguments.count - 1, "\(path): a repeating argument must come last")
            }
            for sub in spec.subcommands { visit(sub, path + " " + sub.name) }
        }
        visit(CofferCommand.root, "coffer")
    }
}

@Suite("Output modes")
struct OutputModeTests {
    /// Runs `body` against an output of `mode`, returning what reached standard output and error.
    func capture(_ mode: Output.Mode, _ body: (Output) throws -> Void) rethrows -> (out: String, err: String) {
        let out = Captured()
        let err = Captured()
        let console = Console(
            inputIsTerminal: false,
            errorIsTerminal: false,
            output: { out.append(String(decoding: $0, as: UTF8.self)) },
            error: { err.append($0) }
        )
        try body(Output(mode: mode, console: console))
        return (out.text, err.text)
    }

    @Test("results print as text unless JSON; done lines and status messages vanish when quiet")
    func modes() throws {
        func all(_ output: Output) throws {
            try output.result(["r": 1]) { "result" }
            try output.done(["d": 2]) { "done" }
            try output.status(["s": 3]) { "status" }
            output.note("note")
            output.warning("warning")
        }
        let text = try capture(.text, all)
        #expect(text.out == "result\ndone\n" && text.err == "status\nnote\nwarning\n")
        let quiet = try capture(.quiet, all)
        #expect(quiet.out == "result\n" && quiet.err == "warning\n")
        let json = try capture(.json, all)
        #expect(json.err == "warning\n")
        #expect(json.out.contains("\"r\" : 1") && json.out.contains("\"d\" : 2") && json.out.contains("\"s\" : 3"))
        #expect(!json.out.contains("result"))
    }

    @Test("--json wins over --quiet, and both decide the output for every command")
    func globalsDecide() throws {
        let parser = CommandLineParser(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions)
        for (arguments, mode) in [
            (["ls"], Output.Mode.text), (["ls", "-q"], .quiet), (["--json", "ls"], .json),
            (["-q", "ls", "--json"], .json),
        ] {
            guard
                case .run(_, let invocation) = try parser.parse(
                    arguments,
                    environment: [:],
                    console: ParserTests.console
                )
            else {
                Issue.record("\(arguments) did not parse to a command")
                continue
            }
            let context = CommandContext(invocation: invocation, global: try GlobalOptions.bound(to: invocation))
            #expect(context.output.mode == mode, "\(arguments)")
        }
    }
}

/// Text written from any thread, collected.
private final class Captured: @unchecked Sendable {
    private let lock = NSLock()
    private var collected = ""

    func append(_ text: String) {
        lock.lock()
        collected += text
        lock.unlock()
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }
}
