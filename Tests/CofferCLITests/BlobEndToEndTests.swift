import CofferTestSupport
import Foundation
import Glibc
import Testing

@testable import Coffer

/// `coffer put|get|ls|rm|mv|stat|gc|verify|stats` run as a user would.
@Suite("coffer blobs end to end")
struct BlobEndToEndTests {
    let cli: CLIHarness
    var directory: TemporaryDirectory { cli.directory }
    var coffer: URL { cli.coffer }
    var vaultURL: URL { directory.path("vault") }
    var environment: [String: String] { cli.environment }

    init() throws {
        cli = try CLIHarness()
    }

    @discardableResult
    func run(_ arguments: [String]) throws -> Products.Result { try cli.run(arguments) }

    func json(_ arguments: [String]) throws -> Any { try cli.json(arguments) }

    @Test("put, stat, ls, get (whole and a range, to a file and to stdout), mv, rm")
    func lifecycle() throws {
        let input = directory.path("input.bin")
        let content = Data((0..<3_000_000).map { (index: Int) -> UInt8 in UInt8(65 + (index &* 7 &+ index >> 9) % 26) })
        try content.write(to: input)
        let put = try run(["put", "docs/report", input.path])
        #expect(put.status == 0, "\(put.error)")
        #expect(put.error.contains("Stored docs/report"))

        let stat = try #require(try json(["stat", "docs/report"]) as? [String: Any])
        #expect(stat["size"] as? Int == content.count)
        #expect(stat["scope"] as? String == "syncable")

        let output = directory.path("output.bin")
        #expect(try run(["get", "docs/report", output.path]).status == 0)
        #expect(try Data(contentsOf: output) == content)
        let ranged = try run(["get", "docs/report", "--offset", "1000", "--length", "16"])
        #expect(ranged.status == 0)
        #expect(ranged.output == String(decoding: content[1000..<1016], as: UTF8.self))

        #expect(try run(["put", "--device-only", "note", "/etc/hostname"]).status == 0)
        let listed = try #require(try json(["ls"]) as? [[String: Any]])
        #expect(listed.map { $0["name"] as? String } == ["docs/report", "note"])
        #expect(listed.map { $0["scope"] as? String } == ["syncable", "deviceBound"])

        #expect(try run(["mv", "note", "note2"]).status == 0)
        #expect(try run(["rm", "note2"]).status == 0)
        #expect(try run(["rm", "docs/report"]).status == 0)
        let stats = try #require(try json(["stats"]) as? [String: Any])
        #expect(stats["chunks"] as? Int == 0, "deleting the last blob freed every chunk")
    }

    @Test(
        "get to what is already at the path: a link's target replaced and the link kept, a device, a FIFO and /dev/stdout written in place, a directory refused"
    )
    func getToExistingPaths() throws {
        let input = directory.path("input.bin")
        let content = Data(SplitMix64.bytes(5_000_000, seed: 26))
        try content.write(to: input)
        #expect(try run(["put", "blob", input.path]).status == 0)

        // A symbolic link to a regular file: the target gets the blob, the link stays a link.
        let target = directory.path("target.bin")
        try Data("old".utf8).write(to: target)
        let link = directory.path("link.bin")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        #expect(try run(["get", "blob", link.path]).status == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        #expect(try Data(contentsOf: target) == content)

        // A loop of links: refused, the links left as they were.
        let loopA = directory.path("loop-a")
        let loopB = directory.path("loop-b")
        try FileManager.default.createSymbolicLink(atPath: loopA.path, withDestinationPath: loopB.path)
        try FileManager.default.createSymbolicLink(atPath: loopB.path, withDestinationPath: loopA.path)
        let looped = try run(["get", "blob", loopA.path])
        #expect(looped.status == 1)
        #expect(looped.error.contains("cannot write to \(loopA.path)"), "\(looped.error)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: loopA.path) == loopB.path)

        // A directory: refused before anything is written.
        let refused = try run(["get", "blob", directory.url.path])
        #expect(refused.status == 1)
        #expect(refused.error.contains("is a directory"), "\(refused.error)")

        // A named pipe: a reader on the other end gets every byte, and the pipe stays a pipe.
        let fifo = directory.path("pipe")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let received = directory.path("received.bin")
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = ["-c", "cat '\(fifo.path)' > '\(received.path)'"]
        try reader.run()
        #expect(try run(["get", "blob", fifo.path]).status == 0)
        reader.waitUntilExit()
        #expect(try Data(contentsOf: received) == content)
        #expect(Self.fileType(fifo.path) == S_IFIFO)

        // A character device (root only: mknod): a null device stays one.
        if getuid() == 0 {
            let null = directory.path("null")
            // Device 1:3, /dev/null (glibc's makedev is a macro Swift does not import).
            #expect(mknod(null.path, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0)
            #expect(try run(["get", "blob", null.path]).status == 0)
            #expect(Self.fileType(null.path) == S_IFCHR, "the device was replaced")
        }

        // /dev/stdout goes through the descriptor: a shell's >> appends after what is there.
        let appended = directory.path("appended.bin")
        try Data("header\n".utf8).write(to: appended)
        let shell = try Products.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "'\(coffer.path)' get blob /dev/stdout >> '\(appended.path)'"],
            environment: environment
        )
        #expect(shell.status == 0, "\(shell.error)")
        #expect(try Data(contentsOf: appended) == Data("header\n".utf8) + content)
        #expect(
            TemporaryDirectory.listing(directory.url).allSatisfy { !$0.contains(".coffer-") },
            "a temporary is left"
        )
    }

    static func fileType(_ path: String) -> mode_t {
        var status = stat()
        guard lstat(path, &status) == 0 else { return 0 }
        return status.st_mode & S_IFMT
    }

    @Test("bad input fails with exit 1 and a message naming the problem, changing nothing")
    func badInput() throws {
        let missing = try run(["get", "nothing"])
        #expect(missing.status == 1)
        #expect(missing.error.contains("no blob named 'nothing'"))
        let noFile = try run(["put", "x", directory.path("absent").path])
        #expect(noFile.status == 1)
        #expect(noFile.error.contains("does not exist"))
        let level = try run(["put", "--compression", "99", "x", "/etc/hostname"])
        #expect(level.status == 64)
        #expect(level.error.contains("a zstd level from 1 to 19, not '99'"))
        let range = try run(["put", "y", "/etc/hostname"])
        #expect(range.status == 0)
        let past = try run(["get", "y", "--offset", "999999"])
        #expect(past.status == 1)
        #expect(past.error.contains("past the end"))
        let usage = try run(["put"])
        #expect(usage.status == 64)
        let listed = try #require(try json(["ls"]) as? [[String: Any]])
        #expect(listed.map { $0["name"] as? String } == ["y"])
    }

    @Test("damage is reported by get (exit 1, naming the blob) and by verify --read-data")
    func damage() throws {
        let input = directory.path("input.bin")
        try Data(SecureRandom.bytes(count: 1_000_000)).write(to: input)
        #expect(try run(["put", "victim", input.path]).status == 0)
        #expect(try run(["put", "bystander", "/etc/hostname"]).status == 0)
        #expect(try run(["verify", "--read-data"]).status == 0)
        // Flip one byte in the middle of one of the victim's chunk records.
        let vault = try Vault.open(at: vaultURL)
        try vault.unlock(passphrase: "pw")
        let keys = try vault.keyRing()
        try vault.environment.write { (txn) throws in
            let found = try BlobStore(schema: vault.schema).require("victim", keys: keys, cipher: try AESGCM(), in: txn)
            guard case .inline(let entries) = found.manifest.chunks else { return }
            var record = try #require(try vault.schema.records.record(entries[2].id, in: txn))
            record[record.count / 2] ^= 0xFF
            try vault.schema.records.put(entries[2].id, record, in: txn)
        }
        vault.close()
        let get = try run(["get", "victim", directory.path("out").path])
        #expect(get.status == 1)
        #expect(get.error.contains("blob 'victim' is damaged"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("out").path), "no partial output is left")
        let verify = try run(["verify", "--read-data"])
        #expect(verify.status == 1)
        #expect(verify.output.contains("damaged: blob 'victim'"))
        #expect(!verify.output.contains("'bystander'"))
        #expect(try run(["get", "bystander"]).status == 0)
    }

    @Test("RNCryptor files come in (HMAC checked first) and go out")
    func rncryptor() throws {
        let input = directory.path("notes.txt")
        try Data(String(repeating: "RNCryptor interop line\n", count: 5000).utf8).write(to: input)
        #expect(try run(["put", "notes", input.path]).status == 0)
        let password = ["COFFER_RNCRYPTOR_PASSWORD": "correct horse"]
        let exported = directory.path("notes.rncryptor")
        let out = try cli.run(["get", "notes", "--to-rncryptor", exported.path], extra: password)
        #expect(out.status == 0, "\(out.error)")
        let bytes = try Data(contentsOf: exported)
        #expect(bytes.prefix(2) == Data([3, 1]), "version 3, password-based")
        let back = try cli.run(["put", "notes-again", "--from-rncryptor", exported.path], extra: password)
        #expect(back.status == 0, "\(back.error)")
        #expect(try run(["get", "notes-again"]).output == (try String(contentsOf: input, encoding: .utf8)))
        let wrong = try cli.run(
            ["put", "nope", "--from-rncryptor", exported.path],
            extra: ["COFFER_RNCRYPTOR_PASSWORD": "wrong"]
        )
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("HMAC does not match"))
        let missing = try run(["put", "nope", "--from-rncryptor", exported.path])
        #expect(missing.status == 1)
        #expect(missing.error.contains("no RNCryptor password given"))
        let listed = try #require(try json(["ls"]) as? [[String: Any]])
        #expect(listed.map { $0["name"] as? String } == ["notes", "notes-again"])
    }

    @Test("put NAME with no file refuses (exit 64) rather than store standard input; '-' reads it")
    func putNeedsAFile() throws {
        let refused = try cli.run(["put", "gpl.txt"])
        #expect(refused.status == 64, "\(refused.error)")
        #expect(refused.error.contains("coffer put gpl.txt gpl.txt"), "\(refused.error)")
        #expect(try cli.run(["ls", "--json"]).output.contains("gpl.txt") == false)
        let piped = try Products.run(
            cli.coffer,
            ["put", "notes", "-"],
            environment: cli.environment,
            input: "from a pipe"
        )
        #expect(piped.status == 0, "\(piped.error)")
        #expect(try cli.run(["get", "notes"]).output == "from a pipe")
    }

    @Test("a writer killed mid-blob leaves no visible blob, and gc reclaims its chunks")
    func killedWriter() throws {
        signal(SIGPIPE, SIG_IGN)  // should the child die early, a write to its pipe must fail, not kill us
        let process = Process()
        process.executableURL = coffer
        process.arguments = ["put", "interrupted", "-"]
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = Products.nullDevice()
        process.standardError = Products.nullDevice()
        try process.run()
        // Feed more than one commit batch (16 MiB), then wait until the writer has committed one.
        let piece = Data(SecureRandom.bytes(count: 1 << 20))
        for _ in 0..<40 { input.fileHandleForWriting.write(piece) }
        let vault = try Vault.open(at: vaultURL)
        defer { vault.close() }
        let deadline = Date().addingTimeInterval(60)
        while try vault.environment.read({ txn in try txn.count(vault.schema.pending) }) < 2, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        let listed = try #require(try json(["ls"]) as? [[String: Any]])
        #expect(listed.isEmpty, "the interrupted blob is not visible")
        let before = try #require(try json(["stats"]) as? [String: Any])
        #expect((before["chunks"] as? Int ?? 0) > 0, "the killed writer had stored chunks")
        #expect(try run(["verify"]).status == 0, "references held by the dead write are accounted for")
        let gc = try #require(try json(["gc"]) as? [String: Any])
        #expect(gc["abandonedWrites"] as? Int == 1)
        let after = try #require(try json(["stats"]) as? [String: Any])
        #expect(after["chunks"] as? Int == 0)
        #expect(try run(["verify", "--read-data"]).status == 0)
    }
}
