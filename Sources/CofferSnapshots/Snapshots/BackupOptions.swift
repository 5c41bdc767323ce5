public import Foundation

/// How ``Snapshots/backup(directory:options:progress:)-5xvd0`` runs: what the snapshot is called and
/// tagged, where it may travel, what is left out, and the time and host it records.
///
/// ```swift
/// var options = BackupOptions(name: "docs", tags: ["daily"])
/// options.excluding = ["*.tmp", "node_modules"]
/// let result = try vault.snapshots.backup(directory: URL(fileURLWithPath: "/home/ann/docs"), options: options)
/// ```
public struct BackupOptions: Sendable, Equatable {
    /// Groups snapshots of one tree; the directory's absolute path when `nil`.
    public var name: String?
    /// Snapshots are backups, so syncable by default.
    public var scope: SyncScope
    /// The tags the snapshot carries (retention policies and listings select by them). Each is 1 to
    /// 255 bytes of UTF-8 without a comma; duplicates count once.
    public var tags: [String]
    /// The zstd level for new chunks, 1 (fastest) to 19 (smallest); `nil` uses the vault's
    /// ``Vault/Configuration/compressionLevel``.
    public var compressionLevel: Int?
    /// Paths to leave out, by restic's rules (`*.log`, `node_modules`, `/home/*/cache`, `**/tmp`,
    /// `!keep.log` to put one back; see docs/GUIDE.md).
    public var excluding: [String]
    /// The same, matched ignoring case (`--iexclude`).
    public var excludingIgnoringCase: [String]
    /// Leave out the contents of directories marked as caches by a valid `CACHEDIR.TAG` (the
    /// directory and its tag file are kept), as restic's `--exclude-caches` does.
    public var excludeCaches: Bool
    /// Leave out the contents of directories holding a file of one of these names: `NAME`, or
    /// `NAME:HEADER` for a file that begins with HEADER (restic's `--exclude-if-present`).
    public var excludeIfPresent: [String]
    /// Leave out regular files larger than this many bytes.
    public var excludeLargerThan: Int64?
    /// Do not enter directories on another file system than the backed-up directory's; their mount
    /// points are recorded as empty directories.
    public var oneFileSystem: Bool
    /// On a vault that offloads its content to an object store (with the store attached), the bytes
    /// of new content after which the backup commits a part and uploads it, so that its directory
    /// stays within the cache budget (``BackupUploads``); `nil`: a quarter of the budget, at least
    /// 64 MiB and at most 1 GiB. Ignored elsewhere.
    public var partSize: Int64?
    /// When the snapshot says it was taken; now when `nil` (restic's `backup --time`, for importing
    /// old backups, and for tests of retention policies).
    public var time: Date?
    /// The host the snapshot says it was taken on; this machine's name when `nil` (restic's
    /// `backup --host`). The previous snapshot a backup compares files with is that host's.
    public var hostname: String?
    /// When the snapshot can be read: ``ProtectionLevel/afterFirstUnlock`` (the default), or
    /// ``ProtectionLevel/completeUnlessOpen`` for a backup that needs no key to write (a locked vault,
    /// a write-only client) and is readable only while the vault is unlocked. Such a backup reads
    /// no earlier snapshot, so it stores every file: its chunks are deduplicated only within it.
    public var protection: ProtectionLevel = .afterFirstUnlock

    /// Options with a name, scope and tags; everything else as by default.
    public init(name: String? = nil, scope: SyncScope = .syncable, tags: [String] = []) {
        self.name = name
        self.scope = scope
        self.tags = tags
        compressionLevel = nil
        excluding = []
        excludingIgnoringCase = []
        excludeCaches = false
        excludeIfPresent = []
        excludeLargerThan = nil
        oneFileSystem = false
        partSize = nil
        time = nil
        hostname = nil
    }

    /// The tags, checked, sorted and unique.
    ///
    /// - Throws: ``CofferError`` `.param` naming a tag that is empty, too long or holds a comma.
    /// ``protection``, checked: snapshots are `afterFirstUnlock` or `completeUnlessOpen`.
    package func checkedProtection() throws(CofferError) -> ProtectionLevel {
        guard protection != .whenUnlocked else {
            throw CofferError(
                .param,
                "snapshots are afterFirstUnlock (readable for background work) or completeUnlessOpen (readable only while unlocked), not whenUnlocked"
            )
        }
        return protection
    }

    package func checkedTags() throws(CofferError) -> [String] {
        for tag in tags {
            guard !tag.isEmpty, tag.utf8.count <= 255, !tag.contains(",") else {
                throw CofferError(
                    .param,
                    "the tag '\(tag)' is not one: a tag is 1 to 255 bytes without a comma (a comma separates tags)"
                )
            }
        }
        return Array(Set(tags)).sorted()
    }

    /// What the walk leaves out besides the patterns.
    ///
    /// - Throws: ``CofferError`` `.param` for an empty marker name or a negative size.
    package func walkLimits() throws(CofferError) -> WalkLimits {
        var limits = WalkLimits()
        if excludeCaches { limits.markers.append(WalkLimits.cacheDirectoryTag) }
        for spec in excludeIfPresent {
            let parts = spec.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty, !name.contains("/") else {
                throw CofferError(
                    .param,
                    "'\(spec)' is not a marker: give a file name, or NAME:HEADER for a file that begins with HEADER"
                )
            }
            limits.markers.append(
                WalkLimits.Marker(name: Array(name.utf8), header: parts.count > 1 ? Array(parts[1].utf8) : nil)
            )
        }
        if let size = excludeLargerThan {
            guard size >= 0 else { throw CofferError(.param, "a size limit must be 0 or more bytes") }
            limits.largerThan = UInt64(size)
        }
        limits.oneFileSystem = oneFileSystem
        return limits
    }

    /// The hostname the snapshot records, checked.
    package func checkedHostname() throws(CofferError) -> String {
        let hostname = self.hostname ?? Snapshots.hostname
        guard !hostname.isEmpty, hostname.utf8.count <= 255 else {
            throw CofferError(.param, "a host name must be 1 to 255 bytes long")
        }
        return hostname
    }
}
