/// The files made from the command definitions and kept in the repository: the command reference
/// and the manual pages. `Tools/reference` writes them; the test suite fails when the committed
/// ones differ.
public enum ReferenceDocuments {
    /// Each file's path from the repository's root, with its content: `docs/CLI.md` and
    /// `docs/man/*.1`.
    public static func files() -> [(path: String, content: String)] {
        let reference = MarkdownReference(
            root: CofferCommand.root,
            globalOptions: CofferCommand.globalOptions,
            environment: CofferCommand.environmentVariables
        )
        let pages = ManualPage.pages(
            root: CofferCommand.root,
            globalOptions: CofferCommand.globalOptions,
            environment: CofferCommand.environmentVariables
        )
        return [("docs/CLI.md", reference.text)] + pages.map { ("docs/man/\($0.fileName)", $0.text) }
    }
}
