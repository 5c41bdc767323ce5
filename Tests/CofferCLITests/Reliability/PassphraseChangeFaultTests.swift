import CofferTestSupport
import Foundation
import Testing

/// `coffer passwd` and `coffer rekey --new-passphrase-file` under injected I/O errors (issue 38,
/// finding 5): the new passphrase and the join block that bundles carry commit together, so after any failure the old passphrase opens both the
/// vault and the bundles it exports, and after success the new one both. An error at the second of
/// its two commits used to say "nothing was changed" when the passphrase had changed.
@Suite(
    "passwd is one commit: a failure anywhere leaves the old passphrase for vault and bundles",
    .enabled(if: Strace.canTrace, "strace cannot trace here (ptrace not permitted)")
)
struct PassphraseChangeFaultTests {
    /// The harness's passphrase.
    static let old = "pw"
    static let new = "new passphrase"

    /// Which of the two passphrases opens the vault, and which opens a bundle it exports now.
    struct Opens: Equatable, CustomStringConvertible {
        let vault: String?
        let bundle: String?
        var description: String { "vault: \(vault ?? "neither"), bundle: \(bundle ?? "neither")" }
    }

    func opens(_ cli: CLIHarness, attempt: Int) throws -> Opens {
        let vault = try [Self.old, Self.new].first { passphrase in
            try cli.run(["ls"], extra: ["COFFER_PASSPHRASE": passphrase]).status == 0
        }
        guard let vault else { return Opens(vault: nil, bundle: nil) }
        let bundle = cli.directory.path("b\(attempt).bundle").path
        let exported = try cli.run(["export", "--out", bundle], extra: ["COFFER_PASSPHRASE": vault])
        #expect(exported.status == 0, "\(exported.error)")
        let opener = try [Self.old, Self.new].first { passphrase in
            let joined = cli.directory.path("joined-\(attempt)-\(passphrase.prefix(3))").path
            return try Products.run(
                cli.coffer,
                ["init", "--join", bundle],
                environment: ["COFFER_VAULT": joined, "COFFER_PASSPHRASE": passphrase]
            ).status == 0
        }
        return Opens(vault: vault, bundle: opener)
    }

    /// The commands that set a new passphrase, each with the calls its faults are injected at.
    static let cases: [(command: [String], call: String)] = [
        (["passwd"], "fdatasync"), (["passwd"], "pwrite64"), (["passwd"], "writev"),
        (["rekey"], "fdatasync"),
    ]

    @Test("EIO or ENOSPC at each write and sync of passwd and rekey --new-passphrase-file", arguments: cases)
    func faultAtEachStep(command: [String], call: String) throws {
        var failures = 0
        var attempt = 0
        // Past the last such call, the command succeeds: each error stops at its first success.
        for error in call == "fdatasync" ? ["EIO"] : ["EIO", "ENOSPC"] {
            for k in 1...12 {
                attempt += 1
                let cli = try CLIHarness()
                let newFile = cli.directory.path("new")
                try Data(Self.new.utf8).write(to: newFile)
                let scratch = cli.directory.path("strace.txt").path
                let result = try Strace.run(
                    [
                        "-f", "-qq", "-o", scratch, "-e", "trace=\(call)", "-e",
                        "inject=\(call):error=\(error):when=\(k)",
                    ]
                        + [cli.coffer.path] + command + ["--new-passphrase-file", newFile.path],
                    environment: cli.environment
                )
                let what = "\(command[0]): \(error) at \(call) \(k): exit \(result.status) \(result.error)"
                let after = try opens(cli, attempt: attempt)
                if result.status == 0 {
                    // A rekey closes passphrase joins (the leaked files' owner may know a member's
                    // passphrase): its bundles then carry no join block at all.
                    let bundle = command == ["rekey"] ? nil : Self.new
                    #expect(after == Opens(vault: Self.new, bundle: bundle), "\(what): \(after)")
                    break
                }
                failures += 1
                #expect(result.status == 1, "\(what)")
                #expect(after == Opens(vault: Self.old, bundle: Self.old), "\(what): \(after)")
            }
        }
        #expect(failures > 0, "no injected \(call) failure reached \(command[0])")
    }
}
