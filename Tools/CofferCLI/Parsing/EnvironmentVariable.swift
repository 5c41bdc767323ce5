/// An environment variable `coffer` reads, for the manual and the reference.
public struct EnvironmentVariable: Sendable, Equatable {
    /// Its name, `COFFER_VAULT`.
    public let name: String
    /// What it gives, one sentence.
    public let meaning: String

    /// Creates the description of a variable.
    public init(_ name: String, _ meaning: String) {
        self.name = name
        self.meaning = meaning
    }
}
