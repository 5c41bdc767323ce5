import CofferCLI
import Foundation

// Writes the files made from the command definitions (docs/CLI.md, docs/man/*.1) into the repository
// at the current directory, or with --check compares them and lists the ones that differ (exit 1).
// Tools/reference runs it; Tools/test runs it with --check.

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.isEmpty || arguments == ["--check"] else {
    FileHandle.standardError.write(Data("usage: coffer-reference [--check]\n".utf8))
    exit(64)
}
let checking = arguments == ["--check"]
let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
let files = ReferenceDocuments.files()
let manDirectory = root.appendingPathComponent("docs/man")
let expected = Set(files.map { URL(fileURLWithPath: $0.path).lastPathComponent })
let stale = ((try? FileManager.default.contentsOfDirectory(atPath: manDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".1") && !expected.contains($0) }.map { "docs/man/\($0)" }

var differing: [String] = []
for file in files {
    let url = root.appendingPathComponent(file.path)
    let current = try? String(contentsOf: url, encoding: .utf8)
    guard current != file.content else { continue }
    differing.append(file.path)
    if !checking {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try file.content.write(to: url, atomically: true, encoding: .utf8)
    }
}
if !checking {
    for path in stale { try FileManager.default.removeItem(at: root.appendingPathComponent(path)) }
    let changed = differing + stale
    print(changed.isEmpty ? "The reference and man pages are up to date." : "Wrote \(changed.joined(separator: ", ")).")
    exit(0)
}
guard differing.isEmpty && stale.isEmpty else {
    let message =
        "coffer-reference: these files differ from what the command definitions give: "
        + (differing + stale).joined(separator: ", ") + "; run Tools/reference and commit the result\n"
    FileHandle.standardError.write(Data(message.utf8))
    exit(1)
}
print("The reference and man pages match the command definitions (\(files.count) files).")
