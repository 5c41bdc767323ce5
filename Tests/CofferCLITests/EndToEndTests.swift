import CofferTestSupport
import Foundation
import Testing

/// Runs the built `coffer` binary the way a user would and checks its output and exit status.
@Suite("coffer end to end")
struct EndToEndTests {
    let directory: TemporaryDirectory
    let coffer: URL

    init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
    }

    var vault: String { directory.path("vault").path }

    func run(
        _ arguments: [String],
        passphrase: String? = "correct horse",
        extra: [String: String] = [:]
    ) throws -> Products.Result {
        var environment = extra
        if let passphrase { environment["COFFER_PASSPHRASE"] = passphrase }
        return try Products.run(coffer, arguments, environment: environment)
    }

    func json(_ result: Products.Result) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
    }

    @Test("init, then info --json (global option before or after the command)")
    func initAndInfo() throws {
        // The standard cost, not the tests' fast one.
        let created = try run(["init", "--vault", vault, "--json"], extra: [Products.weakenKDF.name: ""])
        #expect(created.status == 0, "\(created.error)")
        let summary = try json(created)
        #expect(summary["formatVersion"] as? Int == 2)

        for arguments in [["info", "--json", "--vault", vault], ["--json", "info", "--vault", vault]] {
            let info = try run(arguments)
            #expect(info.status == 0, "\(info.error)")
            let fields = try json(info)
            #expect(fields["vaultID"] as? String == summary["vaultID"] as? String)
            #expect(fields["isLocked"] as? Bool == false)
            #expect(fields["items"] as? Int == 0)
            #expect(fields["kdf"] as? String == "scrypt N=2^15 r=8 p=1")
        }
        let locked = try run(["info", "--vault", vault], passphrase: nil)
        #expect(locked.status == 0)
        #expect(locked.output.contains("State:") && locked.output.contains("locked"))
    }

    @Test("COFFER_TESTONLY_WEAKEN_KDF=1 gives init the tests' fast scrypt cost, and --kdf strong is kept")
    func weakenedKDFForTests() throws {
        for (arguments, kdf) in [
            ([String](), "scrypt N=2^10 r=8 p=1"), (["--kdf", "strong"], "scrypt N=2^17 r=8 p=1"),
        ] {
            let directory = vault + "-\(arguments.count)"
            let created = try run(["init", "--vault", directory] + arguments, extra: [Products.weakenKDF.name: "1"])
            #expect(created.status == 0, "\(created.error)")
            let fields = try json(try run(["info", "--json", "--vault", directory]))
            #expect(fields["kdf"] as? String == kdf, "\(arguments)")
        }
    }

    @Test("the vault comes from $COFFER_VAULT when --vault is absent")
    func vaultFromEnvironment() throws {
        #expect(try run(["init"], extra: ["COFFER_VAULT": vault]).status == 0)
        #expect(FileManager.default.fileExists(atPath: vault + "/data.mdb"))
        #expect(try run(["info"], extra: ["COFFER_VAULT": vault]).status == 0)
    }

    @Test("a wrong passphrase exits 1 and says so")
    func wrongPassphrase() throws {
        #expect(try run(["init", "--vault", vault]).status == 0)
        for command in [["info"], ["key", "export"]] {
            let result = try run(command + ["--vault", vault], passphrase: "not it")
            #expect(result.status == 1)
            #expect(result.error.contains("passphrase is wrong"), "\(result.error)")
            #expect(result.output.isEmpty)
        }
    }

    @Test("info on a directory that is not a vault, or on nothing, exits 1 with a clear message")
    func notAVault() throws {
        let plain = directory.path("plain")
        try FileManager.default.createDirectory(at: plain, withIntermediateDirectories: false)
        let result = try run(["info", "--vault", plain.path])
        #expect(result.status == 1)
        // The library's message names no command (an app's users have no `coffer`); the tool adds its own.
        #expect(result.error.contains("is not a Coffer vault (it has no data.mdb); create one with `coffer init`"))
        #expect(TemporaryDirectory.listing(plain).isEmpty)
        let missing = try run(["info", "--vault", directory.path("missing").path])
        #expect(missing.status == 1)
        let expected = "there is no vault at \(directory.path("missing").path); create one with `coffer init`\n"
        #expect(missing.error.hasSuffix(expected), "\(missing.error)")
    }

    @Test(
        "usage errors exit 64 and point at the help",
        arguments: [
            ["frob"], ["info", "--frob"], ["init", "--kdf", "weak"], ["key"], ["info", "extra"], ["--vault"],
        ]
    )
    func usageErrors(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == 64, "\(arguments): \(result.error)")
        #expect(result.error.contains("coffer: error:"))
        #expect(result.error.contains("--help"))
    }

    @Test("help at every level exits 0")
    func help() throws {
        for arguments in [["--help"], ["-h"], [], ["init", "--help"], ["key", "export", "-h"]] {
            let result = try run(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.output.contains("USAGE: coffer"))
        }
    }

    @Test("with no passphrase source and no terminal, init exits 1 and says how to give one")
    func noPassphrase() throws {
        let result = try run(["init", "--vault", vault], passphrase: nil)
        #expect(result.status == 1)
        #expect(result.error.contains("COFFER_PASSPHRASE"))
        #expect(!FileManager.default.fileExists(atPath: vault))
    }

    @Test("passwd with --passphrase-file and --new-passphrase-file; key export; recovery-key reset")
    func passwdAndRecovery() throws {
        let old = directory.path("old.txt")
        let new = directory.path("new.txt")
        try Data("first passphrase\n".utf8).write(to: old)
        try Data("second passphrase\n".utf8).write(to: new)
        #expect(try run(["init", "--vault", vault, "--passphrase-file", old.path], passphrase: nil).status == 0)

        let exported = try run(["key", "export", "--vault", vault, "--passphrase-file", old.path], passphrase: nil)
        #expect(exported.status == 0, "\(exported.error)")
        let recovery = exported.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recovery.count == 69)

        let changed = try run(
            ["passwd", "--vault", vault, "--passphrase-file", old.path, "--new-passphrase-file", new.path],
            passphrase: nil
        )
        #expect(changed.status == 0, "\(changed.error)")
        #expect(try run(["info", "--vault", vault, "--passphrase-file", old.path], passphrase: nil).status == 1)
        #expect(try run(["info", "--vault", vault, "--passphrase-file", new.path], passphrase: nil).status == 0)

        // Forgot the passphrase: reset it with the recovery key.
        let keyFile = directory.path("recovery.txt")
        try Data((recovery + "\n").utf8).write(to: keyFile)
        let reset = try run(
            ["passwd", "--vault", vault, "--recovery-key-file", keyFile.path],
            passphrase: nil,
            extra: ["COFFER_NEW_PASSPHRASE": "third passphrase"]
        )
        #expect(reset.status == 0, "\(reset.error)")
        #expect(try run(["info", "--vault", vault], passphrase: "third passphrase").status == 0)
        let again = try run(["key", "export", "--vault", vault, "--json"], passphrase: "third passphrase")
        #expect(try json(again)["recoveryKey"] as? String == recovery)

        let bad = try run(
            ["passwd", "--vault", vault, "--recovery-key-file", old.path],
            passphrase: nil,
            extra: ["COFFER_NEW_PASSPHRASE": "x"]
        )
        #expect(bad.status == 1)
        #expect(bad.error.contains("recovery key"))
    }

    @Test("a missing --passphrase-file exits 1 naming the file")
    func missingPassphraseFile() throws {
        let result = try run(["init", "--vault", vault, "--passphrase-file", "/nonexistent/pw"], passphrase: nil)
        #expect(result.status == 1)
        #expect(result.error.contains("/nonexistent/pw"))
    }
}
