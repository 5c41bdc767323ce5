import CofferTestSupport
import Foundation
import Testing

/// `coffer completion bash|zsh|fish`, loaded into each shell: bash's function is asked directly for
/// what it offers after a range of command lines, and each shell, run on a pseudo-terminal as a person
/// would use it, completes `coffer bac` and an option when Tab is pressed (zsh and fish when they are
/// installed; Tools/test installs them).
@Suite("Shell completion: bash, zsh and fish complete commands, options and their values")
struct CompletionEndToEndTests {
    let directory: TemporaryDirectory
    let coffer: URL

    init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
    }

    /// The script for `shell`, written to a file.
    func script(_ shell: String) throws -> URL {
        let result = try Products.run(coffer, ["completion", shell])
        #expect(result.status == 0, "\(result.error)")
        let file = directory.path("completion.\(shell)")
        try Data(result.output.utf8).write(to: file)
        return file
    }

    @Test("bash registers the function and offers commands, subcommands, options and their values")
    func bashOffers() throws {
        let file = try script("bash")
        let probe = """
            source \(file.path)
            complete -p coffer
            offer() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _coffer; echo "$*|${COMPREPLY[*]}"; }
            offer coffer bac
            offer coffer item ''
            offer coffer item add --cl
            offer coffer item add --class ''
            offer coffer --vault /tmp it
            offer coffer -q rest
            offer coffer help ba
            offer coffer init --kdf ''
            offer coffer restore --overwrite if-
            offer coffer completion ''
            offer coffer backup --exclude-larger-than ''
            """
        let result = try Products.run(URL(fileURLWithPath: "/bin/bash"), ["-c", probe])
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "complete -o filenames -F _coffer coffer", "\(lines)")
        let offered = Dictionary(
            lines.dropFirst().map { line in
                let parts = line.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            },
            uniquingKeysWith: { first, _ in first }
        )
        #expect(offered["coffer bac"] == "backup")
        #expect(offered["coffer item "] == "add upsert get find update delete")
        #expect(offered["coffer item add --cl"] == "--class")
        #expect(offered["coffer item add --class "] == "generic-password internet-password key certificate identity")
        #expect(offered["coffer --vault /tmp it"] == "item", "a global option's value is not a command")
        #expect(offered["coffer -q rest"] == "restore")
        #expect(offered["coffer help ba"] == "backup")
        #expect(offered["coffer init --kdf "] == "standard strong")
        #expect(offered["coffer restore --overwrite if-"] == "if-changed if-newer")
        #expect(offered["coffer completion "] == "bash zsh fish")
        #expect(offered["coffer backup --exclude-larger-than "] == "", "a size has nothing to offer")
    }

    /// How each shell is started on the terminal with the script loaded and `coffer` replaced by a
    /// function that prints the command line it was given.
    func interactiveShell(_ shell: String) throws -> String? {
        guard let path = ["/usr/bin/\(shell)", "/bin/\(shell)"].first(where: FileManager.default.isExecutableFile)
        else { return nil }
        let file = try script(shell)
        switch shell {
        case "bash":
            let rc = directory.path("bashrc")
            try Data("PS1='> '\nsource \(file.path)\ncoffer() { echo \"ran: coffer $*\"; }\n".utf8).write(to: rc)
            return "\(path) --rcfile \(rc.path) -i"
        case "zsh":
            let functions = directory.path("zfunc")
            try FileManager.default.createDirectory(at: functions, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: file, to: functions.appendingPathComponent("_coffer"))
            let rc = """
                PS1='> '
                fpath=(\(functions.path) $fpath)
                autoload -U compinit; compinit -u -D
                coffer() { print -r -- "ran: coffer $*" }

                """
            try Data(rc.utf8).write(to: directory.path(".zshrc"))
            return "env ZDOTDIR=\(directory.url.path) \(path) -i"
        default:
            let rc = directory.path("config.fish")
            let config = """
                set -g fish_greeting
                function fish_prompt; echo '> '; end
                function fish_right_prompt; end
                function fish_title; end
                source \(file.path)
                function coffer; echo "ran: coffer $argv"; end

                """
            try Data(config.utf8).write(to: rc)
            return "\(path) --no-config -i -C 'source \(rc.path)'"
        }
    }

    @Test(
        "Tab completes 'coffer bac' and 'coffer item add --cla' on a terminal",
        .enabled(if: Terminal.canRun),
        arguments: ["bash", "zsh", "fish"]
    )
    func tabOnATerminal(shell: String) throws {
        guard let command = try interactiveShell(shell) else {
            print("skipped: \(shell) is not installed")
            return
        }
        let enter = shell == "fish" ? "\r" : "\n"
        let screen = try Terminal.run(
            command,
            input: "coffer bac\t\(enter)coffer item add --cla\t\(enter)exit\(enter)",
            environment: ["HOME": directory.url.path]
        )
        let ran = screen.lines.compactMap { line in line.range(of: "ran: ").map { String(line[$0.lowerBound...]) } }
        #expect(ran.contains("ran: coffer backup"), "\(shell): \(screen)")
        #expect(ran.contains("ran: coffer item add --class"), "\(shell): \(screen)")
    }
}
