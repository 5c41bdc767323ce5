public import Foundation

/// Incompressible test content from the kernel's generator: fast in debug builds, where drawing
/// megabytes a byte at a time from a Swift generator takes seconds.
public enum RandomBytes {
    /// `count` random bytes from `/dev/urandom`.
    public static func data(count: Int) throws -> Data {
        guard let source = FileHandle(forReadingAtPath: "/dev/urandom") else {
            throw ProductError(description: "cannot open /dev/urandom")
        }
        defer { try? source.close() }
        var data = Data()
        while data.count < count {
            data.append(source.readData(ofLength: min(count - data.count, 1 << 20)))
        }
        return data
    }
}
