import CofferTestSupport
import Foundation
import Testing

/// A passphrase is asked for on the terminal itself (`/dev/tty`) when standard input carries data, as
/// ssh and sudo do: `printf … | coffer put NAME -` in a terminal prompts, reads what is typed there,
/// and stores what came through the pipe. Without a terminal the command still says how to give one.
@Suite("Passphrase from the terminal while standard input is a pipe")
struct PassphrasePromptEndToEndTests {
    @Test("put from a pipe asks on the terminal, and stores the pipe's bytes", .enabled(if: Terminal.canRun))
    func promptsOnTheTerminal() throws {
        let cli = try CLIHarness()
        let vaultOnly = ["COFFER_VAULT": cli.environment["COFFER_VAULT"]!]
        let screen = try Terminal.run(
            "sh -c 'printf from-the-pipe | \(cli.coffer.path) put piped -'",
            input: "pw\n",
            environment: vaultOnly
        )
        #expect(screen.contains("Passphrase:"), "\(screen)")
        #expect(screen.contains("Stored piped"), "\(screen)")
        #expect(try cli.run(["get", "piped"]).output == "from-the-pipe")

        // With no terminal at all, the message says how to give the passphrase.
        let refused = try Products.run(cli.coffer, ["put", "other", "-"], environment: vaultOnly, input: "data")
        #expect(refused.status == 1 && refused.error.contains("set COFFER_PASSPHRASE"), "\(refused.error)")
    }
}
