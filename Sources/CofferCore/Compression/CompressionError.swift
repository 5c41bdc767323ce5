/// An error from the zstd layer.
package struct CompressionError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Equatable, Sendable {
        /// The frame would decompress to more than the caller's limit (a decompression bomb, or a record
        /// whose declared size is wrong).
        case exceedsLimit
        /// The input is not a valid zstd frame.
        case corrupt
        /// An argument was out of range (e.g. a compression level).
        case invalidArgument
        /// zstd could not allocate or otherwise failed.
        case library
    }

    /// What went wrong.
    package let kind: Kind
    /// The operation, naming the C function where there is one.
    package let operation: String
    /// zstd's error name, or the argument problem.
    package let reason: String

    package var description: String { "\(operation): \(reason)" }
}
