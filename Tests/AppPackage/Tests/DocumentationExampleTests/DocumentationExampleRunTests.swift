import Coffer
import DocumentationExamples
import Foundation
import Testing

/// Runs every Swift example of the README, docs/ and the DocC catalog, as the build extracted them,
/// in real surroundings (``ExampleSurroundings``): each must run to its end without an error. An
/// example that waits on changes is given some (a password edited, a photo written and deleted), must
/// print what it saw, and is then cancelled. The sync examples talk to the S3 server named by
/// `AWS_ENDPOINT_URL` (Tools/test starts one).
@Suite("Documentation examples run as an app runs them", .serialized)
struct DocumentationExampleRunTests {
    @Test("the documents hold the examples")
    func examplesFound() {
        #expect(DocumentedExample.all.count >= 20, "\(DocumentedExample.all.count) examples")
    }

    @Test("each example runs to its end", arguments: DocumentedExample.all)
    func runs(_ example: DocumentedExample) async throws {
        let environment = ProcessInfo.processInfo.environment
        let endpoint = environment["AWS_ENDPOINT_URL"]
        if example.usesS3 {
            try #require(
                endpoint != nil,
                "\(example) uses S3: run with an S3 server's settings in the environment (Tools/test starts one)"
            )
        }
        let sandbox = FileManager.default.temporaryDirectory.appending(path: "coffer-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sandbox) }
        let surroundings = try ExampleSurroundings(for: example, in: sandbox, s3Endpoint: endpoint ?? "")
        defer { surroundings.closeVaults() }
        let previousDirectory = FileManager.default.currentDirectoryPath
        try #require(FileManager.default.changeCurrentDirectoryPath(sandbox.path))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previousDirectory) }
        if example.usesS3, let endpoint {
            let remote = S3Remote(
                try S3Location("s3://ann-sync/coffer"),
                credentials: try .fromEnvironment(),
                endpoint: URL(string: endpoint)
            )
            try await remote.createBucketIfMissing()
        }

        do {
            if example.waitsForChanges {
                try await drive(example, in: surroundings)
            } else {
                try await example.run(surroundings)
            }
        } catch {
            Issue.record("\(example) failed: \(error)\n\(example.source)")
        }
    }

    /// Runs an example that waits on changes: makes some (a password edited, a photo written and
    /// deleted), again and again until the example prints what it saw (it may begin to wait only
    /// after the first ones, on a slow machine), then cancels it.
    private func drive(_ example: DocumentedExample, in surroundings: ExampleSurroundings) async throws {
        let vault = surroundings.vault
        let run = Task { try await example.run(surroundings) }
        let deadline = ContinuousClock.now + .seconds(20)
        var round = 0
        while surroundings.output.isEmpty, ContinuousClock.now < deadline {
            round += 1
            try await vault.keychain.setPassword("v\(round)", service: "mail", account: "ann")
            try await vault.blobs.write("photos/cat.jpg", data: Data("photo \(round)".utf8))
            try await vault.blobs.delete("photos/cat.jpg")
            try await Task.sleep(for: .milliseconds(200))
        }
        try await Task.sleep(for: .milliseconds(300))
        run.cancel()
        do {
            try await run.value
        } catch is CancellationError {}
        #expect(!surroundings.output.isEmpty, "\(example) printed nothing of the changes made while it waited")
    }
}
