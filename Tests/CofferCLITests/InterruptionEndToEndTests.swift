import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Ctrl-C through the built `coffer`: an interrupted command releases what it held and says so before
/// it ends, killed by the signal as a shell expects; `gc` is left with nothing to do.
@Suite("Ctrl-C: an interrupted put, get, backup or restore releases what it held and ends by the signal")
struct InterruptionEndToEndTests {
    let cli: CLIHarness

    init() throws { cli = try CLIHarness() }

    /// The number of chunks `stats --json` reports.
    func storedChunks() throws -> Int {
        let stats = try #require(try cli.json(["stats"]) as? [String: Any])
        return try #require(stats["chunks"] as? Int)
    }

    /// Sends SIGINT to `process` and waits for it to end; after 30 s it is killed and the test fails
    /// (a stop that is never seen must not hang the suite).
    func interrupt(_ process: Process) {
        kill(process.processIdentifier, SIGINT)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            Issue.record("coffer \(process.arguments ?? []) did not end within 30 s of SIGINT")
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    /// Waits (up to 30 s) until `condition` holds.
    func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(30)
        while try !condition() {
            try #require(Date() < deadline, "timed out waiting until \(what)")
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    @Test("a put reading an idle pipe stops at Ctrl-C, releases every chunk it wrote, and ends by SIGINT")
    func interruptedPut() throws {
        let running = try cli.start(["put", "big", "-"])
        let (put, input, error) = (running.process, running.input, running.error)
        // 24 MiB of incompressible bytes, then the pipe stays open and idle: the put waits in read().
        for _ in 0..<24 {
            input.fileHandleForWriting.write(
                try RandomBytes.data(count: 1 << 20)
            )
        }
        try waitUntil("the put has committed chunks") { try storedChunks() > 0 }
        interrupt(put)
        let message = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(put.terminationReason == .uncaughtSignal, "\(message)")
        #expect(put.terminationStatus == SIGINT)
        #expect(message.contains("interrupted (Ctrl-C); nothing was stored"), "\(message)")
        #expect(message.contains("was released"), "\(message)")
        #expect(try storedChunks() == 0)
        let gc = try cli.run(["gc"])
        #expect(gc.output.contains("Freed 0 chunks") && gc.output.contains("0 abandoned writes"), "\(gc.output)")
        #expect(try cli.run(["get", "big", "-"]).status == 1)
    }

    @Test("a backup stopped by Ctrl-C midway releases every chunk it stored and records no snapshot")
    func interruptedBackup() throws {
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<4 {
            try RandomBytes.data(count: 50_000_000).write(to: tree.appendingPathComponent("part\(index)"))
        }
        // zstd's level 19 on incompressible bytes runs at some 35 MB/s here: about six seconds to stop in.
        let running = try cli.start(["backup", tree.path, "--compression", "19"])
        try waitUntil("the backup has committed chunks") { try storedChunks() > 0 || !running.process.isRunning }
        try #require(running.process.isRunning, "the backup ended before it could be interrupted")
        interrupt(running.process)
        let message = String(decoding: running.error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(running.process.terminationReason == .uncaughtSignal, "\(message)")
        #expect(message.contains("interrupted (Ctrl-C); nothing was stored"), "\(message)")
        #expect(try storedChunks() == 0)
        #expect(try cli.run(["snapshots"]).error.contains("No snapshots yet"))
    }

    @Test("a get whose reader stalls stops at Ctrl-C, naming the interruption, and ends by SIGINT")
    func interruptedGet() throws {
        let file = cli.directory.path("content")
        try Data((0..<8_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }).write(to: file)
        #expect(try cli.run(["put", "content", file.path]).status == 0)
        // Nobody reads the output pipe: the get fills it and waits in write().
        let running = try cli.start(["get", "content", "-"])
        let (get, error) = (running.process, running.error)
        Thread.sleep(forTimeInterval: 1.5)
        interrupt(get)
        let message = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(get.terminationReason == .uncaughtSignal, "\(message)")
        #expect(message.contains("interrupted (Ctrl-C)"), "\(message)")
    }

    @Test("Ctrl-C while a command that cannot stop midway runs ends it at once, as the signal would")
    func notCancellable() throws {
        // `item add` reading its value from a pipe that stays open: not a cancellable command.
        let add = try cli.start(["item", "add", "--service", "s", "--account", "a", "--value-file", "-"]).process
        Thread.sleep(forTimeInterval: 1)
        interrupt(add)
        #expect(add.terminationReason == .uncaughtSignal)
        #expect(add.terminationStatus == SIGINT)
        #expect(try cli.run(["item", "find"]).output.contains("s") == false)
    }

    /// The names under `directory` that a restore gives files while it writes them.
    func temporaryNames(_ directory: URL) throws -> [String] {
        try Products.run(URL(fileURLWithPath: "/usr/bin/find"), [directory.path, "-name", ".coffer-restore-*"])
            .output.split(separator: "\n").map(String.init)
    }

    /// Every regular file under `directory`, relative, with its SHA-256.
    func contents(_ directory: URL) throws -> [String: String] {
        let listed = try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", "cd '\(directory.path)' && find . -type f -exec sha256sum {} +"]
        )
        var result: [String: String] = [:]
        for line in listed.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            result[String(parts[1].drop(while: { $0 == " " }).dropFirst(2))] = String(parts[0])
        }
        return result
    }

    /// Eight files of 40 MB that do not compress, backed up as `tree`: a restore long enough to stop
    /// midway.
    func backUpRestoreTree() throws -> URL {
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<8 {
            try RandomBytes.data(count: 40_000_000).write(to: tree.appendingPathComponent("part\(index)"))
        }
        #expect(try cli.run(["backup", tree.path, "--name", "tree", "-q"]).status == 0)
        return tree
    }

    /// Starts `coffer restore tree TARGET` and stops it with `signal` once a file is being written
    /// under a temporary name.
    func restoreStopped(by signal: Int32, into target: URL) throws -> (Process, String) {
        let running = try cli.start(["restore", "tree", target.path])
        try waitUntil("the restore writes a file") {
            guard running.process.isRunning else { return true }
            return !(try temporaryNames(target).isEmpty)
        }
        try #require(running.process.isRunning, "the restore ended before it could be stopped")
        if signal == SIGINT {
            interrupt(running.process)
        } else {
            kill(running.process.processIdentifier, signal)
            running.process.waitUntilExit()
        }
        let message = String(decoding: running.error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (running.process, message)
    }

    @Test(
        "a restore stopped by Ctrl-C leaves no temporary or partial file, says so, and the same restore then completes it"
    )
    func interruptedRestore() throws {
        let tree = try backUpRestoreTree()
        let source = try contents(tree)
        let target = cli.directory.path("target")
        let (restore, message) = try restoreStopped(by: SIGINT, into: target)
        #expect(restore.terminationReason == .uncaughtSignal, "\(message)")
        #expect(restore.terminationStatus == SIGINT)
        #expect(message.contains("interrupted (Ctrl-C)"), "\(message)")
        #expect(message.contains("no partial file is left"), "\(message)")
        #expect(message.contains("running the same restore again completes it"), "\(message)")
        #expect(try temporaryNames(target).isEmpty)
        // Whatever sits under a final name is whole.
        let partial = try contents(target)
        #expect(partial.count < source.count, "the restore was not stopped midway")
        for (path, digest) in partial { #expect(source[path] == digest, "\(path) is not whole") }
        // The target is not empty now; the default --overwrite always takes it and finishes the job.
        let again = try cli.run(["restore", "tree", target.path])
        #expect(again.status == 0, "\(again.error)")
        #expect(try contents(target) == source)
        #expect(try temporaryNames(target).isEmpty)
    }

    @Test("a restore killed outright leaves its temporary file; the next restore there removes it and completes")
    func killedRestore() throws {
        let tree = try backUpRestoreTree()
        let target = cli.directory.path("target")
        let (restore, _) = try restoreStopped(by: SIGKILL, into: target)
        #expect(restore.terminationReason == .uncaughtSignal && restore.terminationStatus == SIGKILL)
        #expect(!(try temporaryNames(target).isEmpty), "SIGKILL runs no clean-up: its temporary file stays")
        let again = try cli.run(["restore", "tree", target.path])
        #expect(again.status == 0, "\(again.error)")
        #expect(try temporaryNames(target).isEmpty)
        #expect(try contents(target) == contents(tree))
    }
}
