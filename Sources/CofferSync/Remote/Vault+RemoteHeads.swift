import Foundation

// Which heads and cuts in an object store a vault trusts, and what a vault does when its own head
// is not the one it wrote (docs/FORMAT.md, "Remote layout"; docs/ARCHITECTURE.md, "Sync").
extension Vault {
    /// The Ed25519 public keys of the group's active members, by device: the only devices whose heads
    /// and cuts count.
    func activeSigningKeys() throws(CofferError) -> [UUID: [UInt8]] { Self.activeSigningKeys(among: try members()) }

    /// What this vault knows of `device`, which is not an active member here, for a message: revoked
    /// (or its keys replaced), or not known yet (its admission has not reached this vault, or it
    /// never was one).
    func whyNotActive(_ device: UUID) -> String {
        guard let member = (try? members())?.first(where: { $0.deviceID == device }) else {
            return
                "which this vault does not know as a member: its admission has not reached this vault yet (a pull of that device's bundles, or an import, brings it), or it never was one"
        }
        return member.isActive
            ? "whose signing keys here are other ones" : "which is no longer a member of the sync group"
    }

    /// The signing key of each active device among `members`.
    static func activeSigningKeys(among members: [GroupMember]) -> [UUID: [UInt8]] {
        var keys: [UUID: [UInt8]] = [:]
        for member in members where member.isActive { keys[member.deviceID] = Array(member.identity.signingKey) }
        return keys
    }

    /// The signing keys `device` had before its current ones (a rekey replaces them), from the
    /// membership log: its admission's and every replacement's but the last.
    func earlierSigningKeys(of device: UUID) throws(CofferError) -> [[UInt8]] {
        guard let stored = try readMetaIfPresent(GroupContext.Meta.log) else { return [] }
        var keys: [[UInt8]] = []
        for entry in try GroupLog(group: syncGroupID, decoding: stored).entries {
            switch entry.change {
            case .joined(let keysThen, _, _, _) where entry.author == device: keys.append(keysThen.signing)
            case .added(let added, let keysThen, _, _, _) where added == device: keys.append(keysThen.signing)
            case .keysReplaced(let keysThen, _) where entry.author == device: keys.append(keysThen.signing)
            default: break
            }
        }
        let current = try activeSigningKeys()[device]
        return keys.filter { $0 != current }
    }

    /// `bytes`, a head of `device` that did not verify, read with one of the device's earlier keys
    /// (written before its rekey, by it or by a copy that still holds them); `nil` when it is not
    /// signed with any of them.
    func headSignedWithEarlierKeys(_ bytes: [UInt8], key: String, device: UUID) -> RemoteHead? {
        guard let (_, epoch) = RemoteHead.version(of: bytes), let root = try? keyRing().root(.sync, epoch: epoch),
            let earlier = try? earlierSigningKeys(of: device)
        else { return nil }
        for signingKey in earlier {
            if let head = try? RemoteHead(
                decoding: bytes,
                key: key,
                expectedDevice: device,
                syncRoot: root,
                signingKey: signingKey
            ) {
                return head
            }
        }
        return nil
    }

    /// Whether this vault's membership log knows `device` at all (active or revoked).
    func knowsDevice(_ device: UUID?) throws(CofferError) -> Bool {
        try members().contains { $0.deviceID == device }
    }

    /// A head this vault trusts: written by `device` while an active member (a version-3 head signed
    /// with its identity key), and authenticated under the key of the epoch it names. A head of an
    /// earlier version (not signed) is trusted only under the group's current epoch, which no revoked
    /// device holds.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` for a head not signed by an active member (or an
    ///   unsigned one under an earlier epoch), `.keyUnavailable` for an epoch this vault does not hold,
    ///   `.decode` for a head that does not verify.
    func trustedHead(_ bytes: [UInt8], key: String, device: UUID) throws(CofferError) -> RemoteHead {
        guard let (version, epoch) = RemoteHead.version(of: bytes) else {
            throw CofferError(.decode, "the head object \(key) is not a Coffer head object")
        }
        let name = device.uuidString.lowercased()
        guard let signingKey = try activeSigningKeys()[device] else {
            throw CofferError(
                .notTrusted,
                "the head object \(key) names device \(name), \(whyNotActive(device))"
            )
        }
        let keys = try keyRing()
        if version < 3, epoch != keys.currentEpoch(.sync) {
            throw CofferError(
                .notTrusted,
                "the head object \(key) is of format version \(version), not signed by its device, under a key epoch that is not the group's current one, so it is not trusted. Update Coffer on device \(name) and push again"
            )
        }
        return try RemoteHead(
            decoding: bytes,
            key: key,
            expectedDevice: device,
            syncRoot: try keys.root(.sync, epoch: epoch),
            signingKey: signingKey
        )
    }

    /// A checkpoint's cut this vault trusts: signed by the compacting device while an active member,
    /// and authenticated under the key of the epoch it names. A version-1 cut (not signed) is trusted
    /// only under the group's current epoch, as an unsigned head.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` for a cut not signed by an active member (or one of
    ///   version 1 under an earlier epoch), `.keyUnavailable` for an epoch this vault does not hold, `.decode` for a cut that
    ///   does not verify.
    package func verifiedCut(_ bytes: [UInt8], key: String, id: String) throws(CofferError) -> RemoteCut {
        let (version, epoch, device) = try RemoteCut.signer(of: bytes, key: key)
        guard let signingKey = try activeSigningKeys()[device] else {
            throw CofferError(
                .notTrusted,
                "the checkpoint cut \(key) was written by device \(device.uuidString.lowercased()), \(whyNotActive(device))"
            )
        }
        if version < 2, epoch != (try keyRing()).currentEpoch(.sync) {
            throw CofferError(
                .notTrusted,
                "the checkpoint cut \(key) is of format version 1, not signed by its device, under a key epoch that is not the group's current one, so it is not trusted; \(run: .compactRemote) again to replace it"
            )
        }
        let root = try keyRing().root(.sync, epoch: epoch)
        do {
            return try RemoteCut(decoding: bytes, key: key, expectedID: id, root: root, signingKey: signingKey)
        } catch  where error.code == .notTrusted {
            // Signed with keys its writer has replaced since: written before that device's rekey, or
            // by a copy still holding them. Either way it no longer counts (red team round 17, F1).
            let earlier = (try? earlierSigningKeys(of: device)) ?? []
            guard
                earlier.contains(where: {
                    (try? RemoteCut(decoding: bytes, key: key, expectedID: id, root: root, signingKey: $0)) != nil
                })
            else { throw error }
            throw CofferError(
                .notTrusted,
                "the checkpoint cut \(key) is signed with keys device \(device.uuidString.lowercased()) has replaced since (a rekey): it was written before that rekey, or by a copy that still holds those keys, so it no longer counts"
            )
        }
    }

    /// What a push or pull makes of this device's own head in the store.
    struct OwnHead {
        /// The changes after this are the next push's (`nil`: everything).
        var cursor: UInt64?
        /// The head in the store, when it is the one this vault last wrote.
        var head: RemoteHead?
        /// Whether the push must write its head even with nothing new to send (the store's head is
        /// not this vault's last one).
        var mustWriteHead = false
        /// Whether the store lost changes (it was rolled back or reset): the push sends everything,
        /// what this vault pulled from there included, since the bundles that held it may be gone.
        var resendAll = false
        /// What to tell the user.
        var notices: [String] = []
        /// Set when the head was written by another copy of this vault: the caller pulls, then
        /// re-enrols (``reenrol(_:remote:)``).
        var copy: Copy?
        /// The head object as read (`nil`: there was none), to tell whether another copy of this
        /// vault wrote one while this push ran.
        var bytes: [UInt8]?
        /// Set when the head is sealed in a key epoch this vault does not hold yet: another copy of
        /// this vault, which knows more of the group (a vault restored from a backup made before a
        /// rekey), wrote it. The caller pulls first, which brings the key, and asks again.
        var undecided = false
    }

    /// Reads this device's head in `remote` and compares it with this vault's own record of its
    /// pushes. A head that is not trusted is ignored and reported, and the record decides; a head
    /// older than the record (a store rolled back) makes the push send again what the store lost; a
    /// head another copy of this vault wrote (a vault restored from a file copy, or cloned, finds the
    /// store ahead of it) is returned as ``OwnHead/copy``, for the pull to re-enrol this vault as a new
    /// device of the group, so both copies' changes are kept. A pull (`pushing` false) acts only on
    /// the last case, and leaves the rest to the next push, which reports them.
    func reconcileOwnHead(
        client: S3Client,
        layout: RemoteLayout,
        remote: S3Remote,
        pushing: Bool = true,
        listing: [S3Object]? = nil
    ) throws(CofferError) -> OwnHead {
        let device = deviceID
        let headKey = layout.headKey(device)
        let (schema, identity) = (schema, remote.identity)
        let (record, last) = try storage("reading the record of this vault's pushes") {
            try environment.read { txn in
                (
                    try RemotePushRecord.load(device: device, remote: identity, in: txn, schema: schema),
                    try ChangeLog.lastSequence(in: txn, schema: schema)
                )
            }
        }
        var own = OwnHead()
        let pushed = record?.pushed
        let bytes = try client.get(headKey)
        own.bytes = bytes
        guard let bytes else {
            if let pushed, pushing {
                own.resendAll = true
                own.notices.append(
                    "This device's head is gone from \(remote.location), though this vault pushed there (changes through \(pushed.sentThrough)): the store was reset or rolled back, so this push sends everything again."
                )
            }
            return own
        }
        let head: RemoteHead
        do {
            head = try trustedHead(bytes, key: headKey, device: device)
        } catch  where error.code == .keyUnavailable {
            own.cursor = pushed?.sentThrough
            own.mustWriteHead = true
            own.undecided = true
            return own
        } catch  where error.code == .notTrusted || error.code == .decode {
            own.cursor = pushed?.sentThrough
            own.mustWriteHead = true
            let earlier = headSignedWithEarlierKeys(bytes, key: headKey, device: device)
            // The objects this device pushed before its rekey are signed with the keys it replaced,
            // which other members refuse: the push sends its changes again under the new keys.
            if earlier != nil { own.cursor = nil }
            guard pushing else { return own }
            guard let earlier else {
                own.notices.append(
                    "Ignored this device's head in the store: \(error.message). This push goes on from this vault's own record of its pushes and writes the head again."
                )
                return own
            }
            let resend =
                "This push sends this vault's changes again, signed with its new keys (the other devices skip its older objects), and writes the head again."
            // A head naming this vault's own newest bundle (its salt) was written by the copy, but
            // the bundle was not: there is nothing of the copy's to look for (red team round 22).
            let namesOwnBundle: Bool
            if let pushed, earlier.latest == pushed.latest, pushed.salt.count == BundleHeader.saltSize {
                namesOwnBundle = try storedBundleSalt(earlier.latest, client: client, layout: layout) == pushed.salt
            } else {
                namesOwnBundle = false
            }
            if record?.pushed?.matches(earlier) == true || record?.writing?.matches(earlier) == true {
                own.notices.append(
                    "Ignored this device's head in the store: it is signed with the keys this device had before its rekey. \(resend)"
                )
            } else if namesOwnBundle {
                own.notices.append(
                    "Ignored this device's head in the store: a copy of this vault still holding the keys it had before its rekey wrote it after this vault last pushed, naming this vault's own newest bundle (the copy pushed no bundle there). \(resend)"
                )
            } else {
                // Another copy holding the replaced keys pushed after this vault last did: members
                // that pulled it before hearing of the rekey applied what it wrote (red team round
                // 15, N2).
                own.notices.append(
                    "Warning: a copy of this vault still holding the keys it had before its rekey pushed \(layout.bundleKey(device, earlier.latest)) after this vault last pushed; any device that pulled it before this push applied what that copy wrote, and passes it on to the group (last writer wins against this vault's writes). Once they have pushed, pull and check this vault's records for writes that are not yours. \(resend)"
                )
            }
            return own
        }
        if let record, record.pushed?.matches(head) == true || record.writing?.matches(head) == true {
            // The head is this vault's, but the bundle it names may not be: another copy of the
            // vault that pushed the same name at the same moment can have finished its upload after
            // this one, and both heads went up unseen by the other's last look (red team round 20,
            // R20-2). That copy uses this device's id: this vault becomes a new device, as any copy
            // does, sends its changes from that bundle on again, and pulls the other copy's. (An
            // object there that is no bundle is damage, not a copy: pulls wait at it, and a
            // compaction heals it.)
            let mine = record.pushed?.matches(head) == true ? record.pushed : record.writing
            // A head with this vault's push id says what that push wrote, or someone holding this
            // device's keys (a copy of the vault, or its files and passphrase) signed another in its
            // name: a larger cursor would silence every later push (red team round 22, F1). The push
            // goes on from the record and writes its head again.
            if let mine, !mine.wrote(head) {
                own.cursor = mine.sentThrough
                own.mustWriteHead = true
                guard pushing else { return own }
                own.notices.append(
                    "Warning: this device's head in \(remote.location) carries this vault's last push but says changes through \(head.sentThrough) and \(head.latest.fileName), where this vault wrote \(mine.sentThrough) and \(mine.latest.fileName): someone holding this device's keys (a copy of this vault, or its files and passphrase) signed it. This push goes on from this vault's own record and writes the head again. If no other copy of this vault should be running, its keys have leaked: rekey it (\(InterfaceName.rekey)), which makes the group refuse the old keys."
                )
                return own
            }
            if let mine, mine.salt.count == BundleHeader.saltSize, mine.latest.first <= mine.latest.last,
                let stored = try storedBundleSalt(mine.latest, client: client, layout: layout), !stored.isEmpty,
                stored != mine.salt
            {
                own.mustWriteHead = true
                own.copy = Copy(
                    covered: min(mine.latest.first - 1, last),
                    storeThrough: head.sentThrough,
                    localThrough: last,
                    pushedThrough: mine.sentThrough,
                    replacedBundle: layout.bundleKey(device, mine.latest)
                )
                return own
            }
            // The head is the one this vault last wrote, but a cut this device signed may name more
            // of its changes: a copy of this vault pushed and compacted them since, and the store's
            // head was put back to this vault's (red team round 44, outside test of F3). Going on
            // from the head would reuse those changes' numbers, and this vault's next compaction
            // would delete the checkpoint that alone holds them.
            if let claimed = try ownCutClaim(client: client, layout: layout, listing: listing),
                claimed > head.sentThrough
            {
                own.mustWriteHead = true
                own.copy = Copy(
                    covered: min(mine?.sentThrough ?? 0, last),
                    storeThrough: claimed,
                    localThrough: last,
                    pushedThrough: mine?.sentThrough ?? 0,
                    ownCut: true
                )
                return own
            }
            own.cursor = head.sentThrough
            own.head = head
            return own
        }
        // Where this vault's history and the head's part, when their lineages tell: the newest head
        // both follow. A head this vault wrote before its last is the store rolled back; a head that
        // follows this vault's last or an earlier one is another copy's, which holds everything
        // through the head where they parted (and nothing this vault pushed after it).
        let mine = Set(record?.lineage.map(\.push) ?? [])
        let parted = mine.contains(head.push) ? nil : head.lineage.first { mine.contains($0.push) }
        if let pushed, parted == nil,
            mine.contains(head.push)
                || head.sentThrough < pushed.sentThrough
                || (head.sentThrough == pushed.sentThrough && head.latest.last < pushed.latest.last)
        {
            own.mustWriteHead = true
            own.resendAll = true
            guard pushing else { return own }
            own.notices.append(
                "The store \(remote.location) was rolled back: this device's head there says changes through \(head.sentThrough), but this vault pushed through \(pushed.sentThrough). Pushing everything again, what it pulled from there included, since the bundles that held it may be gone."
            )
            return own
        }
        // A head of an earlier version, written before this vault kept a record, is its own unless it
        // is ahead of this vault's change log.
        if record == nil, head.push.isEmpty, head.sentThrough <= last {
            own.cursor = head.sentThrough
            own.head = head
            own.mustWriteHead = true
            return own
        }
        // What this vault pushed as the device is in the store only while its newest bundle is the
        // one it wrote: another copy pushing the same name may have replaced it (red team round 20,
        // R20-2), or a compaction folded it into a checkpoint that may hold the other's instead.
        var covered = min(pushed?.sentThrough ?? 0, last)
        if let parted { covered = min(covered, parted.sentThrough) }
        if let pushed, pushed.salt.count == BundleHeader.saltSize, pushed.latest.first <= pushed.latest.last,
            try storedBundleSalt(pushed.latest, client: client, layout: layout) != pushed.salt
        {
            covered = min(covered, pushed.latest.first - 1)
        }
        own.copy = Copy(
            covered: covered,
            storeThrough: head.sentThrough,
            localThrough: last,
            pushedThrough: pushed?.sentThrough ?? 0
        )
        own.mustWriteHead = true
        return own
    }

    /// Handles a push overtaken by another copy of this vault: between reading this device's head and
    /// writing its own, the head changed, so another copy pushed from the same cursor meanwhile. When
    /// both wrote the same bundle name and this push's upload (told by its `salt`) finished last, the
    /// other copy's changes there are gone from the store: the head is set back to before that bundle
    /// (signed with the device's key, which both copies hold), so the other copy's next push finds
    /// the store rolled back and sends everything again, and pullers lower their cursor to it. When
    /// the other copy's upload finished last, its bundle and head stand. The caller then pushes again,
    /// as a copy (it re-enrols).
    func overtaken(
        by current: [UInt8]?,
        wrote name: RemoteLayout.BundleName,
        salt: [UInt8],
        client: S3Client,
        layout: RemoteLayout
    ) throws(CofferError) {
        let device = deviceID
        let key = layout.headKey(device)
        guard let current, let head = try? trustedHead(current, key: key, device: device), head.latest == name else {
            return
        }
        guard try storedBundleSalt(name, client: client, layout: layout) == salt else { return }
        let before = RemoteLayout.BundleName(first: name.first, last: name.first - 1)
        let (schema, identity) = (schema, client.remote.identity)
        let record = try storage("reading the record of this vault's pushes") {
            try environment.read { txn in
                try RemotePushRecord.load(device: device, remote: identity, in: txn, schema: schema)
            }
        }
        // It follows this vault's last head, which both copies' pushes followed.
        let reset = RemoteHead(
            device: device,
            sentThrough: name.first - 1,
            latest: before,
            lineage: record?.pushed?.withLineage ?? []
        )
        let keys = try keyRing()
        let epoch = keys.currentEpoch(.sync)
        try client.put(
            key,
            body: try reset.encoded(
                epoch: epoch,
                root: try keys.root(.sync, epoch: epoch),
                signer: try deviceKeys().signing
            )
        )
    }

    /// The salt of this device's bundle stored under `name`: `nil` when there is no such object
    /// (compacted away, or never written), empty for an object that is no bundle of this device (junk,
    /// or another device's bundle copied there by someone who may write to the store: damage, which
    /// must not make this vault re-enrol). A vault's own bundle has the salt its push record keeps;
    /// another copy of the vault pushing the same name writes another (red team round 20, R20-2).
    func storedBundleSalt(
        _ name: RemoteLayout.BundleName,
        client: S3Client,
        layout: RemoteLayout
    ) throws(CofferError) -> [UInt8]? {
        let prefix: [UInt8]
        do throws(CofferError) {
            prefix = try client.getPrefix(layout.bundleKey(deviceID, name), count: BundleHeader.fixedSize)
        } catch  where error.code == .itemNotFound {
            return nil
        }
        guard let fields = BundleHeader.fixedFields(ofPrefix: prefix), fields.deviceID == deviceID else { return [] }
        return fields.salt
    }

    /// The meta key noting that this vault wrote checkpoint `id` (docs/FORMAT.md, "Meta records").
    static func ownCheckpointKey(_ id: String) -> [UInt8] { Array("own-checkpoint \(id)".utf8) }

    /// What a vault that finds itself a copy of its device knows (``reconcileOwnHead``).
    struct Copy {
        /// The changes through this are in the store as the old device's: this vault pushed them.
        var covered: UInt64
        /// The other copy's head's cursor, this vault's last change, and its own record's cursor.
        var storeThrough: UInt64
        var localThrough: UInt64
        var pushedThrough: UInt64
        /// Set when the head is this vault's but the bundle it names is another copy's: its key.
        var replacedBundle: String?
        /// Set when the head is this vault's but a cut this device signed names later changes.
        var ownCut = false
    }

    /// The last of this device's own changes that a checkpoint cut it signed names, when the store
    /// holds such a cut this vault trusts and did not write itself (meta `own-checkpoint <id>`):
    /// one a copy of it wrote. A cut this vault wrote, copied from another store it pushes to,
    /// says nothing of a copy (outside test of red team round 44's F3 fix, G2).
    ///
    /// Every push and pull asks, so what each cut object (by its entity tag) says is kept for the
    /// process's life, per device and key epoch.
    func ownCutClaim(
        client: S3Client,
        layout: RemoteLayout,
        listing: [S3Object]? = nil
    ) throws(CofferError) -> UInt64? {
        var objects = listing ?? []
        if listing == nil { objects = try client.list(prefix: layout.checkpointFolder + "/") }
        let tags = Dictionary(objects.map { ($0.key, $0.etag) }) { first, _ in first }
        let schema = schema
        let epoch = try keyRing().currentEpoch(.sync)
        let ids = layout.checkpoints(in: objects).filter(\.value.hasCut).map(\.key)
        let written = try storage("reading the checkpoints this vault wrote") {
            try environment.read { txn in
                Set(try ids.filter { try txn.get(schema.meta, key: Self.ownCheckpointKey($0)) != nil })
            }
        }
        var claimed: UInt64?
        for id in ids where !written.contains(id) {
            let key = layout.checkpointCutKey(id)
            let cacheKey = tags[key].flatMap { $0.isEmpty ? nil : "\(deviceID) \(epoch) \(key) \($0)" }
            let own: UInt64?
            if let cacheKey, let known = Self.ownCutClaims.value(for: cacheKey) {
                own = known.claim
            } else {
                let bytes = try client.get(key)
                own = bytes.flatMap { bytes -> UInt64? in
                    guard (try? RemoteCut.signer(of: bytes, key: key).device) == deviceID,
                        let cut = try? verifiedCut(bytes, key: key, id: id)
                    else { return nil }
                    return cut.through[deviceID]
                }
                if let cacheKey { Self.ownCutClaims.insert(OwnCutClaim(claim: own), for: cacheKey, cost: 1) }
            }
            if let own { claimed = max(claimed ?? 0, own) }
        }
        return claimed
    }

    /// What a cut object says of its own device's changes, when this device signed it.
    struct OwnCutClaim: Sendable {
        var claim: UInt64?
    }

    /// ``ownCutClaim(client:layout:listing:)``'s answers, by device, key epoch, cut object and
    /// entity tag.
    private static let ownCutClaims = BoundedCache<String, OwnCutClaim>(budget: 4096)

    /// Re-enrols this vault, found a copy by ``reconcileOwnHead``, once its pull has merged the
    /// group's newest membership log (so its entry extends it rather than forking it), and returns
    /// what to tell the user.
    func reenrol(_ copy: Copy, remote: S3Remote) throws(CofferError) -> String {
        let old = deviceID.uuidString.lowercased()
        let new = try reenrolAsNewDevice(remote: remote, coveredThrough: copy.covered).uuidString.lowercased()
        let found =
            copy.replacedBundle.map {
                "another copy of this vault, using the same device id, pushed \($0) at the same moment as this vault, and its upload replaced this vault's (this vault's changes from \(copy.covered + 1) go again as the new device's)"
            }
            ?? (copy.ownCut
                ? "a checkpoint cut that device signed names its changes through \(copy.storeThrough), where this vault had pushed through \(copy.pushedThrough) and its head in the store is the one this vault wrote (put back, or the store rolled back)"
                : "the store holds a head of that device this vault did not write (changes through \(copy.storeThrough); this vault has \(copy.localThrough) and had pushed through \(copy.pushedThrough))")
        return
            "This vault is a restored or cloned copy of device \(old): \(found). It is now device \(new), a new member of the group, so both copies' changes are kept; device \(old)'s pushes come back to it by pull. Once no copy uses \(old) any more, revoke it (\(InterfaceName.revoke(old)))."
    }

    /// Makes this vault a new device of its sync group: a fresh device id and identity keys, added to
    /// the membership log by the device it was (an active member whose keys it holds), with the
    /// current group key sealed to it. Two copies of one vault would otherwise write the same device's
    /// change sequences. The old device stays a member (another copy may be using it); this vault
    /// then pulls the old device's bundles like any other device's, from after `coveredThrough` (what
    /// this vault had pushed as the old device, which it holds), and leaves those changes out of its
    /// first push as the new device, since the store has them.
    ///
    /// - Returns: The new device id.
    func reenrolAsNewDevice(remote: S3Remote, coveredThrough: UInt64) throws(CofferError) -> UUID {
        // TODO(issue 37): re-enrolment uses the membership log through GroupContext.append only; a
        // kind of its own ("re-enrolled from") would let other members show it.
        let old = deviceID
        let new = UUID()
        let keys = DeviceKeys.generate()
        let roots = try unlockedRoots()
        let entries = try keys.metaEntries(deviceRoot: roots.device, vaultID: id)
        let publicKeys: DevicePublicKeys
        do {
            publicKeys = DevicePublicKeys(
                agreement: try keys.agreement.publicKey(),
                signing: try keys.signing.publicKey()
            )
        } catch {
            throw CofferError(.internalError, "reading the new device keys failed: \(error)", underlying: error)
        }
        let identity = remote.identity
        try changeGroup("re-enrolling this copy of the vault as a new device") { context, txn, schema in
            let state = try context.state()
            guard let member = state.member(old), member.isActive else {
                throw CofferError(
                    .notTrusted,
                    "this vault is a copy of device \(old.uuidString.lowercased()), which is not an active member of the sync group, so it cannot enrol as a new device; make a new vault and join the group"
                )
            }
            let (epoch, root) = try context.currentRoot()
            try context.append(
                .added(
                    device: new,
                    keys: publicKeys,
                    name: "\(member.name) (copy)",
                    epoch: epoch,
                    box: try GroupKeys.box(root, epoch: epoch, to: publicKeys, group: context.log.group)
                )
            )
            try DeviceGenerations.checkCurrent(roots.deviceGeneration, in: txn, schema: schema)
            for (name, value) in entries { try txn.put(schema.meta, key: Array(name.utf8), value: value) }
            try txn.put(schema.meta, key: Array(MetaKey.deviceID.utf8), value: new.bytes)
            let former = try GroupContext.formerIdentities(in: txn, schema: schema) + [old]
            try txn.put(
                schema.meta,
                key: Array(GroupContext.Meta.formerIdentities.utf8),
                value: former.flatMap(\.bytes)
            )
            _ = try txn.delete(schema.meta, key: RemotePushRecord.metaKey(identity))
            if coveredThrough > 0 {
                try RemoteOrigins(schema: schema, remote: identity)
                    .record(1...coveredThrough, from: old, signedWith: member.keys.signing, in: txn)
                try PulledCursors(schema: schema, remote: identity).record(old, through: coveredThrough, in: txn)
                try SyncRequests(schema: schema).noteCovered(old.bytes, through: coveredThrough, in: txn)
            }
        }
        adoptDeviceID(new)
        return new
    }
}
