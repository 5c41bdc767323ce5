package import Foundation

/// The cut of a checkpoint (docs/FORMAT.md, "Compaction"): which bundles of each device the
/// checkpoint's bundle holds everything of, so that they may go. Written after the checkpoint's
/// bundle, as its commit point, and authenticated and signed (by the compacting device) like a head,
/// under a label of its own:
///
/// ```
/// coffer-remote-cut 2
/// checkpoint <checkpoint id, 32 lower-case hex digits>
/// device <the compacting device's id>
/// epoch <key epoch, 16 hex digits>
/// through <device id> <change sequence>          (one line per device, by id)
/// bundle <size> <entity tag> <salt, hex>          (the checkpoint's bundle as the store took it)
/// mac <HMAC-SHA256 of the lines above, hex>
/// signature <Ed25519 signature of the lines above by the compacting device, hex>
/// ```
///
/// A version-1 cut (no signature) is trusted only under the group's current epoch, which no revoked
/// device holds (see ``Vault/verifiedCut(_:key:id:)``).
package struct RemoteCut: Equatable {
    package static let magic = "coffer-remote-cut 2"
    private static let firstVersionMagic = "coffer-remote-cut 1"
    private static let label = "coffer/v3/remote-cut"

    /// The checkpoint's id, which names its objects.
    package var id: String
    /// The device that wrote the checkpoint.
    package var device: UUID
    /// For each device, the last change of it the checkpoint holds (with all before it).
    package var through: [UUID: UInt64]
    /// The checkpoint's bundle as the store held it once uploaded, when the cut records it (cuts
    /// written before it did have none).
    package var bundle: StoredBundle?

    /// The size, entity tag and header salt of a checkpoint's bundle object: a bundle changed since
    /// (cut short, or overwritten by someone who may write to the store) no longer has the first
    /// two, which a listing shows without reading it (red team round 44, F3), and another export
    /// put in its place, even one of the same size (an older checkpoint's), has another salt,
    /// which its first bytes show (outside test of that fix, G4).
    package struct StoredBundle: Equatable {
        /// The object's size in bytes.
        package var size: Int64
        /// The object's entity tag, unquoted.
        package var etag: String
        /// The salt in the bundle's header, random for every export; empty in a cut that does not
        /// record it.
        package var salt: [UInt8]
    }

    package init(id: String, device: UUID, through: [UUID: UInt64], bundle: StoredBundle? = nil) {
        self.id = id
        self.device = device
        self.through = through
        self.bundle = bundle
    }

    /// Why a bundle whose header has `salt` is not the export this cut was written for; `nil` when
    /// it is, or when the cut does not record it.
    package func saltMismatch(_ salt: [UInt8]) -> String? {
        guard let bundle, bundle.salt != salt else { return nil }
        return "its bundle is another export than the one its cut was written for (its header's salt "
            + "differs): an older checkpoint's bundle, or another, was put in its place"
    }

    /// Why the listed `object`, the checkpoint's bundle, may not be the one this cut was written
    /// for; `nil` when it is, or when the cut does not record it. With `sizeOnly`, only a size
    /// that differs counts: an upload of the same bytes in other parts (a copy of the bucket) has
    /// another entity tag, and a reader that checks every byte need not tell them apart.
    package func bundleMismatch(_ object: S3Object?, sizeOnly: Bool = false) -> String? {
        guard let bundle else { return nil }
        guard let object else { return "its bundle is gone" }
        if object.size != bundle.size {
            return "its bundle holds \(object.size) bytes where its cut recorded \(bundle.size): "
                + "it was cut short or replaced"
        }
        if !sizeOnly, !object.etag.isEmpty, object.etag != bundle.etag {
            return "its bundle's entity tag is \(object.etag) where its cut recorded \(bundle.etag): it was "
                + "uploaded again since, altered or as a copy of the same bytes (a copied bucket), which this "
                + "vault cannot tell apart without reading it"
        }
        return nil
    }

    /// A fresh checkpoint id: 128 random bits.
    package static func freshID() -> String { SecureRandom.bytes(count: 16).hexEncoded }

    /// Whether this cut holds at least everything `other` does.
    package func covers(_ other: RemoteCut) -> Bool {
        other.through.allSatisfy { device, sequence in (through[device] ?? 0) >= sequence }
    }

    /// The cut as stored, under `root`, the group key of `epoch`, signed by `signer`, the compacting
    /// device's identity key.
    package func encoded(epoch: KeyEpoch, root: SecureBytes, signer: Ed25519PrivateKey) throws(CofferError) -> [UInt8] {
        var text = "\(Self.magic)\ncheckpoint \(id)\ndevice \(device.uuidString.lowercased())\nepoch \(epoch)\n"
        for (device, sequence) in through.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            text += "through \(device.uuidString.lowercased()) \(sequence)\n"
        }
        if let bundle { text += "bundle \(bundle.size) \(bundle.etag) \(bundle.salt.hexEncoded)\n" }
        return try AuthenticatedText.seal(Array(text.utf8), label: Self.label, root: root, signer: signer)
    }

    /// The format version (1 or 2), epoch and compacting device a stored cut names, read before it
    /// is authenticated, to pick the keys and rules that apply.
    ///
    /// - Throws: ``CofferError`` `.decode` naming `key` for anything that is not a cut.
    package static func signer(
        of bytes: [UInt8],
        key: String
    ) throws(CofferError) -> (version: Int, epoch: KeyEpoch, device: UUID) {
        let (first, fields) = AuthenticatedText.fields(of: bytes)
        guard let first, first == Substring(magic) || first == Substring(firstVersionMagic),
            let text = fields["epoch"]?.first, let id = UInt64(text, radix: 16),
            let device = fields["device"]?.first.flatMap(UUID.init(uuidString:))
        else { throw CofferError(.decode, "the checkpoint cut \(key) is not a Coffer cut") }
        return (first == Substring(magic) ? 2 : 1, KeyEpoch(id: id), device)
    }

    /// The checkpoint id a stored cut names, read before it is authenticated.
    package static func checkpointNamed(in bytes: [UInt8]) -> String? {
        AuthenticatedText.fields(of: bytes).fields["checkpoint"]?.first
    }

    /// Reads and authenticates the cut stored under `key`: its signature by `signingKey` (the
    /// Ed25519 public key of the device it names; a version-1 cut has none), then its mac under
    /// `root`.
    ///
    /// - Throws: ``CofferError`` `.decode` naming `key` if it is not a cut, does not verify, or
    ///   names another checkpoint than its object's name; `.notTrusted` when the signature does not
    ///   verify.
    package init(
        decoding bytes: [UInt8],
        key: String,
        expectedID: String,
        root: SecureBytes,
        signingKey: [UInt8]
    ) throws(CofferError) {
        let what = "the checkpoint cut \(key)"
        let isSigned = AuthenticatedText.fields(of: bytes).first != Substring(Self.firstVersionMagic)
        let sealed =
            isSigned
            ? try AuthenticatedText.verifySignature(bytes, label: Self.label, signingKey: signingKey, what: what)
            : bytes
        let body = try AuthenticatedText.open(sealed, label: Self.label, root: root, what: what)
        let (first, fields) = AuthenticatedText.fields(of: body)
        guard first == Substring(Self.magic) || first == Substring(Self.firstVersionMagic) else {
            throw CofferError(.decode, "\(what) has an unknown format version; upgrade Coffer")
        }
        guard let id = fields["checkpoint"]?.first, let device = fields["device"]?.first.flatMap(UUID.init(uuidString:))
        else { throw CofferError(.decode, "\(what) lacks a field") }
        guard id == expectedID else {
            throw CofferError(
                .decode,
                "\(what) names checkpoint \(id), not its own (another checkpoint's cut copied over it); the next \(InterfaceName.compactRemote) deletes this cut"
            )
        }
        var through: [UUID: UInt64] = [:]
        for line in fields["through"] ?? [] {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let device = UUID(uuidString: String(parts[0])),
                let sequence = RemoteLayout.sequence(parts[1])
            else { throw CofferError(.decode, "\(what) has a malformed through line") }
            through[device] = sequence
        }
        var bundle: StoredBundle?
        if let line = fields["bundle"]?.first {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let size = Int64(parts[0]), size >= 0,
                let salt = [UInt8](hexDigits: String(parts[2])), salt.count == BundleHeader.saltSize
            else { throw CofferError(.decode, "\(what) has a malformed bundle line") }
            bundle = StoredBundle(size: size, etag: String(parts[1]), salt: salt)
        }
        self.init(id: id, device: device, through: through, bundle: bundle)
    }
}
