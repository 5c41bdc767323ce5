package import Foundation

/// The cryptography of a sync group's key epochs (docs/FORMAT.md, "Key epochs"): how a group key
/// reaches a device (sealed to its X25519 key), how a new epoch carries the earlier ones (sealed under
/// the new key, so any holder of the current key can read every older record), how a joining device
/// proves it holds the key, and how a vault keeps the epochs it holds (meta `group-keys`, sealed
/// under the device root).
package enum GroupKeys {
    /// The meta entry that holds this vault's later epoch roots.
    package static let metaKey = "group-keys"

    /// The purpose a group key's box to a device is sealed for: it names the group and the epoch,
    /// so a box is never replayed as another.
    package static func boxPurpose(group: UUID, epoch: KeyEpoch) -> [UInt8] {
        Array("coffer/v2/epoch-key".utf8) + [0] + group.bytes + withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }
    }

    /// Seals `root` (the group key of `epoch`) to a device's X25519 public key.
    package static func box(
        _ root: SecureBytes,
        epoch: KeyEpoch,
        to device: DevicePublicKeys,
        group: UUID
    ) throws(CofferError) -> [UInt8] {
        do {
            return try SealedToKey.seal(root, to: device.agreement, purpose: boxPurpose(group: group, epoch: epoch))
        } catch {
            throw CofferError(.param, "a group key cannot be sealed to that device's key: \(error)", underlying: error)
        }
    }

    /// Opens a box sealed to this device; `nil` when it does not open.
    package static func open(
        _ box: [UInt8],
        epoch: KeyEpoch,
        with key: X25519PrivateKey,
        group: UUID
    ) -> SecureBytes? {
        try? SealedToKey.open(box, with: key, purpose: boxPurpose(group: group, epoch: epoch))
    }

    private static func historyAssociatedData(group: UUID, epoch: KeyEpoch) -> [UInt8] {
        Array("coffer/v2/epoch-history".utf8) + [0] + group.bytes
            + withUnsafeBytes(of: epoch.id.bigEndian) { Array($0) }
    }

    /// The earlier group keys `roots`, sealed under the group key of `epoch`:
    /// AES-256-GCM(HKDF(root, "coffer/v2/epoch-history"), [epoch id (8) ‖ root (32)] × n).
    package static func sealHistory(
        _ roots: [KeyEpoch: SecureBytes],
        under root: SecureBytes,
        epoch: KeyEpoch,
        group: UUID
    ) throws(CofferError) -> [UInt8] {
        var plaintext = SealedKeyTable.encode(roots)
        defer { plaintext.wipe() }
        do {
            let key = try HKDF.deriveKey(from: root, label: "coffer/v2/epoch-history")
            return try AESGCM().seal(
                plaintext,
                key: key,
                authenticating: historyAssociatedData(group: group, epoch: epoch)
            )
        } catch {
            throw CofferError(.internalError, "sealing the group key history failed: \(error)", underlying: error)
        }
    }

    /// Opens an epoch's history with its group key; `nil` when it does not open.
    package static func openHistory(
        _ sealed: [UInt8],
        under root: SecureBytes,
        epoch: KeyEpoch,
        group: UUID
    ) -> [KeyEpoch: SecureBytes]? {
        guard let key = try? HKDF.deriveKey(from: root, label: "coffer/v2/epoch-history"),
            var plaintext = try? AESGCM().open(
                sealed,
                key: key,
                authenticating: historyAssociatedData(group: group, epoch: epoch)
            )
        else {
            return nil
        }
        defer { plaintext.wipe() }
        return SealedKeyTable.decode(plaintext)
    }

    /// The id of the epoch whose group key is `root`: the first 8 bytes of
    /// HMAC-SHA256(`root`, "coffer/v3/epoch-id" ‖ 0x00 ‖ group id), big-endian; `nil` when they are
    /// zero (the original epoch's id), so the caller draws another key.
    package static func committedEpoch(for root: SecureBytes, group: UUID) -> KeyEpoch? {
        guard
            let mac = try? HMACSHA256.authenticationCode(
                for: Array("coffer/v3/epoch-id".utf8) + [0] + group.bytes,
                key: root
            )
        else { return nil }
        let id = mac.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return id == 0 ? nil : KeyEpoch(id: id)
    }

    /// Whether `root` is the key `epoch`'s id commits to.
    package static func commits(_ root: SecureBytes, to epoch: KeyEpoch, group: UUID) -> Bool {
        committedEpoch(for: root, group: group) == epoch
    }

    /// A joining device's proof that it holds the group key `root`: HMAC-SHA256 under
    /// HKDF(root, "coffer/v2/join-proof") of ``GroupEntry/proofMessage(previous:author:keys:name:epoch:)``.
    package static func proof(of message: [UInt8], root: SecureBytes) throws(CofferError) -> [UInt8] {
        do {
            let key = try HKDF.deriveKey(from: root, label: "coffer/v2/join-proof")
            return try HMACSHA256.authenticationCode(for: message, key: key)
        } catch {
            throw CofferError(.internalError, "computing a join proof failed: \(error)", underlying: error)
        }
    }

    /// Whether `proof` proves `root` for `message`, compared in constant time.
    package static func proofIsValid(
        _ proof: [UInt8],
        of message: [UInt8],
        root: SecureBytes
    ) throws(CofferError)
        -> Bool
    {
        let expected = try self.proof(of: message, root: root)
        return expected.count == proof.count
            && expected.withUnsafeBytes { mine in proof.withUnsafeBytes { ConstantTime.equals(mine, $0) } }
    }

    /// Learns every group key this device can open in `log`: boxes sealed to it, then each held
    /// key's history, until nothing new opens (``HeldGroupKeys/learn(_:epoch:)`` decides what a key
    /// offered under an id already held does).
    package static func collect(
        from log: GroupLog,
        device: UUID,
        key: X25519PrivateKey,
        into held: inout HeldGroupKeys
    ) {
        let started = log.startedEpochs
        for entry in log.entries {
            switch entry.change {
            case .added(let added, _, _, let epoch, let box) where added == device && started.contains(epoch):
                if let root = open(box, epoch: epoch, with: key, group: log.group) { held.learn(root, epoch: epoch) }
            case .epochStarted(let epoch, let boxes, _):
                if let box = boxes[device], let root = open(box, epoch: epoch, with: key, group: log.group) {
                    held.learn(root, epoch: epoch)
                }
            default:
                break
            }
        }
        openHistories(
            in: log,
            root: { held.roots[$0] },
            learn: { epoch, root in held.learn(root, epoch: epoch) }
        )
    }

    /// The keys ``collect(from:device:key:into:)`` learns from `log` alone, for a device holding
    /// nothing yet.
    package static func collect(from log: GroupLog, device: UUID, key: X25519PrivateKey) -> HeldGroupKeys {
        var held = HeldGroupKeys(roots: [:], legacy: [], group: log.group)
        collect(from: log, device: device, key: key, into: &held)
        return held
    }

    /// The group keys a holder of `root`, the key of the current epoch, reads from `log` alone
    /// (through the histories epochs and shared keys carry): what a device approved now would hold,
    /// and what a member that rekeyed since an epoch's box was sealed to it can still reach.
    package static func reachable(from log: GroupLog, epoch: KeyEpoch, root: SecureBytes) -> [KeyEpoch: SecureBytes] {
        expand([epoch: root], through: log)
    }

    /// `roots` and every key the histories in `log` open from them that a device may take from
    /// them (``LearnableKeys``). As a device learns (``HeldGroupKeys/learn(_:epoch:)``), a key that
    /// commits to its id replaces one that does not: a history that carries a forged key under a
    /// real epoch's id does not hide the real key another history carries.
    package static func expand(_ roots: [KeyEpoch: SecureBytes], through log: GroupLog) -> [KeyEpoch: SecureBytes] {
        var roots = roots
        openHistories(
            in: log,
            root: { roots[$0] },
            learn: { epoch, root in
                if let held = roots[epoch],
                    epoch.isOriginal || commits(held, to: epoch, group: log.group)
                        || !commits(root, to: epoch, group: log.group)
                {
                    return
                }
                roots[epoch] = root
            }
        )
        return roots
    }

    /// Opens every history in `log` whose epoch's key `root` gives, until nothing new opens, and
    /// hands `learn` each key in them that a device may take (``LearnableKeys``).
    private static func openHistories(
        in log: GroupLog,
        root: (KeyEpoch) -> SecureBytes?,
        learn: (KeyEpoch, SecureBytes) -> Void
    ) {
        var histories: [(epoch: KeyEpoch, history: [UInt8], entry: GroupEntry)] = []
        for entry in log.entries {
            switch entry.change {
            case .epochStarted(let epoch, _, let history), .keysShared(let epoch, let history):
                histories.append((epoch, history, entry))
            default:
                break
            }
        }
        let rule = LearnableKeys(log)
        var opened = Set<Int>()
        // The key each unopened history was last tried with: a forged key held under its epoch's
        // id fails, and the history is tried again once the real key replaces it.
        var tried: [Int: SecureBytes] = [:]
        var progress = true
        while progress {
            progress = false
            for (index, found) in histories.enumerated() where !opened.contains(index) {
                guard let key = root(found.epoch), tried[index].map({ !$0.constantTimeEquals(key) }) ?? true else {
                    continue
                }
                tried[index] = key
                guard let keys = openHistory(found.history, under: key, epoch: found.epoch, group: log.group) else {
                    continue
                }
                opened.insert(index)
                progress = true
                for (epoch, earlier) in keys.sorted(by: { $0.key < $1.key })
                where rule.admits(epoch, from: found.entry) {
                    learn(epoch, earlier)
                }
            }
        }
    }

    /// How a vault keeps every group key it holds (meta `group-keys`): sealed under
    /// HKDF(device root, "coffer/v2/group-keys").
    package static let store = SealedKeyTable(name: metaKey, label: "coffer/v2/group-keys", what: "group keys")

    /// The meta entry that lists the epochs whose keys commit to nothing that the vault may still seal
    /// with and check join proofs with (``HeldGroupKeys/legacy``): their ids, `UInt64` each, ascending.
    package static let legacyMetaKey = "group-epochs-legacy"

}
