import CofferTestSupport
import Foundation
import Testing

/// Leaks (issue 8): canary strings in every tier's names, attributes and values, written through the
/// CLI, appear in none of the vault's files and no bundle, secret values and contents in no output;
/// the files are private.
@Suite("Leaks: canaries in every tier appear in no vault file, bundle or diagnostic, and the files are private")
struct LeakCanaryTests {
    static func canary(_ what: String) -> String { "CANARY-\(what)-7f3a9c51" }

    @Test("Items, blobs and snapshots full of canaries; then data.mdb, lock.mdb, a bundle and the output are searched")
    func canaries() throws {
        let cli = try CLIHarness()
        var outputs: [Products.Result] = []
        func run(_ arguments: [String]) throws {
            let result = try cli.run(arguments)
            #expect(result.status == 0, "coffer \(arguments.joined(separator: " ")): \(result.error)")
            outputs.append(result)
        }
        try run([
            "item", "add", "--service", Self.canary("service"), "--account", Self.canary("account"),
            "--server", Self.canary("server"), "--label", Self.canary("label"), "--access-group", Self.canary("group"),
            "--attribute", "comment=\(Self.canary("comment"))", "--value", Self.canary("value"), "--sync",
        ])
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent(Self.canary("dirname")),
            withIntermediateDirectories: true
        )
        let content = Data(String(repeating: Self.canary("content") + " ", count: 2_000).utf8)
        try content.write(
            to: tree.appendingPathComponent(Self.canary("dirname")).appendingPathComponent(Self.canary("filename"))
        )
        try content.write(to: cli.directory.path("blob.txt"))
        try run(["put", Self.canary("blobname"), cli.directory.path("blob.txt").path])
        try run(["backup", tree.path, "--name", Self.canary("snapshotname")])
        let bundle = cli.directory.path("out.bundle")
        try run(["export", "--out", bundle.path])

        let vault = cli.directory.path("vault")
        let needles = [
            "service", "account", "server", "label", "group", "comment", "value", "dirname", "filename", "content",
            "blobname",
            "snapshotname",
        ].map { Self.canary($0) }
        for file in [vault.appendingPathComponent("data.mdb"), vault.appendingPathComponent("lock.mdb"), bundle] {
            let bytes = try Data(contentsOf: file)
            for needle in needles {
                #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(needle) found in \(file.lastPathComponent)")
            }
        }
        // Confirmations may echo the names the user typed; secret values and contents never appear.
        for output in outputs {
            for secret in [Self.canary("value"), Self.canary("content")] {
                #expect(!(output.output + output.error).contains(secret), "\(secret) was printed")
            }
        }

        func mode(_ url: URL) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode(vault) == 0o700)
        #expect(try mode(vault.appendingPathComponent("data.mdb")) == 0o600)
        #expect(try mode(vault.appendingPathComponent("lock.mdb")) == 0o600)
        #expect(try mode(bundle) == 0o600)
    }
}
