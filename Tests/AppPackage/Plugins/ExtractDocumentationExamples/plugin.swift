import Foundation
import PackagePlugin

/// Runs `extract-examples` over Coffer's documents before the examples target compiles, so the
/// examples it compiles are the documents' own, as they are now.
@main
struct ExtractDocumentationExamples: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let repository = context.package.directoryURL.appending(path: "../..").standardizedFileURL
        var documents = [repository.appending(path: "README.md")]
        for folder in ["docs", "Sources/Coffer/Coffer.docc"] {
            let directory = repository.appending(path: folder)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            documents += names.filter { $0.hasSuffix(".md") }.sorted().map { directory.appending(path: $0) }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "Examples.swift")
        return [
            .buildCommand(
                displayName: "Extracting the documents' Swift examples",
                executable: try context.tool(named: "extract-examples").url,
                arguments: [repository.path, output.path] + documents.map(\.path),
                inputFiles: documents,
                outputFiles: [output]
            )
        ]
    }
}
