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
/// lineage <push>:<sent-through> <push>:<sent-through> …
/// mac <HMAC-SHA256 of the lines above, hex>
/// signature <Ed25519 signature of the lines above, hex>
/// ```
///
/// The lineage line names the heads this one follows, newest first (at most ``lineageLimit``): the
/// push ids and cursors of the heads the device wrote before it, as the copy of the vault that wrote
/// this one knows them. Two copies of a vault tell from it where their histories part
/// (``Vault/reconcileOwnHead(client:layout:remote:pushing:)``). A head written before it existed
/// has none. Version 2 had no push and signature lines, version 1 no epoch line either (under the
/// sync root); both are still read (see ``Vault/trustedHead(_:key:device:)``).
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
    /// The heads this one follows, newest first: empty for a device's first head, and in heads
    /// written before lineages were kept.
    package var lineage: [Ancestor]

    /// A head a later head follows: its push id and cursor.
    package struct Ancestor: Equatable {
        /// The push that wrote it.
        package var push: String
        /// Its cursor: the changes through it were in the store when it went up.
        package var sentThrough: UInt64

        /// An ancestor from its parts.
        package init(push: String, sentThrough: UInt64) {
            self.push = push
            self.sentThrough = sentThrough
        }
    }

    /// How many heads a lineage names. Two copies whose histories parted more pushes ago than this
    /// can no longer tell where: the copy that re-enrols then counts as in the store what its own
    /// record says it pushed (docs/FORMAT.md, "Remote layout").
    package static let lineageLimit = 64

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
            + (lineage.isEmpty
                ? []
                : Array("lineage \(lineage.map { "\($0.push):\($0.sentThrough)" }.joined(separator: " "))\n".utf8))
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
            let sentThrough = fields["sent-through"].flatMap({ RemoteLayout.sequence($0) }),
            let latest = fields["latest"].flatMap({ RemoteLayout.BundleName(fileName: Substring($0)) })
        else {
            let present = ["device", "sent-through", "latest"].allSatisfy { fields[$0] != nil }
            throw damaged(present ? "has a malformed field, or a change sequence past 2^63" : "lacks a field")
        }
        guard device == expectedDevice else { throw damaged("names device \(device), not its folder's") }
        self.device = device
        self.sentThrough = sentThrough
        self.latest = latest
        self.push = isSigned ? fields["push"] ?? "" : ""
        guard !isSigned || !push.isEmpty else { throw damaged("lacks a field") }
        var lineage: [Ancestor] = []
        if isSigned, let line = fields["lineage"] {
            for entry in line.split(separator: " ") {
                let parts = entry.split(separator: ":")
                guard parts.count == 2, parts[0].count == 32, let sentThrough = RemoteLayout.sequence(parts[1]) else {
                    throw damaged("has a damaged lineage")
                }
                lineage.append(Ancestor(push: String(parts[0]), sentThrough: sentThrough))
            }
        }
        self.lineage = Array(lineage.prefix(Self.lineageLimit))
    }

    /// A head for a new push (with a fresh push id), following the heads of `lineage` (newest first;
    /// the first ``lineageLimit`` are kept).
    package init(device: UUID, sentThrough: UInt64, latest: RemoteLayout.BundleName, lineage: [Ancestor] = []) {
        self.device = device
        self.sentThrough = sentThrough
        self.latest = latest
        self.push = SecureRandom.bytes(count: 16).hexEncoded
        self.lineage = Array(lineage.prefix(Self.lineageLimit))
    }

    /// The HKDF label of the key heads are authenticated with, and the domain of their signatures.
    private static let label = "coffer/v1/remote-head"
}
