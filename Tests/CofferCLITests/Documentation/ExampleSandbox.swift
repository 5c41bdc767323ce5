import CofferTestSupport
import Foundation

/// The world a document's examples run in: one ``ExampleMachine`` for each machine its prompts name,
/// each with the same files in its home (the ones the examples back up and store), a USB stick they
/// share, and, when an example names an `s3://` remote, the test process's S3 server (SeaweedFS),
/// its bucket names made the document's own. Commands run in document order; a short id a command
/// showed (`Snapshot 3f9c2a71 …`) stands for the one the sandbox printed when a later command names it.
final class ExampleSandbox {
    /// The passphrase every machine's `COFFER_PASSPHRASE` holds.
    static let passphrase = "a passphrase for the examples"

    let document: DocumentationExample
    private let directory: TemporaryDirectory
    private let bin: URL
    private var machines: [String: ExampleMachine] = [:]
    private var environment: [String: String] = ["COFFER_PASSPHRASE": ExampleSandbox.passphrase]
    /// Shown ids, and the ids the sandbox printed in their place.
    private var ids: [String: String] = [:]
    /// The bucket suffix that keeps this document's remotes apart from other documents'.
    private let bucketSuffix: String

    init(_ document: DocumentationExample) throws {
        self.document = document
        directory = try TemporaryDirectory()
        bin = try Products.executable("coffer").deletingLastPathComponent()
        bucketSuffix = "-" + document.path.lowercased().filter { $0.isLetter || $0.isNumber }
        if document.commands.contains(where: { $0.text.contains("s3://") }) {
            environment.merge(try SeaweedFS.shared().environment) { _, new in new }
        }
    }

    deinit {
        for machine in machines.values { machine.stop() }
    }

    /// Runs every command of the document; returns what went wrong, one message a problem. With
    /// `COFFER_EXAMPLE_TRANSCRIPTS=DIR` in the environment, each document's commands and what they
    /// printed are also written to a file in DIR, for whoever writes the examples.
    func run() throws -> [String] {
        var problems: [String] = []
        for command in document.commands {
            problems += try run(command)
        }
        if let folder = ProcessInfo.processInfo.environment["COFFER_EXAMPLE_TRANSCRIPTS"], !folder.isEmpty {
            let name = document.path.replacing("/", with: "-") + ".transcript"
            try Data(transcript.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
        }
        return problems
    }

    /// Each command run so far, and what it printed.
    private var transcript = ""

    private func machine(_ name: String) throws -> ExampleMachine {
        if let machine = machines[name] { return machine }
        let machine = try ExampleMachine(
            name: name,
            sandbox: directory.url,
            bin: bin,
            environment: environment,
            furnish: Self.furnish
        )
        machines[name] = machine
        return machine
    }

    private func run(_ command: DocumentationExample.Command) throws -> [String] {
        let patterns = try command.shown.map(ShownOutputPattern.init)
        var text = command.text
        for (shown, actual) in ids { text = text.replacing(shown, with: actual) }
        text = text.replacing(/s3:\/\/([a-z0-9-]+)/) { "s3://\($0.1)\(bucketSuffix)" }
        let background = text.trimmingCharacters(in: .whitespaces).hasSuffix("&")
        let outcome = try machine(command.host).run(
            text,
            waitingFor: background
                ? { output in
                    patterns.allSatisfy { pattern in self.lines(output).contains { pattern.match($0) != nil } }
                }
                : nil
        )
        let printed = lines(outcome.output) + lines(outcome.error)
        transcript += "\(command.host)$ \(text)\n" + printed.map { $0 + "\n" }.joined() + "[exit \(outcome.status)]\n"
        var problems: [String] = []
        let fails = command.shown.contains { $0.hasPrefix("coffer: error:") }
        if fails ? outcome.status == 0 : outcome.status != 0 {
            problems.append(
                "\(document.path) \(command): exit status \(outcome.status) (the document shows "
                    + "\(fails ? "a failure" : "success")); it printed:\n\(printed.joined(separator: "\n"))"
            )
        }
        for pattern in patterns {
            guard let bound = printed.lazy.compactMap({ pattern.match($0) }).first else {
                problems.append(
                    "\(document.path) \(command): the document shows '\(pattern.shown)', which it did not "
                        + "print; it printed:\n\(printed.joined(separator: "\n"))"
                )
                continue
            }
            ids.merge(bound) { old, _ in old }
        }
        return problems
    }

    /// The lines of `text`, with this document's bucket names as the document writes them.
    private func lines(_ text: String) -> [String] {
        text.replacing(bucketSuffix + "/", with: "/").split(separator: "\n").map(String.init)
    }

    /// Fills a machine's directory: its home (`/home/ann`) with the files the examples use, and `/srv`.
    static func furnish(_ home: URL) throws {
        let files: [String: Data] = [
            "docs/report.pdf": Data("%PDF-1.4 the quarterly report\n".utf8) + SplitMix64.data(20_000, seed: 1),
            "docs/notes.txt": Data("notes\n".utf8),
            "docs/a.txt": Data("a\n".utf8),
            "docs/draft.tmp": Data("a draft\n".utf8),
            "docs/2026/plan.txt": Data("the plan for 2026\n".utf8),
            "docs/2026/budget.odt": SplitMix64.data(30_000, seed: 2),
            "cat.jpg": SplitMix64.data(200_000, seed: 3),
            "dog.png": SplitMix64.data(3_000, seed: 4),
            "mail-password.txt": Data("hunter2".utf8),
            "token.txt": Data("ghp_example_token".utf8),
            "new-token.txt": Data("ghp_example_token_2".utf8),
            "pw.txt": Data("an RNCryptor password\n".utf8),
            "old/letters/1998.txt": Data("an old letter\n".utf8),
            "mail/inbox.mbox": Data("From ann\n".utf8),
            ".config/coffer/excludes": Data("# what backups of ~ leave out\n*.iso\n.cache\n".utf8),
        ]
        for (path, data) in files {
            let url = home.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try data.write(to: url)
        }
        let database = home.deletingLastPathComponent().appendingPathComponent("srv/db")
        try FileManager.default.createDirectory(at: database, withIntermediateDirectories: true)
        try SplitMix64.data(300_000, seed: 5).write(to: database.appendingPathComponent("db.dump"))
    }
}

extension SplitMix64 {
    /// `count` bytes from `seed`, as `Data`.
    static func data(_ count: Int, seed: UInt64) -> Data { Data(bytes(count, seed: seed)) }
}
