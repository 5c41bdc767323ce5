import Foundation

/// Reads one blob: finds its manifest by name, checks the range, and streams its chunks through a
/// ``ContentReader``.
package struct BlobReader {
    package let environment: Environment
    package let store: BlobStore
    package let keys: KeyRing

    package init(vault: Vault, keys: KeyRing) {
        self.init(environment: vault.environment, store: BlobStore(schema: vault.schema), keys: keys)
    }

    package init(environment: Environment, store: BlobStore, keys: KeyRing) {
        self.environment = environment
        self.store = store
        self.keys = keys
    }

    /// The manifest of the blob named `name`.
    package func manifest(of name: String) throws(CofferError) -> BlobManifest {
        let cipher = try makeCipher()
        return try storage("reading a blob manifest") {
            try environment.read { txn in try store.require(name, keys: keys, cipher: cipher, in: txn).manifest }
        }
    }

    /// Writes the blob's bytes in `range` (all of them when `nil`) to `sink`.
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` if there is no such blob, `.param` for a range outside
    ///   it, `.interactionNotAllowed` if it is `whenUnlocked` and the vault is locked, `.decode` naming
    ///   the blob if any of it fails authentication or the digest does not match.
    @discardableResult
    package func read(
        _ name: String,
        range: Range<Int64>? = nil,
        to sink: inout some ByteSink,
        progress: BlobProgress? = nil
    ) throws(CofferError) -> BlobInfo {
        let manifest = try manifest(of: name)
        let wanted = try byteRange(range, of: manifest)
        do {
            try stream(manifest, range: wanted, to: &sink, progress: progress)
        } catch  where error.code == .decode {
            throw CofferError(.decode, "blob '\(name)' is damaged: \(error.message)", underlying: error)
        }
        return manifest.info
    }

    private func byteRange(_ range: Range<Int64>?, of manifest: BlobManifest) throws(CofferError) -> Range<UInt64> {
        guard let range else { return 0..<manifest.size }
        guard range.lowerBound >= 0, UInt64(range.upperBound) <= manifest.size else {
            throw CofferError(
                .param,
                "the range \(range.lowerBound)..<\(range.upperBound) is outside blob '\(manifest.name)', which has \(manifest.size) bytes"
            )
        }
        return UInt64(range.lowerBound)..<UInt64(range.upperBound)
    }

    private func makeCipher() throws(CofferError) -> AESGCM {
        do {
            return try AESGCM()
        } catch {
            throw CofferError(.internalError, "creating a cipher context failed: \(error)", underlying: error)
        }
    }

    /// Streams the chunks of `manifest` overlapping `range`, in order, to `sink`.
    package func stream(
        _ manifest: BlobManifest,
        range: Range<UInt64>,
        to sink: inout some ByteSink,
        progress: BlobProgress?
    ) throws(CofferError) {
        try ContentReader(environment: environment, store: store.content, keys: keys)
            .stream(manifest, range: range, to: &sink, progress: progress)
    }
}

extension BlobManifest: StoredContent {
    package var expectedDigest: [UInt8]? { digest }
}
