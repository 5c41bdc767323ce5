import Foundation

/// The `peers` table: for each peer name, how far incremental exports to it have gone
/// (docs/FORMAT.md, "Peers"). Key: the name as UTF-8; value: `sent through (UInt64) ‖ last export
/// (Int64 ms)`.
package struct PeerCursors {
    package let schema: Schema

    package init(schema: Schema) {
        self.schema = schema
    }

    /// Checks a peer name: 1 to 200 bytes of UTF-8 without control characters.
    ///
    /// - Throws: ``CofferError`` `.param` naming the problem.
    package static func validate(_ name: String) throws(CofferError) {
        guard !name.isEmpty, name.utf8.count <= 200,
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw CofferError(
                .param,
                "the peer name '\(name)' is not usable; give 1 to 200 bytes of text without control characters"
            )
        }
    }

    /// The peer's entry, if any export to it was recorded.
    package func load(_ name: String, in txn: Transaction) throws -> SyncPeer? {
        try txn.withValue(schema.peers, key: Array(name.utf8)) { try Self.decode(name: name, $0) }
    }

    /// Records that the peer now holds everything up to change `sentThrough`.
    package func record(_ name: String, sentThrough: UInt64, in txn: Transaction) throws {
        var writer = BinaryWriter()
        writer.write(sentThrough)
        writer.write(Int64(Date().timeIntervalSince1970 * 1000))
        try txn.put(schema.peers, key: Array(name.utf8), value: writer.bytes)
    }

    /// Every peer, by name.
    package func all(in txn: Transaction) throws -> [SyncPeer] {
        var peers: [SyncPeer] = []
        try txn.forEach(in: schema.peers) { key, value in
            guard let name = String(validating: key, as: UTF8.self) else {
                throw CofferError(.decode, "a peer name is not UTF-8; the vault is damaged")
            }
            peers.append(try Self.decode(name: name, value))
            return true
        }
        return peers
    }

    private static func decode(name: String, _ value: UnsafeRawBufferPointer) throws(CofferError) -> SyncPeer {
        var reader = BinaryReader(Array(value), what: "the entry of peer '\(name)'")
        let sent = try reader.readUInt64()
        let milliseconds = try reader.readInt64()
        try reader.finish()
        return SyncPeer(
            name: name,
            sentThrough: sent,
            lastExport: Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        )
    }
}
