/// `coffer completion bash|zsh|fish`: the shell's completion script, on standard output.
struct CompletionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "completion",
        abstract: "Print the shell completion script for bash, zsh or fish.",
        discussion: """
            The script completes commands, subcommands, options, the values of options with fixed
            choices, and file names where a file is asked for. Tools/install installs all three; to load
            one by hand, source it from the shell's start-up file. It needs no vault.
            """,
        examples: [
            "source <(coffer completion bash)             # in ~/.bashrc",
            "coffer completion zsh > ~/.zfunc/_coffer     # a directory on $fpath",
            "coffer completion fish > ~/.config/fish/completions/coffer.fish",
        ]
    )

    @Argument("SHELL", help: "bash, zsh or fish.")
    var shell: CompletionShell

    func run(_ context: CommandContext) throws {
        context.console.print(shell.script(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions))
    }
}
