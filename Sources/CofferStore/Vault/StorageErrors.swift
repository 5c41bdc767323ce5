extension CofferError {
    /// Turns an error from a lower layer into a ``CofferError`` that says what was being done and what
    /// to do. A ``CofferError`` passes through unchanged.
    package static func wrapping(_ error: any Error, while action: String) -> CofferError {
        if let error = error as? CofferError { return error }
        if let error = error as? LMDBError {
            switch error.code {
            case .closed:
                return CofferError(.closed, "the vault is closed; open it again", underlying: error)
            case .noSpace:
                return CofferError(
                    .diskFull,
                    "the disk is full while \(action); nothing was changed; free some space and try again",
                    underlying: error
                )
            case .mapFull:
                return CofferError(
                    .diskFull,
                    "the vault reached its maximum size while \(action); nothing was changed",
                    underlying: error
                )
            case .ioError:
                return CofferError(
                    .io,
                    "an input/output error occurred while \(action) (\(error)); check the disk",
                    underlying: error
                )
            case .permissionDenied:
                return CofferError(
                    .io,
                    "permission denied while \(action); check the vault directory's owner and mode",
                    underlying: error
                )
            case .corrupted, .invalid, .panic, .pageNotFound:
                return CofferError(
                    .decode,
                    "the vault's data file is damaged (\(error)) while \(action)",
                    underlying: error
                )
            default:
                return CofferError(.internalError, "storage failed while \(action): \(error)", underlying: error)
            }
        }
        if let error = error as? CryptoError {
            return CofferError(.internalError, "cryptography failed while \(action): \(error)", underlying: error)
        }
        return CofferError(.internalError, "\(action) failed: \(error)")
    }
}

/// Runs `body`, turning any error into a ``CofferError`` (see ``CofferError/wrapping(_:while:)``).
package func storage<R>(_ action: @autoclosure () -> String, _ body: () throws -> R) throws(CofferError) -> R {
    do {
        return try body()
    } catch {
        throw CofferError.wrapping(error, while: action())
    }
}
