import Coffer
import Testing

@testable import CofferCLI

@Suite("Command-line parser")
struct ParserTests {
    static let console = Console(inputIsTerminal: false, errorIsTerminal: false, output: { _ in }, error: { _ in })

    static let tree = CommandSpec(
        name: "tool",
        abstract: "A tool.",
        subcommands: [
            CommandSpec(
                name: "get",
                abstract: "Get a thing.",
                options: [.option("limit", value: "N", help: "How many.")],
                arguments: [
                    ArgumentSpec("NAME", help: "The thing."), ArgumentSpec("OUT", help: "Where.", optional: true),
                ],
                run: { _ in }
            ),
            CommandSpec(
                name: "group",
                abstract: "A group.",
                subcommands: [CommandSpec(name: "leaf", abstract: "A leaf.", run: { _ in })]
            ),
        ]
    )

    static let parser = CommandLineParser(
        root: tree,
        globalOptions: [
            .flag("json", help: "JSON."), .flag("quiet", short: "q", help: "Quiet."),
            .option("vault", value: "DIR", help: "Vault."),
        ]
    )

    func invocation(_ arguments: [String]) throws -> Invocation {
        guard case .run(_, let invocation) = try Self.parser.parse(arguments, environment: [:], console: Self.console)
        else {
            throw UsageError(message: "expected a command to run", commandPath: [])
        }
        return invocation
    }

    @Test("global options work before and after the subcommand, in both value forms")
    func globalsAnywhere() throws {
        for arguments in [["--json", "get", "x"], ["get", "x", "--json"], ["get", "--json", "x"]] {
            let parsed = try invocation(arguments)
            #expect(parsed.flag("json"), "\(arguments)")
            #expect(parsed.arguments == ["x"])
        }
        #expect(try invocation(["--vault", "/a", "get", "x"]).value("vault") == "/a")
        #expect(try invocation(["get", "x", "--vault=/b"]).value("vault") == "/b")
        #expect(try invocation(["get", "x", "--vault=a=b"]).value("vault") == "a=b")
        #expect(try invocation(["-q", "get", "x"]).flag("quiet"))
    }

    @Test("command options, optional arguments and -- to end options")
    func commandOptions() throws {
        let parsed = try invocation(["get", "--limit", "3", "x", "y"])
        #expect(parsed.value("limit") == "3")
        #expect(parsed.arguments == ["x", "y"])
        #expect(parsed.commandPath == ["tool", "get"])
        #expect(try invocation(["get", "--", "--json"]).arguments == ["--json"])
        #expect(try invocation(["group", "leaf"]).commandPath == ["tool", "group", "leaf"])
    }

    @Test(
        "usage errors name the problem",
        arguments: [
            (["get"], "missing argument NAME"),
            (["get", "a", "b", "c"], "unexpected argument 'c'"),
            (["get", "x", "--limit"], "needs a value"),
            (["get", "x", "--nope"], "unknown option '--nope'"),
            (["get", "x", "-z"], "unknown option '-z'"),
            (["get", "x", "--json=1"], "does not take a value"),
            (["frob"], "unknown command 'frob'; the commands are: get, group"),
            (["group"], "needs a subcommand"),
            (["group", "twig"], "unknown command 'twig'"),
        ]
    )
    func usageErrors(arguments: [String], message: String) {
        let error = #expect(throws: UsageError.self) {
            _ = try Self.parser.parse(arguments, environment: [:], console: Self.console)
        }
        #expect(error?.message.contains(message) == true, "\(String(describing: error?.message))")
        #expect(error?.description.contains("--help") == true)
    }

    @Test("-h and --help at every level show that level's help; no arguments shows the root's")
    func help() throws {
        for (arguments, expected) in [
            (["--help"], "USAGE: tool <subcommand>"), (["-h", "get"], "USAGE: tool get [options] NAME [OUT]"),
            (["get", "--help"], "--limit <n>"), (["group", "leaf", "-h"], "OVERVIEW: A leaf."), ([], "SUBCOMMANDS:"),
            (["group", "--help"], "leaf"),
        ] as [([String], String)] {
            guard case .help(let text) = try Self.parser.parse(arguments, environment: [:], console: Self.console)
            else {
                Issue.record("no help for \(arguments)")
                continue
            }
            #expect(text.contains(expected), "\(arguments): \(text)")
            #expect(text.contains("OPTIONS:"))
        }
    }

    @Test("the real command tree has help for every command")
    func realTree() throws {
        let parser = CommandLineParser(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions)
        for path in [["init"], ["info"], ["passwd"], ["key"], ["key", "export"]] {
            guard case .help(let text) = try parser.parse(path + ["--help"], environment: [:], console: Self.console)
            else {
                Issue.record("no help for \(path)")
                continue
            }
            #expect(text.contains("USAGE: coffer \(path.joined(separator: " "))"))
            #expect(text.contains("--passphrase-file"))
        }
    }
}

@Suite("Help examples")
struct HelpExampleTests {
    /// Every runnable command, with its path.
    static func commands(_ spec: CommandSpec = CofferCommand.root, _ path: [String] = []) -> [([String], CommandSpec)] {
        let here = path + [spec.name]
        return (spec.run == nil ? [] : [(here, spec)]) + spec.subcommands.flatMap { commands($0, here) }
    }

    /// The spec at `path` below the root (`["item", "add"]`).
    static func spec(at path: [String]) -> CommandSpec? {
        var spec = CofferCommand.root
        for name in path {
            guard let next = spec.subcommands.first(where: { $0.name == name }) else { return nil }
            spec = next
        }
        return spec
    }

    /// The `coffer …` command at the start of an example, as words: up to a pipe, `&&`, a
    /// redirection or the comment, quotes removed.
    static func words(_ example: String) -> [String]? {
        guard let start = example.range(of: "coffer ") else { return nil }
        var text = String(example[start.upperBound...])
        for end in [" #", " |", " &&", " >"] {
            if let range = text.range(of: end) { text = String(text[..<range.lowerBound]) }
        }
        return text.replacingOccurrences(of: "'", with: "").split(separator: " ").map(String.init)
    }

    @Test("every command shows at least two examples in its help, and the exit statuses")
    func everyCommandHasExamples() {
        for (path, spec) in Self.commands() where path.count > 1 {
            #expect(spec.examples.count >= 2, "\(path.joined(separator: " ")) has \(spec.examples.count) examples")
            let specs = path.indices.dropFirst().map { end in Self.spec(at: Array(path[1...end])) }
            let help = HelpFormatter(globalOptions: CofferCommand.globalOptions).help(
                for: [CofferCommand.root] + specs.compactMap { $0 }
            )
            #expect(help.contains("EXAMPLES:") && help.contains("EXIT STATUS:"), "\(path)")
        }
    }

    @Test("every example is a command line the parser accepts")
    func examplesParse() throws {
        let parser = CommandLineParser(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions)
        var checked = 0
        func visit(_ spec: CommandSpec) throws {
            for example in spec.examples {
                guard let words = Self.words(example) else { continue }
                do {
                    _ = try parser.parse(words, environment: [:], console: ParserTests.console)
                    checked += 1
                } catch {
                    Issue.record("'\(example)': \(error)")
                }
            }
            for sub in spec.subcommands { try visit(sub) }
        }
        try visit(CofferCommand.root)
        #expect(checked >= 60)
    }
}

@Suite("Progress bar")
struct ProgressBarTests {
    @Test("renders a bar, percentage, sizes, rate, elapsed time and ETA")
    func render() {
        let line = ProgressBar.render(label: "backup", completed: 1 << 20, total: 2 << 20, elapsed: 2, columns: 80)
        #expect(line == "backup [########---------]  50%  1.0 MiB / 2.0 MiB  512.0 KiB/s  0:02 ETA 0:02")
        #expect(
            ProgressBar.render(label: "x", completed: 5, total: 5, elapsed: 1, columns: 50, final: true)
                == "x [###############] 100%  5 B / 5 B  5 B/s  0:01"
        )
        #expect(
            ProgressBar.render(label: "scan", completed: 3 << 30, total: nil, elapsed: 0)
                == "scan  3.0 GiB  0 B/s  0:00"
        )
        #expect(
            ProgressBar.render(label: "backup", completed: 3, total: 12, unit: .count("paths"), elapsed: 3)
                .hasSuffix(" 25%  3 / 12 paths  0:03 ETA 0:09")
        )
        #expect(ProgressBar.duration(3725) == "1:02:05")
    }

    @Test("fits any width: never longer than the terminal's width less one, long names cut in the middle")
    func fitsWidth() {
        let name = "put photos/2024/holidays/" + String(repeating: "x", count: 80) + "/IMG_0042.jpg"
        for columns in [20, 30, 40, 60, 80, 120, 160, 250] {
            for total: Int64? in [nil, 5 << 30] {
                let line = ProgressBar.render(
                    label: name,
                    completed: 3 << 30,
                    total: total,
                    elapsed: 7,
                    detail: "1234 paths",
                    columns: columns
                )
                #expect(line.count <= columns - 1 || columns - 1 < 20 && line.count <= 20, "\(columns): \(line)")
                #expect(line.hasPrefix("put p") && line.contains("…"), "\(columns): \(line)")
                if columns >= 40 { #expect(line.contains(total == nil ? "3.0 GiB" : "60%"), "\(columns): \(line)") }
            }
        }
        #expect("abcdefghij".middleTruncated(to: 5) == "ab…ij")
        #expect("short".middleTruncated(to: 10) == "short")
    }

    @Test("draws nothing when standard error is not a terminal")
    func silentWithoutTerminal() {
        let drawn = Drawn()
        let console = Console(
            inputIsTerminal: false,
            errorIsTerminal: false,
            output: { _ in },
            error: { drawn.append($0) }
        )
        let bar = ProgressBar(label: "x", total: 10, console: console, enabled: true)
        bar.update(completed: 5)
        bar.finish()
        #expect(drawn.text.isEmpty)
        let terminal = Console(
            inputIsTerminal: false,
            errorIsTerminal: true,
            output: { _ in },
            error: { drawn.append($0) }
        )
        let shown = ProgressBar(label: "x", total: 10, console: terminal, enabled: true)
        shown.update(completed: 5)
        shown.finish()
        // The update draws the half, and finishing clears the line for the summary that follows.
        #expect(drawn.text.contains("50%") && drawn.text.hasSuffix("\r\u{1B}[K"))
    }

    @Test("byte counts use binary units")
    func byteCounts() {
        #expect(ByteCount.format(0) == "0 B")
        #expect(ByteCount.format(1023) == "1023 B")
        #expect(ByteCount.format(1536) == "1.5 KiB")
        #expect(ByteCount.format(5 << 40) == "5.0 TiB")
    }
}

final class Drawn: @unchecked Sendable {
    private var parts: [String] = []
    func append(_ part: String) { parts.append(part) }
    var text: String { parts.joined() }
}

@Suite("restic's names")
struct ResticHintTests {
    @Test(
        "restic's commands and options get a pointer to coffer's, as a usage error",
        arguments: [
            (["check"], "'coffer verify'"), (["prune"], "'coffer forget' frees what it drops at once"),
            (["-r", "/srv/restic", "snapshots"], "--vault DIR"),
            (["snapshots", "--repo", "/srv/restic"], "--vault DIR"),
            (["backup", "--password-file", "pw", "/x"], "--passphrase-file FILE"),
            (["backup", "-v", "/x"], "-q hides it"),
            (["forget", "--keep-last", "3", "--prune"], "no --prune is needed"),
            (["dump", "x", "y", "--target", "/tmp"], "only 'coffer restore' takes --target"),
        ]
    )
    func hints(arguments: [String], hint: String) {
        let parser = CommandLineParser(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions)
        do {
            _ = try parser.parse(arguments, environment: [:], console: ParserTests.console)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(error.message.contains(hint), "\(arguments): \(error.message)")
            #expect(error.message.hasPrefix("unknown "), "\(error.message)")
        }
    }

    @Test("a hint never hides a real command or option")
    func realNamesWin() throws {
        let names = Set(CofferCommand.root.subcommands.map(\.name))
        #expect(names.isDisjoint(with: ResticHint.commands.keys))
        var options = Set(CofferCommand.globalOptions.map(\.name))
        for path in CofferCommand.root.paths where path.last?.name != "restore" {
            options.formUnion(path.last?.options.map(\.name) ?? [])
        }
        #expect(options.isDisjoint(with: ResticHint.options.keys))
    }
}
