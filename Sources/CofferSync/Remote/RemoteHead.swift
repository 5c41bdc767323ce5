package import Foundation

/// A device's head object: the last object it writes on each push, so a push killed before it never
/// looks complete (docs/FORMAT.md, "Remote layout"). Text, authenticated with a key derived from the
/// group key of the epoch it names and signed with the device's Ed25519 identity key from the
/// membership log, so only that device (while a member) can write one, and neither a revoked device
/// still holding an old epoch's key nor any other member can forge its cursor:
///
/// ```
/// coffer-remote-head 3
/// device <device id>
/// epoch <key epoch, 16 hex digits>
/// sent-through <change sequence>
/// latest <first>-<last>.bundle
/// push <32 hex digits, fresh at every push>
/// mac <HMAC-SHA256 of the lines above, hex>
/// signature <Ed25519 signature of the lines above, hex>
/// ```
///
/// Version 2 had no push and signature lines, version 1 no epoch line either (under the sync root);
/// both are still read (see ``Vault/trustedHead(_:key:device:)``).
package struct RemoteHead: Equatable {
    package static let magic = "coffer-remote-head 3"
    private static let earlierMagics = ["coffer-remote-head 1", "coffer-remote-head 2"]

    /// The device whose head this is.
    package var device: UUID
    /// The pusher's cursor: its next push covers the changes after this.
    package var sentThrough: UInt64
    /// The newest bundle the device has completed; pullers apply bundles up to this one.
    package var latest: RemoteLayout.BundleName
    /// The push that wrote it: 128 random bits (hex) in a version-3 head, so two copies of one vault
    /// writing the same cursor and bundle name still write different heads; empty in earlier ones.
    package var push: String

    /// The format version (1, 2 or 3) and the epoch of a stored head (the original one for a
    /// version-1 head), read before it is authenticated, to pick the key and the rules that apply.
    package static func version(of bytes: [UInt8]) -> (version: Int, epoch: KeyEpoch)? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        if lines.first == Substring(earlierMagics[0]) { return (1, .original) }
        guard let first = lines.first, first == Substring(magic) || first == Substring(earlierMagics[1]),
            let line = lines.first(where: { $0.hasPrefix("epoch ") }),
            let id = UInt64(line.dropFirst(6), radix: 16)
        else { return nil }
        return (first == Substring(magic) ? 3 : 2, KeyEpoch(id: id))
    }

    /// The newest bundle a stored head names, read before it is authenticated: only to pick which of
    /// the device's objects to import first when the head cannot be checked yet (the import checks
    /// the object itself).
    package static func claimedLatest(of bytes: [UInt8]) -> RemoteLayout.BundleName? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard let line = lines.first(where: { $0.hasPrefix("latest ") }) else { return nil }
        return RemoteLayout.BundleName(fileName: line.dropFirst(7))
    }

    /// The head as stored, authenticated under `root`, the group key of `epoch`, and signed by
    /// `signer`, the device's identity key.
    package func encoded(epoch: KeyEpoch, root: SecureBytes, signer: Ed25519PrivateKey) throws(CofferError) -> [UInt8] {
        let body =
            Array(
                "\(Self.magic)\ndevice \(device.uuidString.lowercased())\nepoch \(epoch)\nsent-through \(sentThrough)\n"
                    .utf8
            ) + Array("latest \(latest.fileName)\npush \(push)\n".utf8)
        return try AuthenticatedText.seal(body, label: Self.label, root: root, signer: signer)
    }

    /// Reads and authenticates a head read from `key`: its mac under `syncRoot`, the group key of the
    /// epoch it names (``version(of:)``), and, for a version-3 head, its signature by `signingKey`,
    /// the Ed25519 public key of `expectedDevice`.
    ///
    /// - Throws: ``CofferError`` `.decode` naming `key` if the object is not a head, fails its mac
    ///   (another sync group's, or altered), or names another device than its folder's;
    ///   `.notTrusted` for a version-3 head not signed by that device.
    package init(
        decoding bytes: [UInt8],
        key: String,
        expectedDevice: UUID,
        syncRoot: SecureBytes,
        signingKey: [UInt8]
    ) throws(CofferError) {
        func damaged(_ why: String) -> CofferError {
            CofferError(.decode, "the head object \(key) \(why)")
        }
        let what = "the head object \(key)"
        let isSigned = Self.version(of: bytes)?.version == 3
        let sealed =
            isSigned
            ? try AuthenticatedText.verifySignature(bytes, label: Self.label, signingKey: signingKey, what: what)
            : bytes
        let body = try AuthenticatedText.open(sealed, label: Self.label, root: syncRoot, what: what)
        let (first, lists) = AuthenticatedText.fields(of: body)
        guard let first, first == Substring(Self.magic) || Self.earlierMagics.contains(String(first)) else {
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
        self.push = isSigned ? fields["push"] ?? "" : ""
        guard !isSigned || !push.isEmpty else { throw damaged("lacks a field") }
    }

    /// A head for a new push (with a fresh push id).
    package init(device: UUID, sentThrough: UInt64, latest: RemoteLayout.BundleName) {
        self.device = device
        self.sentThrough = sentThrough
        self.latest = latest
        self.push = SecureRandom.bytes(count: 16).hexEncoded
    }

    /// The HKDF label of the key heads are authenticated with, and the domain of their signatures.
    private static let label = "coffer/v1/remote-head"
}
