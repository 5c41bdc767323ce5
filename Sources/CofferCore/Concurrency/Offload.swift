import Dispatch

/// Runs blocking work (a transaction, a blob pipeline) on a global dispatch queue and resumes the
/// caller with its result, so async callers never block a cooperative thread.
package func offload<Value: Sendable>(
    _ body: @escaping @Sendable () throws(CofferError) -> Value
) async throws(CofferError) -> Value {
    let result: Result<Value, CofferError> = await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            continuation.resume(returning: Result { () throws(CofferError) in try body() })
        }
    }
    return try result.get()
}
