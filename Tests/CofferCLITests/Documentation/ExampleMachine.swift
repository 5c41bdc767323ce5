import CofferTestSupport
import Foundation
import Glibc

/// One machine of a document's examples (`laptop`, `desktop`, …): a bash shell in namespaces of its
/// own, so the examples run as written, paths and all. Its host name is the machine's, `/home/ann` its
/// own home (the examples' `~`), `/tmp`, `/mnt` and `/srv` its own, and `/media` the USB stick the
/// machines share; all of it lives in the document's sandbox, and none of it touches this machine's
/// files. The shell keeps its state from one command to the next (`export`, `cd`), as a person's would.
///
/// Making the namespaces needs root (`unshare`, `mount`); ``isPossible`` says whether this process can.
final class ExampleMachine {
    /// The machine's name, its host name.
    let name: String
    /// The sandbox's directory, which the shell sees at `/home/.sandbox`.
    let sandbox: URL
    private let process: Process
    private let input: Pipe
    private var count = 0

    /// What one command did.
    struct Outcome {
        let status: Int32
        let output: String
        let error: String
    }

    /// Whether this process may make namespaces and mount file systems (as root, with util-linux).
    static var isPossible: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    }

    /// Starts the machine's shell, its home filled by `furnish`.
    ///
    /// - Parameters:
    ///   - environment: Variables every command sees (`COFFER_PASSPHRASE`, the S3 server's).
    ///   - bin: The directory holding the built `coffer`, first on `PATH` (bound at `/home/.bin`: a
    ///     checkout under `/tmp` is hidden by the machine's own).
    init(
        name: String,
        sandbox: URL,
        bin: URL,
        environment: [String: String],
        furnish: (URL) throws -> Void
    ) throws {
        self.name = name
        self.sandbox = sandbox
        let machine = sandbox.appendingPathComponent("machines/\(name)")
        let manager = FileManager.default
        for directory in ["home", "tmp", "mnt", "srv"] {
            try manager.createDirectory(
                at: machine.appendingPathComponent(directory),
                withIntermediateDirectories: true
            )
        }
        try manager.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: machine.appendingPathComponent("tmp").path)
        try manager.createDirectory(at: sandbox.appendingPathComponent("media/usb"), withIntermediateDirectories: true)
        try furnish(machine.appendingPathComponent("home"))
        try Data().write(to: sandbox.appendingPathComponent("empty"))
        try manager.createDirectory(at: sandbox.appendingPathComponent("exchange"), withIntermediateDirectories: true)

        var exports = [
            "HOME": "/home/ann", "USER": "ann", "LOGNAME": "ann", "LANG": "C.UTF-8", "TZ": "UTC",
            "PATH": "/home/.bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        ]
        exports.merge(environment) { _, new in new }
        let setup = """
            set -e
            hostname \(name)
            mount -t tmpfs -o mode=755 tmpfs /home
            mkdir -p /home/ann /home/.sandbox /home/.bin
            mount --bind \(machine.path)/home /home/ann
            mount --bind \(sandbox.path) /home/.sandbox
            mount --bind \(Self.quoted(bin.path)) /home/.bin
            mount --bind \(machine.path)/mnt /mnt
            mount --bind \(machine.path)/srv /srv
            mount --bind \(sandbox.path)/media /media
            mount --bind \(machine.path)/tmp /tmp
            cd /home/ann
            \(exports.sorted { $0.key < $1.key }.map { "export \($0.key)=\(Self.quoted($0.value))" }.joined(separator: "\n"))
            __run() {
                local __number=$1
                local __files=/home/.sandbox/exchange/\(name)
                { eval "$(cat $__files-command-$__number)"; } \\
                    >$__files-output-$__number 2>$__files-error-$__number </home/.sandbox/empty
                echo $? >$__files-status-$__number.part
                mv $__files-status-$__number.part $__files-status-$__number
            }
            set +e

            """
        try Data(setup.utf8).write(to: machine.appendingPathComponent("setup.sh"))

        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "--mount", "--uts", "--pid", "--fork", "--mount-proc", "--kill-child",
            "/bin/bash", "--noprofile", "--norc", "-s",
        ]
        process.environment = [
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", Products.weakenKDF.name: Products.weakenKDF.value,
        ]
        input = Pipe()
        process.standardInput = input
        let log = machine.appendingPathComponent("shell.log")
        try Data().write(to: log)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        try send("source \(machine.path)/setup.sh")
        let ready = try run("true", timeout: 60)
        guard ready.status == 0 else {
            let shell = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw ProductError(description: "the machine \(name) did not start: \(shell)")
        }
    }

    deinit { stop() }

    /// Ends the shell, and with it every process it started (the PID namespace ends).
    func stop() {
        try? input.fileHandleForWriting.close()
        guard process.isRunning else { return }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// Runs `command` as the shell would, and returns its status and output once it ends (a command
    /// sent to the background ends at once: `waitingFor` then says what to wait for in its output, up
    /// to 15 seconds).
    func run(_ command: String, timeout: TimeInterval = 180, waitingFor: ((String) -> Bool)? = nil) throws -> Outcome {
        count += 1
        let number = count
        let file = { (kind: String) in self.sandbox.appendingPathComponent("exchange/\(self.name)-\(kind)-\(number)") }
        try Data(command.utf8).write(to: file("command"))
        try send("__run \(number)")
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: file("status").path) {
            guard process.isRunning, Date() < deadline else {
                throw ProductError(description: "\(name)$ \(command): no end after \(Int(timeout)) seconds")
            }
            usleep(20_000)
        }
        var outcome = try read(number)
        if let waitingFor {
            let until = Date().addingTimeInterval(15)
            while !waitingFor(outcome.output + "\n" + outcome.error), Date() < until {
                usleep(100_000)
                outcome = try read(number)
            }
        }
        return outcome
    }

    private func read(_ number: Int) throws -> Outcome {
        let file = { (kind: String) in self.sandbox.appendingPathComponent("exchange/\(self.name)-\(kind)-\(number)") }
        let status = try String(contentsOf: file("status"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        return Outcome(
            status: Int32(status) ?? -1,
            output: String(decoding: (try? Data(contentsOf: file("output"))) ?? Data(), as: UTF8.self),
            error: String(decoding: (try? Data(contentsOf: file("error"))) ?? Data(), as: UTF8.self)
        )
    }

    private func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// `text` in single quotes for bash.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
