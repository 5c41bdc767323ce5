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
        if let error = error as? KnownDamage.Refusal {
            return CofferError(
                .decode,
                "the vault's data file is damaged (\(error.description)), so nothing was written while \(action): a write on a damaged tree can spread the damage. Restore the vault from a complete copy; \(InterfaceName.verify) shows the damage, and lifts this once the file is sound",
                underlying: error
            )
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

/// Runs `body` in a write transaction that frees space (a deletion, ``Environment/writeFreeingSpace(_:)``:
/// on a full disk the space reserve makes room for it), turning any error into a ``CofferError``. A
/// disk too full even for that is reported with what to do: deleting is how one makes room, so
/// "free some space" alone leaves the user nowhere to start.
package func deletion<R>(
    _ action: @autoclosure () -> String,
    in environment: Environment,
    _ body: (Transaction) throws -> R
) throws(CofferError) -> R {
    let reserveSize = environment.spaceReserve.size
    do {
        return try environment.writeFreeingSpace(body)
    } catch let error as LMDBError where error.code == .noSpace {
        let directory = environment.directory.path
        let reserve =
            reserveSize.map { "its space reserve of \($0 >> 10) KiB, given up for this, was not enough" }
            ?? "its space reserve was used up by an earlier deletion and comes back once the disk has room"
        throw CofferError(
            .diskFull,
            "the disk holding the vault \(directory) is full, and \(action()) needs room for a few new pages before "
                + "it frees any (the vault copies what it changes; \(reserve)); nothing was changed. Make room on that "
                + "file system outside the vault: delete or move other files there (`df \(directory)` shows how full "
                + "it is), then run the command again",
            underlying: error
        )
    } catch {
        throw CofferError.wrapping(error, while: action())
    }
}
