package import Foundation

/// The identity of a vault: its format version, ids and creation time, stored as five `meta` entries
/// (docs/FORMAT.md, "The meta table"). Written once at creation and read at every open; this is
/// the one place that encodes and decodes them.
package struct VaultIdentity: Sendable {
    package let formatVersion: UInt32
    package let vaultID: UUID
    package let deviceID: UUID
    package let syncGroupID: UUID
    package let createdAt: Date

    package init(formatVersion: UInt32, vaultID: UUID, deviceID: UUID, syncGroupID: UUID, createdAt: Date) {
        self.formatVersion = formatVersion
        self.vaultID = vaultID
        self.deviceID = deviceID
        self.syncGroupID = syncGroupID
        self.createdAt = createdAt
    }

    /// The names of the entries the identity is stored in.
    package static let metaNames = [
        MetaKey.format, MetaKey.vaultID, MetaKey.deviceID, MetaKey.syncGroupID, MetaKey.createdAt,
    ]

    /// The entries that store the identity, for `meta`.
    package var metaEntries: [(String, [UInt8])] {
        [
            (MetaKey.format, withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) }),
            (MetaKey.vaultID, vaultID.bytes),
            (MetaKey.deviceID, deviceID.bytes),
            (MetaKey.syncGroupID, syncGroupID.bytes),
            (
                MetaKey.createdAt,
                withUnsafeBytes(of: Int64(createdAt.timeIntervalSince1970 * 1000).bigEndian) { Array($0) }
            ),
        ]
    }

    /// Reads the identity back from its `meta` entries (``metaNames``, those present), for the vault
    /// in `directory`.
    ///
    /// - Returns: `nil` when there is no format entry (an LMDB database that is no vault).
    /// - Throws: ``CofferError`` `.unsupportedFormat` for a newer format, `.decode` for damaged or
    ///   missing entries.
    package init?(
        metaEntries entries: [String: [UInt8]],
        directory: String,
        readableVersion: UInt32
    ) throws(CofferError) {
        guard let formatBytes = entries[MetaKey.format] else { return nil }
        guard formatBytes.count == 4 else {
            throw CofferError(.decode, "the vault is damaged: its format version record is \(formatBytes.count) bytes")
        }
        let version = formatBytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard version <= readableVersion else {
            throw CofferError(
                .unsupportedFormat,
                "the vault at \(directory) has format version \(version), newer than this Coffer reads (\(readableVersion)); upgrade Coffer"
            )
        }
        guard version >= 1 else { throw CofferError(.decode, "the vault is damaged: format version \(version)") }
        func field(_ name: String) throws(CofferError) -> [UInt8] {
            guard let value = entries[name] else {
                throw CofferError(.decode, "the vault is damaged: meta \"\(name)\" is missing")
            }
            return value
        }
        var created = BinaryReader(try field(MetaKey.createdAt), what: "meta \"\(MetaKey.createdAt)\"")
        let milliseconds = try created.readInt64()
        try created.finish()
        self.init(
            formatVersion: version,
            vaultID: try UUID(storedBytes: try field(MetaKey.vaultID), what: MetaKey.vaultID),
            deviceID: try UUID(storedBytes: try field(MetaKey.deviceID), what: MetaKey.deviceID),
            syncGroupID: try UUID(storedBytes: try field(MetaKey.syncGroupID), what: MetaKey.syncGroupID),
            createdAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        )
    }
}
