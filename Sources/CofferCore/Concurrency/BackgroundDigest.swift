import Foundation

/// A SHA-256 computed on a thread of its own: `update` hands the bytes over (copied, through a
/// bounded channel) and returns, so hashing a bundle's stream overlaps with sealing and writing it
/// instead of adding to them. `finalize` waits for the thread and returns the digest.
package final class BackgroundDigest: @unchecked Sendable {
    private let channel = BoundedChannel<[UInt8]>(capacity: 16)
    private let done = DispatchSemaphore(value: 0)
    // Written by the hashing thread before it signals `done`; read after `done` is waited for.
    private var outcome: Result<[UInt8], CryptoError> = .failure(.invalidArgument("digest", "not finished"))
    private var finished = false
    /// Small pieces gathered into one hand-over, so a stream of frame headers and small records
    /// does not pay the channel's cost per piece.
    private var pending: [UInt8] = []
    private static let batch = 256 << 10

    /// Starts the hashing thread. (A context that cannot be made fails ``finalize()``.)
    package init() throws(CryptoError) {
        let channel = channel
        Thread.detachNewThread { [self] in
            // The context lives on this thread only.
            outcome = Result { () throws(CryptoError) in
                let digest: SHA256
                do throws(CryptoError) {
                    digest = try SHA256()
                } catch {
                    while (try? channel.receive()) != nil {}
                    throw error
                }
                var failure: CryptoError?
                while let piece = try? channel.receive() {
                    guard failure == nil else { continue }
                    do throws(CryptoError) { try digest.update(piece) } catch { failure = error }
                }
                if let failure { throw failure }
                return try digest.finalize()
            }
            done.signal()
        }
    }

    deinit {
        if !finished {
            channel.finish()
            done.wait()
        }
    }

    /// Hands `bytes` to the hashing thread, in pieces of at least 256 KiB (blocking only while it is
    /// 16 pieces behind).
    package func update(_ bytes: some Collection<UInt8>) {
        if pending.isEmpty, bytes.count >= Self.batch {
            _ = channel.send(Array(bytes))
            return
        }
        pending.append(contentsOf: bytes)
        if pending.count >= Self.batch {
            _ = channel.send(pending)
            pending = []
            pending.reserveCapacity(Self.batch)
        }
    }

    /// Waits for every piece to be hashed and returns the digest.
    package func finalize() throws(CryptoError) -> [UInt8] {
        finished = true
        if !pending.isEmpty { _ = channel.send(pending) }
        pending = []
        channel.finish()
        done.wait()
        return try outcome.get()
    }
}
