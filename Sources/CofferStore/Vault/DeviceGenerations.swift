package import Foundation

/// The generations of a vault's device root (docs/FORMAT.md, "Device key generations").
///
/// `coffer rekey` moves the device-bound records to a fresh root. It begins a generation (meta
/// `rekey`: the new root, sealed under the current one), re-seals the records into it in batches, and
/// ends by making it current: the passphrase and the recovery key then wrap the new root, and every
/// earlier root, the original's included, is kept sealed under it (`device-epochs`). They are kept
/// because naming keys (item ids, the blind index, chunk ids, blob names, chunk boundaries) always
/// come from the original root, so a record keeps its id, and because a process that unlocked before
/// the rekey may still seal a record in an earlier generation, which must stay readable.
package struct DeviceGenerations: Sendable {
    /// The `meta` entries of device generations.
    package enum Meta {
        /// The current generation's id (`UInt64`); absent in a vault never rekeyed.
        package static let current = "device-epoch"
        /// The roots of every earlier generation (``DeviceGenerations/earlierTable``).
        package static let earlier = "device-epochs"
        /// A rekey in progress: its generation's id (`UInt64`) ‖ its root, wrapped under
        /// HKDF(current device root, "coffer/v3/rekey").
        package static let rekey = "rekey"

        /// Every entry, for reading them together.
        package static let all = [current, earlier, rekey]
    }

    /// How the earlier roots are kept: sealed under HKDF(current device root, "coffer/v3/device-epochs").
    package static let earlierTable = SealedKeyTable(
        name: Meta.earlier,
        label: "coffer/v3/device-epochs",
        what: "earlier device roots"
    )

    /// A rekey begun and not yet ended: the generation records move to, and its root.
    package struct Pending: Sendable {
        package let epoch: KeyEpoch
        package let root: SecureBytes
    }

    /// The generation the current root (the one the passphrase wraps) belongs to.
    package let current: KeyEpoch
    /// The roots of earlier generations, the original's included; empty in a vault never rekeyed.
    package let earlier: [KeyEpoch: SecureBytes]
    /// The rekey in progress, if any.
    package let pending: Pending?

    /// The generations of a vault never rekeyed and not being rekeyed.
    package init() {
        current = .original
        earlier = [:]
        pending = nil
    }

    /// The generations stored in `meta` (entry values by name), opened with the current root.
    ///
    /// - Throws: ``CofferError`` `.decode` when an entry is damaged or does not open with `root`.
    package init(meta: [String: [UInt8]], root: SecureBytes, vaultID: UUID) throws(CofferError) {
        current =
            try meta[Meta.current].map { (bytes) throws(CofferError) in
                KeyEpoch(id: try Self.readID(bytes, of: Meta.current))
            } ?? .original
        if current.isOriginal {
            earlier = [:]
        } else {
            guard let sealed = meta[Meta.earlier] else {
                throw CofferError(.decode, "the vault is damaged: meta \"\(Meta.earlier)\" is missing")
            }
            earlier = try Self.earlierTable.open(sealed, under: root, vaultID: vaultID)
            guard earlier[.original] != nil, earlier[current] == nil else {
                throw CofferError(
                    .decode,
                    "the vault is damaged: meta \"\(Meta.earlier)\" lacks the original device root"
                )
            }
        }
        pending = try meta[Meta.rekey].map { (bytes) throws(CofferError) in try Self.openPending(bytes, root, vaultID) }
    }

    /// Reads the generations in `txn`, opened with the current root.
    package static func read(
        in txn: Transaction,
        schema: Schema,
        root: SecureBytes,
        vaultID: UUID
    ) throws -> DeviceGenerations {
        var meta: [String: [UInt8]] = [:]
        for name in Meta.all { meta[name] = try txn.get(schema.meta, key: Array(name.utf8)) }
        return try DeviceGenerations(meta: meta, root: root, vaultID: vaultID)
    }

    /// The original device root, when it is not the current one.
    package var original: SecureBytes? { earlier[.original] }

    /// The device scope's epochs for the key ring: every generation but the original, with their
    /// roots, and the one new records are sealed in (the pending rekey's, during one).
    package func epochRoots(currentRoot: SecureBytes) -> EpochRoots {
        var roots = earlier.filter { !$0.key.isOriginal }
        if !current.isOriginal { roots[current] = currentRoot }
        if let pending { roots[pending.epoch] = pending.root }
        return EpochRoots(roots: roots, current: pending?.epoch ?? current)
    }

    /// Meta `rekey` for a rekey to `root` in `epoch`, sealed under the current root.
    package static func pendingEntry(
        _ pending: Pending,
        currentRoot: SecureBytes,
        vaultID: UUID
    ) throws(CofferError) -> [UInt8] {
        let id = withUnsafeBytes(of: pending.epoch.id.bigEndian) { Array($0) }
        return id
            + (try KeyWrap.wrap(pending.root, under: try rekeyKEK(currentRoot), vaultID: vaultID, name: Meta.rekey))
    }

    /// The `meta` entries that end the pending rekey: its generation becomes current, and every
    /// earlier root (the current one's included) is sealed under its root.
    package func endingEntries(currentRoot: SecureBytes, vaultID: UUID) throws(CofferError) -> [(String, [UInt8])] {
        guard let pending else {
            throw CofferError(.internalError, "ending a rekey that was never begun")
        }
        var roots = earlier
        roots[current] = currentRoot
        return [
            (Meta.current, withUnsafeBytes(of: pending.epoch.id.bigEndian) { Array($0) }),
            (Meta.earlier, try Self.earlierTable.seal(roots, under: pending.root, vaultID: vaultID)),
        ]
    }

    /// Refuses a write of secrets sealed under the device root `generation` (group keys, device
    /// keys) when the vault's current generation is another: another process rekeyed the vault
    /// since this one unlocked it, and what it would seal could no longer be opened.
    package static func checkCurrent(_ generation: KeyEpoch, in txn: Transaction, schema: Schema) throws {
        let stored = try txn.get(schema.meta, key: Array(Meta.current.utf8))
        let current = try stored.map { (bytes) throws(CofferError) in KeyEpoch(id: try readID(bytes, of: Meta.current))
        }
        guard (current ?? .original) == generation else {
            throw CofferError(
                .interactionNotAllowed,
                "another process rekeyed this vault (\(InterfaceName.rekey)) since it was unlocked here; unlock it again and retry. Nothing was changed"
            )
        }
    }

    private static func rekeyKEK(_ root: SecureBytes) throws(CofferError) -> SecureBytes {
        do {
            return try HKDF.deriveKey(from: root, label: "coffer/v3/rekey")
        } catch {
            throw CofferError(.internalError, "deriving the rekey key failed: \(error)", underlying: error)
        }
    }

    private static func openPending(
        _ bytes: [UInt8],
        _ root: SecureBytes,
        _ vaultID: UUID
    ) throws(CofferError) -> Pending {
        guard bytes.count == 8 + AESGCM.overhead + 32 else {
            throw CofferError(.decode, "the vault is damaged: meta \"\(Meta.rekey)\" is \(bytes.count) bytes")
        }
        let epoch = KeyEpoch(id: try readID(Array(bytes[..<8]), of: Meta.rekey))
        guard !epoch.isOriginal,
            let root = try KeyWrap.unwrap(
                Array(bytes[8...]),
                under: try rekeyKEK(root),
                vaultID: vaultID,
                name: Meta.rekey
            )
        else {
            throw CofferError(
                .decode,
                "the vault is damaged: the rekey in progress (meta \"\(Meta.rekey)\") does not open with the device root"
            )
        }
        return Pending(epoch: epoch, root: root)
    }

    private static func readID(_ bytes: [UInt8], of name: String) throws(CofferError) -> UInt64 {
        var reader = BinaryReader(bytes, what: "meta \"\(name)\"")
        let id = try reader.readUInt64()
        try reader.finish()
        return id
    }
}
