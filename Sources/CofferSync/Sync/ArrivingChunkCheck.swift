import Foundation

/// Checks each chunk record a bundle carries against its id before the import keeps it, or, in a thin
/// import, notes where it lies: the record must open under the key for its id and hold a plaintext
/// that has that id (``ChunkRecord/open(_:id:keys:coder:)``).
///
/// The bundle's signature says only that a member made it. A member, a stolen device not yet revoked
/// among them, holds the group's keys, so it can seal anything under any chunk id: junk, or another
/// content. A vault that kept such a record first would keep it for good, since a chunk already here
/// is only counted once more when its genuine record arrives, and a compaction would carry it into
/// the store's checkpoint in place of the genuine one (red team round 41, F1). What it cannot do is
/// find another plaintext with the same id, which is keyed by the group's naming key.
///
/// `completeUnlessOpen` chunks (a write-only client's) are sealed and named with keys agreed per
/// write, which only their record gives: they are checked when a record takes them, at the commit
/// (``UncheckedChunks``).
final class ArrivingChunkCheck {
    private let keys: KeyRing
    private let coder: ChunkRecord.Coder
    private let source: UUID
    private var namespaces: [UInt8: ChunkKeys] = [:]

    /// A check of the chunks of a bundle from device `source`, with the key ring the import reads
    /// its records with (the bundle's new key epochs installed).
    init(keys: KeyRing, source: UUID) throws(CofferError) {
        self.keys = keys
        self.source = source
        coder = try ChunkRecord.Coder()
    }

    /// Whether a chunk record, whose clear header ``ChunkRecord/checkHeader(_:scope:)`` accepted, is
    /// sealed with keys agreed per write (``UncheckedChunks``), which this check passes over.
    static func isSealedPerWrite(_ record: [UInt8]) -> Bool {
        ProtectionLevel(code: record[2])?.isSealedToClassKey ?? false
    }

    /// Checks `record`, whose clear header ``ChunkRecord/checkHeader(_:scope:)`` accepted, against
    /// `id`.
    ///
    /// - Throws: ``CofferError`` `.decode` naming the bundle's device when the record does not hold
    ///   what its id names; `.keyUnavailable` when it is sealed in a key epoch this vault does not
    ///   hold (the pull waits for it, as for a bundle sealed in one).
    func check(_ id: ChunkID, record: [UInt8]) throws(CofferError) {
        guard !Self.isSealedPerWrite(record), let level = ProtectionLevel(code: record[2]) else { return }
        let chunkKeys: ChunkKeys
        if let known = namespaces[record[2]] {
            chunkKeys = known
        } else {
            chunkKeys = try ChunkKeys(scope: .syncable, level: level, write: nil, keys: keys)
            namespaces[record[2]] = chunkKeys
        }
        do throws(CofferError) {
            try record.withBytes { stored throws(CofferError) in
                try ChunkRecord.check(stored, id: id, keys: chunkKeys, coder: coder)
            }
        } catch  where error.code == .decode {
            let device = source.uuidString.lowercased()
            throw CofferError(
                .decode,
                "the bundle from device \(device) carries a chunk record (id \(id.bytes.prefix(6).hexEncoded)…) that does not hold what its id names (\(error.message)): that device sealed something else under another chunk's id (a modified client), or the bundle is damaged. Its records were refused. If you do not know that device, or it was stolen, revoke it (\(InterfaceName.revoke(device)))",
                underlying: error
            )
        }
    }
}
