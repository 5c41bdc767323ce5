import Foundation

/// One Swift example of Coffer's documents, as the build extracted it, with a way to run it.
public struct DocumentedExample: Sendable, CustomStringConvertible {
    /// The document it is in, relative to the repository: `docs/EMBEDDING.md`.
    public let document: String
    /// The line of its opening fence.
    public let line: Int
    /// The passphrase the example gives first, which it expects the vault it names to have (to join
    /// it, to rekey it); `nil` when it gives none.
    public let passphrase: String?
    /// Whether the example creates a vault at `url`, which must then be a fresh path.
    public let createsVaultAtURL: Bool
    /// Its text as the document shows it, `import`s left out.
    public let source: String
    /// Runs the example in the given surroundings.
    public let run: @Sendable (ExampleSurroundings) async throws -> Void

    /// `docs/EMBEDDING.md:9`.
    public var description: String { "\(document):\(line)" }

    /// Whether the example waits on a sequence that never ends by itself (changes, observations):
    /// its run has to be driven, and then cancelled.
    public var waitsForChanges: Bool {
        source.contains("for try await") && (source.contains(".changes(") || source.contains(".observe("))
    }

    /// Whether the example uses the S3 remote.
    public var usesS3: Bool { source.contains("S3Remote(") }
}
