/// The shells `coffer completion` writes a script for.
enum CompletionShell: String, CaseIterable, ArgumentValue {
    case bash, zsh, fish

    /// The script completing `root`'s commands, whose commands all take `globalOptions`.
    func script(root: CommandSpec, globalOptions: [OptionSpec]) -> String {
        let tree = CompletionTree(root: root, globalOptions: globalOptions)
        switch self {
        case .bash: return BashCompletion(tree: tree).script
        case .zsh: return ZshCompletion(tree: tree).script
        case .fish: return FishCompletion(tree: tree).script
        }
    }
}
