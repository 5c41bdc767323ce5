import Foundation

/// The keys of one scope's chunks, keyed once and used for many chunks. Not thread-safe (it holds
/// OpenSSL contexts): one per pipeline worker.
///
/// - chunk id = HMAC-SHA256(chunk-id key, plaintext): equal plaintexts in one scope share an id (dedup),
///   and ids reveal nothing about content to anyone without the key;
/// - chunk key = HMAC-SHA256(chunk key, chunk id): every chunk is sealed under its own key, so GCM's
///   nonce limits never bite, however many chunks a vault holds.
final class ChunkKeys {
    let scope: SyncScope
    private let idMAC: HMACSHA256
    private let keyMAC: HMACSHA256

    init(scope: SyncScope, idKey: SecureBytes, sealKey: SecureBytes) throws(CofferError) {
        self.scope = scope
        do {
            idMAC = try HMACSHA256(key: idKey)
            keyMAC = try HMACSHA256(key: sealKey)
        } catch {
            throw CofferError(.internalError, "keying the chunk keys failed: \(error)", underlying: error)
        }
    }

    /// The id of a chunk with this plaintext.
    func id(of plaintext: some ContiguousBytes) throws(CofferError) -> [UInt8] {
        do {
            return try idMAC.authenticationCode(forParts: [plaintext])
        } catch {
            throw CofferError(.internalError, "computing a chunk id failed: \(error)", underlying: error)
        }
    }

    /// The key that seals the chunk with this id.
    func sealingKey(for id: [UInt8]) throws(CofferError) -> SecureBytes {
        do {
            var bytes = try keyMAC.authenticationCode(of: id)
            defer { bytes.wipe() }
            return SecureBytes(copying: bytes)
        } catch {
            throw CofferError(.internalError, "deriving a chunk key failed: \(error)", underlying: error)
        }
    }
}
