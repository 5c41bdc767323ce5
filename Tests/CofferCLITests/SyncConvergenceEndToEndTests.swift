import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Groups of machines using sync as people do, through the `coffer` binary: a delete racing a
/// rename, a device with a clock years ahead, two hosts backing up the same path, a device-bound
/// blob meeting a synced one of the same name.
@Suite("Sync that always converges, end to end")
struct SyncConvergenceEndToEndTests {
    let directory: TemporaryDirectory
    let coffer: URL

    init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
    }

    func vault(_ name: String) -> String { directory.path(name).path }
    func bundle(_ name: String) -> String { directory.path(name + ".bundle").path }

    /// Runs `coffer` on vault `name`; `wrapper` runs it under another program (faketime, unshare).
    @discardableResult
    func run(
        _ name: String,
        _ arguments: [String],
        wrapper: [String] = [],
        extra: [String: String] = [:]
    ) throws
        -> Products.Result
    {
        let environment = ["COFFER_VAULT": vault(name), "COFFER_PASSPHRASE": "pw"].merging(extra) { _, new in new }
        if wrapper.isEmpty { return try Products.run(coffer, arguments, environment: environment) }
        return try Products.run(
            URL(fileURLWithPath: wrapper[0]),
            Array(wrapper.dropFirst()) + [coffer.path] + arguments,
            environment: environment
        )
    }

    /// Vault `a` made with a file and a syncable item, and `b` joined from it.
    func pair() throws -> String {
        let file = directory.path("photo").path
        try Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) }).write(
            to: URL(fileURLWithPath: file)
        )
        #expect(try run("a", ["init"]).status == 0)
        #expect(try run("a", ["put", "x", file]).status == 0)
        #expect(try run("a", ["export", "--out", bundle("full"), "--peer", "b"]).status == 0)
        #expect(try run("b", ["init", "--join", bundle("full")]).status == 0)
        #expect(try run("b", ["export", "--out", bundle("b0"), "--peer", "a"]).status == 0)
        #expect(try run("a", ["import", bundle("b0")]).status == 0)
        return file
    }

    @Test("a delete on one machine racing a rename on the other: nothing refused, both end with the renamed blob")
    func deleteRacingRename() throws {
        let file = try pair()
        #expect(try run("b", ["mv", "x", "y"]).status == 0)
        #expect(
            try run("b", ["item", "add", "--service", "mail", "--account", "ann", "--sync", "--value", "v"]).status == 0
        )
        #expect(try run("a", ["rm", "x"]).status == 0)
        #expect(try run("b", ["export", "--out", bundle("b1"), "--peer", "a"]).status == 0)
        let first = try run("a", ["import", bundle("b1")])
        #expect(first.status == 3, "\(first.error)")
        #expect(first.error.contains("for data this vault lacks"), "\(first.error)")
        // It names the device that sent the record, which holds its data (red team round 44, G2).
        let b = try run("b", ["device", "show", "--json"]).output
        let sender = try #require(
            (try JSONSerialization.jsonObject(with: Data(b.utf8)) as? [String: Any])?["deviceID"] as? String
        )
        #expect(first.error.contains("device \(sender) sent 1"), "\(first.error)")
        // The unrelated item in the same bundle arrived at once.
        #expect(try run("a", ["item", "get", "--service", "mail", "--account", "ann"]).output == "v")
        #expect(try run("a", ["export", "--out", bundle("a1"), "--peer", "b"]).status == 0)
        #expect(try run("b", ["import", bundle("a1")]).status == 0)
        #expect(try run("b", ["export", "--out", bundle("b2"), "--peer", "a"]).status == 0)
        let second = try run("a", ["import", bundle("b2")])
        #expect(second.status == 0, "\(second.error)")
        let restored = directory.path("restored-y").path
        #expect(try run("a", ["get", "y", restored]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored)) == Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(try run("a", ["ls"]).output == (try run("b", ["ls"]).output))
        #expect(try run("a", ["verify", "--read-data"]).status == 0)
    }

    @Test("a device with a clock five years ahead cannot make its edits win: they are refused, naming it")
    func farFutureClock() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/faketime") else {
            Issue.record("faketime is not installed (Debian package faketime; Tools/test installs it)")
            return
        }
        _ = try pair()
        let fast = ["/usr/bin/faketime", "-f", "+5y"]
        #expect(try run("c", ["init", "--join", bundle("full")], wrapper: fast).status == 0)
        #expect(
            try run(
                "c",
                ["item", "add", "--service", "wifi", "--account", "home", "--sync", "--value", "from-2031"],
                wrapper: fast
            )
            .status == 0
        )
        #expect(try run("c", ["export", "--out", bundle("c1"), "--peer", "b"], wrapper: fast).status == 0)
        let refused = try run("b", ["import", bundle("c1")])
        #expect(refused.status == 3, "\(refused.error)")
        #expect(refused.error.contains("ahead of this machine's clock"), "\(refused.error)")
        #expect(refused.error.contains("COFFER_MAX_CLOCK_SKEW"))
        #expect(try run("b", ["item", "get", "--service", "wifi", "--account", "home"]).status == 1)
        // A later edit on a machine with a correct clock travels and wins everywhere.
        #expect(
            try run("a", ["item", "add", "--service", "wifi", "--account", "home", "--sync", "--value", "today"]).status
                == 0
        )
        #expect(try run("a", ["export", "--out", bundle("a1"), "--peer", "b"]).status == 0)
        #expect(try run("b", ["import", bundle("a1")]).status == 0)
        #expect(try run("b", ["item", "get", "--service", "wifi", "--account", "home"]).output == "today")
        // b's clock did not move years ahead: its own next edit still wins over a's.
        #expect(
            try run("b", ["item", "update", "--service", "wifi", "--account", "home", "--value", "b-later"]).status == 0
        )
        #expect(try run("b", ["export", "--out", bundle("b1"), "--peer", "a"]).status == 0)
        #expect(try run("a", ["import", bundle("b1")]).status == 0)
        #expect(try run("a", ["item", "get", "--service", "wifi", "--account", "home"]).output == "b-later")
    }

    @Test("two hosts backing up the same path: each restores and forgets its own snapshots; listings show the host")
    func twoHosts() throws {
        guard getuid() == 0 else {
            Issue.record("unshare -u needs root to give coffer its own hostname; run the suite as root (CI does)")
            return
        }
        _ = try pair()
        let tree = directory.path("docs")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        func asHost(_ host: String, _ name: String, _ arguments: [String]) throws -> Products.Result {
            let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
            return try Products.run(
                URL(fileURLWithPath: "/usr/bin/unshare"),
                ["-u", "/bin/sh", "-c", "hostname \(host) && exec '\(coffer.path)' \(quoted)"],
                environment: [
                    "COFFER_VAULT": vault(name), "COFFER_PASSPHRASE": "pw", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
                ]
            )
        }
        try Data("laptop's notes".utf8).write(to: tree.appendingPathComponent("notes.txt"))
        #expect(try asHost("laptop", "a", ["backup", tree.path]).status == 0)
        try Data("desktop's notes".utf8).write(to: tree.appendingPathComponent("notes.txt"))
        #expect(try asHost("desktop", "b", ["backup", tree.path]).status == 0)
        #expect(try run("b", ["export", "--out", bundle("b1"), "--peer", "a"]).status == 0)
        #expect(try run("a", ["import", bundle("b1")]).status == 0)
        let listing = try asHost("laptop", "a", ["snapshots"]).output
        #expect(listing.contains("laptop") && listing.contains("desktop"), "\(listing)")
        let restored = directory.path("restored").path
        #expect(try asHost("laptop", "a", ["restore", tree.path, restored]).status == 0)
        #expect(try String(contentsOfFile: restored + "/notes.txt", encoding: .utf8) == "laptop's notes")
        let fromDesktop = directory.path("from-desktop").path
        #expect(try asHost("laptop", "a", ["restore", tree.path, fromDesktop, "--host", "desktop"]).status == 0)
        #expect(try String(contentsOfFile: fromDesktop + "/notes.txt", encoding: .utf8) == "desktop's notes")
        #expect(try asHost("laptop", "a", ["forget", tree.path]).status == 0)
        let again = try asHost("laptop", "a", ["forget", tree.path])
        #expect(again.status == 1)
        #expect(again.error.contains("'desktop'") && again.error.contains("--host"), "\(again.error)")
        #expect(try asHost("laptop", "a", ["snapshots"]).output.contains("desktop"))
    }

    @Test("init and init --join killed at any moment leave no vault or a complete one, never half a vault")
    func killedCreation() throws {
        _ = try pair()
        var killedMidway = 0
        for attempt in 0..<16 {
            let name = "k\(attempt)"
            let process = Process()
            process.executableURL = coffer
            process.arguments = attempt % 2 == 0 ? ["init", "--join", bundle("full")] : ["init"]
            process.environment = ["COFFER_VAULT": vault(name), "COFFER_PASSPHRASE": "pw", "PATH": "/usr/bin:/bin"]
            process.standardOutput = Products.nullDevice()
            process.standardError = Products.nullDevice()
            try process.run()
            Thread.sleep(forTimeInterval: Double(attempt % 8) * 0.03)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .uncaughtSignal { killedMidway += 1 }
            if FileManager.default.fileExists(atPath: vault(name)) {
                // There, so complete: it opens, and a joined one holds the group's blob.
                let info = try run(name, ["info"])
                #expect(info.status == 0, "attempt \(attempt): \(info.error)")
                if attempt % 2 == 0 { #expect(try run(name, ["ls"]).output.contains(" x\n")) }
            } else {
                // Not there: creating it again just works.
                let again = try run(name, attempt % 2 == 0 ? ["init", "--join", bundle("full")] : ["init"])
                #expect(again.status == 0, "attempt \(attempt): \(again.error)")
            }
        }
        #expect(killedMidway > 0, "no creation was interrupted; the test proved nothing")
        // Staging directories of killed creations go with the next creation beside them.
        #expect(try run("last", ["init"]).status == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter {
            $0.contains(".coffer-creating-")
        }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("a synced blob meeting a device-bound blob of the same name: both kept, the device-bound one renamed")
    func deviceBoundCollision() throws {
        _ = try pair()
        let mine = directory.path("mine").path
        try Data("only on this machine".utf8).write(to: URL(fileURLWithPath: mine))
        #expect(try run("a", ["put", "notes", mine, "--device-only"]).status == 0)
        let theirs = directory.path("theirs").path
        try Data("from the other machine".utf8).write(to: URL(fileURLWithPath: theirs))
        #expect(try run("b", ["put", "notes", theirs]).status == 0)
        #expect(try run("b", ["export", "--out", bundle("b1"), "--peer", "a"]).status == 0)
        let imported = try run("a", ["import", bundle("b1")])
        #expect(imported.status == 0)
        #expect(imported.error.contains("kept as 'notes (device-bound 1)'"), "\(imported.error)")
        #expect(try run("a", ["get", "notes", "-"]).output == "from the other machine")
        #expect(try run("a", ["get", "notes (device-bound 1)", "-"]).output == "only on this machine")
    }
}
