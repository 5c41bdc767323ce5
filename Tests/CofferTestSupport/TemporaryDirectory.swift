public import Foundation

/// A fresh directory under the system temporary directory, removed when the value is deinitialised.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A path inside the directory (not created).
    public func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The names of the entries of `directory`, sorted.
    public static func listing(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }
}
