import CofferCLI
import CofferTestSupport
import Foundation
import Glibc
import Testing

@testable import Coffer

/// Bad input at the CLI (issue 8): every command, given an unknown flag, missing arguments, a
/// directory that is not a vault, a vault of a newer format, or names and values it cannot take,
/// exits 1 or 64 with a message that names the problem, and the vault's file is byte for byte as it
/// was.
@Suite("Bad input at the CLI: every command refuses it by name, with exit 1 or 64, and changes nothing")
struct BadInputTests {
    let cli: CLIHarness
    var scratch: URL { cli.directory.path("scratch") }
    var dataFile: URL { cli.directory.path("vault").appendingPathComponent("data.mdb") }

    /// Settings a remote command needs before it opens the vault.
    static let s3Environment = [
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
    ]

    init() throws {
        cli = try CLIHarness()
        try FileManager.default.createDirectory(
            at: cli.directory.path("scratch/tree"),
            withIntermediateDirectories: true
        )
        try Data("some content".utf8).write(to: cli.directory.path("scratch/tree/file.txt"))
        #expect(try cli.run(["put", "blob", cli.directory.path("scratch/tree/file.txt").path]).status == 0)
        #expect(try cli.run(["item", "add", "--service", "mail", "--account", "ann", "--value", "v"]).status == 0)
        #expect(try cli.run(["backup", cli.directory.path("scratch/tree").path, "--name", "tree"]).status == 0)
        // A join request from another machine, for `device approve`.
        let requesting = ["COFFER_VAULT": cli.directory.path("requesting").path]
        let request = cli.directory.path("scratch/request").path
        let groupBundle = cli.directory.path("scratch/group.bundle").path
        #expect(try cli.run(["export", "--out", groupBundle]).status == 0)
        #expect(
            try cli.run(["init", "--request-join", request, "--group", groupBundle], extra: requesting).status == 0
        )
    }

    /// For every command: arguments that would make it do its job on this vault.
    var samples: [String: [String]] {
        let file = scratch.appendingPathComponent("tree/file.txt").path
        let out = scratch.appendingPathComponent("out").path
        let bundle = scratch.appendingPathComponent("b.bundle").path
        return [
            "init": ["init"], "info": ["info"],
            "item add": ["item", "add", "--service", "s", "--account", "a", "--value", "v"],
            "item get": ["item", "get", "--service", "mail", "--account", "ann"], "item find": ["item", "find"],
            "item update": ["item", "update", "--service", "mail", "--value", "new"],
            "item delete": ["item", "delete", "--service", "mail"], "put": ["put", "other", file],
            "get": ["get", "blob", out], "ls": ["ls"], "rm": ["rm", "blob"], "mv": ["mv", "blob", "renamed"],
            "stat": ["stat", "blob"], "backup": ["backup", scratch.appendingPathComponent("tree").path],
            "snapshots": ["snapshots"], "show": ["show", "tree"], "restore": ["restore", "tree", out],
            "forget": ["forget", "tree"], "diff": ["diff", "tree", "tree"], "export": ["export", "--out", bundle],
            "find": ["find", "*.txt"], "dump": ["dump", "tree", "."], "mount": ["mount", scratch.path],
            "import": ["import", bundle], "push": ["push", "s3://bucket/p"], "pull": ["pull", "s3://bucket/p"],
            "remote compact": ["remote", "compact", "s3://bucket/p"], "offload": ["offload", "s3://bucket/p"],
            "item upsert": ["item", "upsert", "--service", "s", "--account", "a", "--value", "v"],
            "gc": ["gc"], "compact": ["compact"], "verify": ["verify"], "repair": ["repair"], "stats": ["stats"],
            "passwd": ["passwd"],
            "rekey": ["rekey"],
            "key export": ["key", "export"], "device show": ["device", "show"],
            "devices": ["devices"],
            "device approve": ["device", "approve", scratch.appendingPathComponent("request").path, "--yes"],
            "device revoke": ["device", "revoke", "00000000"], "group rotate": ["group", "rotate"],
            "group set": ["group", "set", "--join", "approval"], "group new": ["group", "new"],
            "write-only enable": ["write-only", "enable"], "write-only disable": ["write-only", "disable"],
            "write-only status": ["write-only", "status"], "snapshot adopt": ["snapshot", "adopt", "000000"],
            "completion": ["completion", "bash"],
        ]
    }

    /// Commands that never open a vault, and so work wherever `--vault` points.
    static let vaultFree: Set = ["completion"]

    /// The samples of the commands that open the vault.
    var vaultSamples: [(key: String, value: [String])] {
        samples.sorted(by: { $0.key < $1.key }).filter { !Self.vaultFree.contains($0.key) }
    }

    /// Bad values of single options (issue 39): the arguments, the exit status, and what the message
    /// must name.
    var badOptionSamples: [(arguments: [String], status: Int32, mentioning: String, extra: [String: String])] {
        let out = scratch.appendingPathComponent("out").path
        let tree = scratch.appendingPathComponent("tree").path
        let newYork = ["TZ": "America/New_York"]
        return [
            (["restore", "tree", out, "--overwrite", "sometimes"], 64, "always, if-changed, if-newer, never", [:]),
            (["restore", "tree", out, "--target", out], 64, "not both", [:]),
            (["restore", "tree", "--target", "/", "--delete"], 1, "give `--include` or `--exclude` patterns", [:]),
            (
                ["restore", "tree", "--target", "/", "--delete", "--dry-run"], 1,
                "give `--include` or `--exclude` patterns", [:]
            ),
            (["backup", tree, "--time", "2026-03-08 02:30:00"], 64, "does not exist in this time zone", newYork),
            (["find", "*.txt", "--newest", "2026-03-08 02:00"], 64, "from 02:00 straight to 03:00", newYork),
            (["backup", tree, "--time", "2026-02-30 10:00"], 64, "takes a time like", [:]),
        ]
    }

    /// Every runnable command's path, from the command tree itself.
    static var commandPaths: [String] {
        func walk(_ spec: CommandSpec, _ prefix: [String]) -> [String] {
            let path = prefix + [spec.name]
            let here = spec.run == nil ? [] : [path.dropFirst().joined(separator: " ")]
            return here + spec.subcommands.flatMap { walk($0, path) }
        }
        return walk(CofferCommand.root, [])
    }

    /// Runs a command that must fail; checks the status, the message and that the vault file is unchanged.
    func expectRefused(
        _ arguments: [String],
        status: Int32,
        mentioning text: String,
        extra: [String: String] = [:]
    ) throws {
        let before = try Data(contentsOf: dataFile)
        let result = try cli.run(arguments, extra: Self.s3Environment.merging(extra) { _, new in new })
        let command = arguments.joined(separator: " ")
        #expect(result.status == status, "coffer \(command): status \(result.status), \(result.error)")
        #expect(result.error.contains(text), "coffer \(command): \(result.error)")
        #expect(try Data(contentsOf: dataFile) == before, "coffer \(command) changed the vault")
    }

    @Test("Every command has a sample here, so a new command cannot escape the sweep")
    func everyCommandCovered() {
        #expect(Set(Self.commandPaths) == Set(samples.keys))
    }

    @Test("An unknown flag: exit 64 naming the flag, for every command")
    func unknownFlags() throws {
        for (_, arguments) in samples.sorted(by: { $0.key < $1.key }) {
            try expectRefused(arguments + ["--no-such-flag"], status: 64, mentioning: "--no-such-flag")
        }
    }

    @Test("Bad option values: exit 1 or 64 naming the problem, the vault and the target unchanged")
    func badOptionValues() throws {
        for sample in badOptionSamples {
            try expectRefused(
                sample.arguments,
                status: sample.status,
                mentioning: sample.mentioning,
                extra: sample.extra
            )
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.appendingPathComponent("out").path))
    }

    @Test("Missing arguments: exit 64 naming the argument, for every command that takes some")
    func missingArguments() throws {
        var checked = 0
        func visit(_ spec: CommandSpec, _ path: [String]) throws {
            if spec.run != nil, let first = spec.arguments.first(where: { !$0.isOptional }) {
                try expectRefused(path, status: 64, mentioning: "missing argument \(first.name)")
                checked += 1
            }
            for sub in spec.subcommands { try visit(sub, path + [sub.name]) }
        }
        for sub in CofferCommand.root.subcommands { try visit(sub, [sub.name]) }
        #expect(checked >= 10)
    }

    @Test("A directory that is not a vault, and a vault of a newer format: exit 1, named, nothing written")
    func wrongVaults() throws {
        let other = cli.directory.path("not-a-vault")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("notes".utf8).write(to: other.appendingPathComponent("notes.txt"))
        for (name, arguments) in vaultSamples {
            let result = try cli.run(
                arguments,
                extra: Self.s3Environment.merging(["COFFER_VAULT": other.path]) { _, new in new }
            )
            #expect(result.status == 1, "\(name): \(result.status) \(result.error)")
            let expected = name == "init" ? "not empty" : "not a Coffer vault"
            #expect(result.error.contains(expected), "\(name): \(result.error)")
        }
        #expect(TemporaryDirectory.listing(other) == ["notes.txt"])

        let environment = try Environment(directory: cli.directory.path("vault"), options: .init())
        let schema = try Schema(environment: environment, create: false)
        try environment.write {
            try $0.put(
                schema.meta,
                key: Array("format".utf8),
                value: withUnsafeBytes(of: (Schema.formatVersion + 1).bigEndian) { Array($0) }
            )
        }
        environment.close()
        // repair works below the vault format, on LMDB's meta pages, and finds them sound.
        for (name, arguments) in vaultSamples where name != "init" && name != "repair" {
            try expectRefused(arguments, status: 1, mentioning: "upgrade Coffer")
        }
    }

    @Test("A vault this user may not write: exit 1 saying write access is needed, for every command; nothing changed")
    func readOnlyVault() throws {
        let vault = cli.directory.path("vault")
        let files = ["data.mdb", "lock.mdb"].map { vault.appendingPathComponent($0).path }
        let manager = FileManager.default
        // Root may write anything whatever the modes, so as root the commands run as `nobody`, who owns
        // the vault but, by its modes, may only read it.
        let asRoot = getuid() == 0
        let nobody = 65534
        if asRoot {
            for path in files + [vault.path] {
                try manager.setAttributes([.ownerAccountID: nobody], ofItemAtPath: path)
            }
        }
        for path in files { try manager.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path) }
        try manager.setAttributes([.posixPermissions: 0o500], ofItemAtPath: vault.path)
        defer {
            try? manager.setAttributes([.posixPermissions: 0o700, .ownerAccountID: getuid()], ofItemAtPath: vault.path)
            for path in files {
                try? manager.setAttributes([.posixPermissions: 0o600, .ownerAccountID: getuid()], ofItemAtPath: path)
            }
        }
        let before = try Data(contentsOf: dataFile)
        for (name, arguments) in vaultSamples where name != "init" && name != "repair" {
            let environment = cli.environment.merging(Self.s3Environment) { _, new in new }
            let result =
                asRoot
                ? try Products.run(
                    URL(fileURLWithPath: "/usr/bin/setpriv"),
                    ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", cli.coffer.path] + arguments,
                    environment: environment
                )
                : try Products.run(cli.coffer, arguments, environment: environment)
            #expect(result.status == 1, "\(name): \(result.status) \(result.error)")
            #expect(result.error.contains("give this user write access"), "\(name): \(result.error)")
        }
        #expect(try Data(contentsOf: dataFile) == before)
        #expect(
            TemporaryDirectory.listing(vault) == [
                "commit-record", "data.mdb", "lock.mdb", "space-reserve", "trees-checked",
            ]
        )
    }

    @Test("Names that are not UTF-8, and values over the limits: exit 1 or 64 naming the problem")
    func namesAndSizes() throws {
        let file = scratch.appendingPathComponent("tree/file.txt").path
        // The shell passes bytes that are not UTF-8 as the process's arguments.
        let shell = URL(fileURLWithPath: "/bin/bash")
        let before = try Data(contentsOf: dataFile)
        for script in [
            "\"$COFFER\" put $'bad\\xff\\xfename' \"$FILE\"",
            "\"$COFFER\" item add --service $'\\xc3\\x28' --account a --value v",
        ] {
            let result = try Products.run(
                shell,
                ["-c", script],
                environment: cli.environment.merging(["COFFER": cli.coffer.path, "FILE": file]) { _, new in new }
            )
            #expect(result.status == 1 || result.status == 64, "\(script): \(result.status)")
            #expect(result.error.contains("UTF-8"), "\(script): \(result.error)")
        }
        #expect(try Data(contentsOf: dataFile) == before)
        try expectRefused(
            ["item", "add", "--service", "big", "--account", "a", "--value", String(repeating: "x", count: 20_000)],
            status: 1,
            mentioning: "blob"
        )
        try expectRefused(["put", String(repeating: "n", count: 5_000), file], status: 1, mentioning: "name")
    }

    @Test("Output on a full disk (/dev/full): exit 1 saying so, for results on standard output and a get to a file")
    func fullOutput() throws {
        // Some sandboxes make /dev entries ordinary files (see Products.nullDevice); /dev/full must
        // be the device that refuses every write with ENOSPC.
        var status = stat()
        guard stat("/dev/full", &status) == 0, status.st_mode & S_IFMT == S_IFCHR else {
            Issue.record("/dev/full is not the full device here; this test needs it")
            return
        }
        let shell = URL(fileURLWithPath: "/bin/bash")
        let before = try Data(contentsOf: dataFile)
        for script in [
            "\"$COFFER\" ls > /dev/full", "\"$COFFER\" --help > /dev/full", "\"$COFFER\" get blob > /dev/full",
        ] {
            let result = try Products.run(
                shell,
                ["-c", script],
                environment: cli.environment.merging(["COFFER": cli.coffer.path]) { _, new in new }
            )
            // Foundation's non-throwing write had stopped the process with a crash (exit 132).
            #expect(result.status == 1, "\(script): \(result.status) \(result.error)")
            #expect(result.error.contains("disk is full"), "\(script): \(result.error)")
        }
        let get = try cli.run(["get", "blob", "/dev/full"])
        #expect(get.status == 1)
        #expect(get.error.contains("disk is full"), "\(get.error)")
        #expect(try Data(contentsOf: dataFile) == before)
    }
}
