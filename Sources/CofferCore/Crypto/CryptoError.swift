/// An error from the cryptographic core.
///
/// Authentication failures are kept apart from library failures: the first means the data (or the key)
/// is wrong, the second that OpenSSL could not do what was asked.
package struct CryptoError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Equatable, Sendable {
        /// An AEAD tag or MAC did not verify: the data was altered, or the key or associated data is wrong.
        case authenticationFailure
        /// An argument had the wrong size or was out of range.
        case invalidArgument
        /// OpenSSL reported a failure.
        case library
    }

    /// What went wrong.
    package let kind: Kind
    /// The operation, naming the C function where there is one.
    package let operation: String
    /// OpenSSL's reason text, or the argument problem.
    package let reason: String

    package var description: String {
        switch kind {
        case .authenticationFailure: return "\(operation): authentication failed (\(reason))"
        case .invalidArgument: return "\(operation): \(reason)"
        case .library: return "\(operation) failed: \(reason)"
        }
    }

    package static func invalidArgument(_ operation: String, _ reason: String) -> CryptoError {
        CryptoError(kind: .invalidArgument, operation: operation, reason: reason)
    }

    package static func authenticationFailure(_ operation: String) -> CryptoError {
        CryptoError(kind: .authenticationFailure, operation: operation, reason: "tag mismatch")
    }
}
