/// One problem ``Blobs/verify(readingData:)-53rte`` found.
public struct VerificationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The blob concerned, when the problem belongs to one.
    public let blob: String?
    /// What is wrong.
    public let message: String

    /// A problem with `blob` (or with the vault as a whole, when `nil`).
    package init(blob: String?, message: String) {
        self.blob = blob
        self.message = message
    }

    /// The blob (if any) and what is wrong, as one line.
    public var description: String { blob.map { "blob '\($0)': \(message)" } ?? message }
}
