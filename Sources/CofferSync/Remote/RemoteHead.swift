package import Foundation

/// A device's head object: the last object it writes on each push, so a push killed before it never
/// looks complete (docs/FORMAT.md, "Remote layout"). Text, authenticated with a key derived from the
/// group key of the epoch it names, so only a device holding that key can write one and a pusher
/// never trusts a forged cursor (a revoked device holds no later epoch's key):
///
/// ```
/// coffer-remote-head 2
/// device <device id>
/// epoch <key epoch, 16 hex digits>
/// sent-through <change sequence>
/// latest <first>-<last>.bundle
/// mac <HMAC-SHA256 of the lines above, hex>
/// ```
///
/// Version 1 had no epoch line and was authenticated under the sync root (the original epoch).
package struct RemoteHead: Equatable {
    package static let magic = "coffer-remote-head 2"
    private static let firstVersionMagic = "coffer-remote-head 1"

    /// The device whose head this is.
    package var device: UUID
    /// The pusher's cursor: its next push covers the changes after this.
    package var sentThrough: UInt64
    /// The newest bundle the device has completed; pullers apply bundles up to this one.
    package var latest: RemoteLayout.BundleName

    /// The head as stored, authenticated under `root`, the group key of `epoch`.
    package func encoded(epoch: KeyEpoch, root: SecureBytes) throws(CofferError) -> [UInt8] {
        let body =
            Array(
                "\(Self.magic)\ndevice \(device.uuidString.lowercased())\nepoch \(epoch)\nsent-through \(sentThrough)\n"
                    .utf8
            ) + Array("latest \(latest.fileName)\n".utf8)
        return try AuthenticatedText.seal(body, label: Self.label, root: root)
    }

    /// The epoch a stored head names (the original one for a version-1 head), read before it is
    /// authenticated, to pick the key that does.
    package static func epoch(of bytes: [UInt8]) -> (epoch: KeyEpoch, isFirstVersion: Bool)? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        if lines.first == Substring(firstVersionMagic) { return (.original, true) }
        guard lines.first == Substring(magic),
            let line = lines.first(where: { $0.hasPrefix("epoch ") }),
            let id = UInt64(line.dropFirst(6), radix: 16)
        else { return nil }
        return (KeyEpoch(id: id), false)
    }

    /// Reads and authenticates a head read from `key`, with `syncRoot`, the group key of the epoch
    /// it names (``epoch(of:)``).
    ///
    /// - Throws: ``CofferError`` `.decode` naming `key` if the object is not a head, fails its check
    ///   (another sync group's, or altered), or names another device than its folder's.
    package init(decoding bytes: [UInt8], key: String, expectedDevice: UUID, syncRoot: SecureBytes) throws(CofferError)
    {
        func damaged(_ why: String) -> CofferError {
            CofferError(.decode, "the head object \(key) \(why)")
        }
        let body = try AuthenticatedText.open(bytes, label: Self.label, root: syncRoot, what: "the head object \(key)")
        let (first, lists) = AuthenticatedText.fields(of: body)
        guard first == Substring(Self.magic) || first == Substring(Self.firstVersionMagic) else {
            throw damaged("has an unknown format version")
        }
        let fields = lists.compactMapValues(\.last)
        guard let device = fields["device"].flatMap({ UUID(uuidString: $0) }),
            let sentThrough = fields["sent-through"].flatMap({ UInt64($0) }),
            let latest = fields["latest"].flatMap({ RemoteLayout.BundleName(fileName: Substring($0)) })
        else { throw damaged("lacks a field") }
        guard device == expectedDevice else { throw damaged("names device \(device), not its folder's") }
        self.device = device
        self.sentThrough = sentThrough
        self.latest = latest
    }

    package init(device: UUID, sentThrough: UInt64, latest: RemoteLayout.BundleName) {
        self.device = device
        self.sentThrough = sentThrough
        self.latest = latest
    }

    /// The HKDF label of the key heads are authenticated with.
    private static let label = "coffer/v1/remote-head"
}
