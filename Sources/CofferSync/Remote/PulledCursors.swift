package import Foundation

/// How far this vault has applied each device's bundles from one remote, kept in `meta` under
/// `remote-pulled <remote identity>` (docs/FORMAT.md, "Meta records"): a sequence of
/// `device id (16) ‖ applied through (UInt64)`.
package struct PulledCursors {
    package let schema: Schema
    package let remote: String

    package init(schema: Schema, remote: String) {
        self.schema = schema
        self.remote = remote
    }

    private var key: [UInt8] { Array("remote-pulled \(remote)".utf8) }

    /// Every device's cursor.
    package func load(in txn: Transaction) throws -> [UUID: UInt64] {
        guard let value = try txn.get(schema.meta, key: key) else { return [:] }
        let what = "the pull cursors of \(remote)"
        guard value.count % 24 == 0 else {
            throw CofferError(.decode, "meta \"\(what)\" has a bad length; the vault is damaged")
        }
        var reader = BinaryReader(value, what: what)
        var cursors: [UUID: UInt64] = [:]
        for _ in 0..<(value.count / 24) {
            let device = try UUID(storedBytes: try reader.readBytes(16), what: what)
            cursors[device] = try reader.readUInt64()
        }
        return cursors
    }

    /// Records that `device`'s changes through `sequence` are applied.
    package func record(_ device: UUID, through sequence: UInt64, in txn: Transaction) throws {
        var cursors = try load(in: txn)
        cursors[device] = max(cursors[device] ?? 0, sequence)
        try store(cursors, in: txn)
    }

    /// Sets `device`'s cursor back to `sequence` (its head went back: what follows is pulled again).
    package func lower(_ device: UUID, to sequence: UInt64, in txn: Transaction) throws {
        var cursors = try load(in: txn)
        cursors[device] = min(cursors[device] ?? 0, sequence)
        try store(cursors, in: txn)
    }

    /// Where `head`, `device`'s head now in the store, parted from the last head of the device this
    /// vault pulled (``recordHead(_:in:)``): the cursor of the newest head both follow, when `head`
    /// neither is that head nor follows it; `nil` when it does, when nothing was recorded, or when
    /// their lineages share no head (too far apart to tell). A device restored from an older copy of
    /// its vault, together with the store rolled back to the same moment, pushes on from there: its
    /// head is then ahead of the rolled-back one but follows neither the changes this vault pulled
    /// past it nor their heads, and its new changes reuse their sequence numbers (red team round 35,
    /// F2).
    package func partingPoint(of head: RemoteHead, in txn: Transaction) throws -> UInt64? {
        let recorded = try recordedHead(of: head.device, in: txn)
        guard let last = recorded.first, !head.push.isEmpty else { return nil }
        let chain = [RemoteHead.Ancestor(push: head.push, sentThrough: head.sentThrough)] + head.lineage
        guard !chain.contains(where: { $0.push == last.push }) else { return nil }
        let known = Set(recorded.map(\.push))
        return chain.first { known.contains($0.push) }?.sentThrough
    }

    /// Whether `head` is recorded already as its device's last head pulled (or needs no record: a
    /// head of an earlier version, with no push id); a pull writes only when it is not.
    package func hasRecorded(_ head: RemoteHead, in txn: Transaction) throws -> Bool {
        guard let text = Self.record(of: head) else { return true }
        return try txn.get(schema.meta, key: headKey(head.device)) == text
    }

    /// Records `head` as the device's last head this vault pulled, with the heads it follows.
    package func recordHead(_ head: RemoteHead, in txn: Transaction) throws {
        guard let text = Self.record(of: head), try !hasRecorded(head, in: txn) else { return }
        try txn.put(schema.meta, key: headKey(head.device), value: text)
    }

    /// What ``recordHead(_:in:)`` stores for `head`: `nil` for a head with no push id.
    private static func record(of head: RemoteHead) -> [UInt8]? {
        guard !head.push.isEmpty else { return nil }
        let chain = [RemoteHead.Ancestor(push: head.push, sentThrough: head.sentThrough)] + head.lineage
        return Array(
            chain.prefix(RemoteHead.lineageLimit + 1).map { "\($0.push) \($0.sentThrough)\n" }.joined().utf8
        )
    }

    private func recordedHead(of device: UUID, in txn: Transaction) throws -> [RemoteHead.Ancestor] {
        guard let value = try txn.get(schema.meta, key: headKey(device)) else { return [] }
        var chain: [RemoteHead.Ancestor] = []
        for line in String(decoding: value, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let sentThrough = UInt64(parts[1]) else {
                throw CofferError(
                    .decode,
                    "meta \"the last head pulled of \(device.uuidString.lowercased()) from \(remote)\" is damaged; the vault is damaged"
                )
            }
            chain.append(RemoteHead.Ancestor(push: String(parts[0]), sentThrough: sentThrough))
        }
        return chain
    }

    private func headKey(_ device: UUID) -> [UInt8] {
        Array("remote-pulled-head \(remote) \(device.uuidString.lowercased())".utf8)
    }

    private func store(_ cursors: [UUID: UInt64], in txn: Transaction) throws {
        var writer = BinaryWriter()
        for (device, sequence) in cursors.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            writer.write(raw: device.bytes)
            writer.write(sequence)
        }
        try txn.put(schema.meta, key: key, value: writer.bytes)
    }

    /// The entity tag of the last bundle applied from `device` that its head named as its latest
    /// (meta `remote-answer <remote identity> <device id>`). An answer-only push (no new changes, only
    /// chunks other devices asked for or requests of its own: its name's first sequence is past its
    /// last) replaces the object under the same name, and a push after a rekey sends the device's
    /// changes again under a name whose `last` a copy's object may already have taken: the tag tells
    /// a new object from one already applied.
    package func latestApplied(of device: UUID, in txn: Transaction) throws -> String? {
        try txn.get(schema.meta, key: answerKey(device)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Records that the bundle tagged `etag`, the latest named by `device`'s head, was applied.
    package func recordLatestApplied(_ etag: String, of device: UUID, in txn: Transaction) throws {
        try txn.put(schema.meta, key: answerKey(device), value: Array(etag.utf8))
    }

    /// The entity tag of `device`'s bundle `name`, off its head's chain, when this vault applied it
    /// (meta `remote-off-chain <remote identity> <device id> <bundle name>`; docs/FORMAT.md, "Bundles
    /// off the chain").
    package func offChainApplied(
        _ name: RemoteLayout.BundleName,
        of device: UUID,
        in txn: Transaction
    ) throws
        -> String?
    {
        try txn.get(schema.meta, key: offChainKey(name, device)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Records that `device`'s bundle `name`, tagged `etag`, off its head's chain, was applied.
    package func recordOffChainApplied(
        _ etag: String,
        name: RemoteLayout.BundleName,
        of device: UUID,
        in txn: Transaction
    ) throws {
        try txn.put(schema.meta, key: offChainKey(name, device), value: Array(etag.utf8))
    }

    /// The checkpoints this vault applied from this remote, by id, each with its bundle's entity
    /// tag (meta `remote-checkpoint <remote identity> <checkpoint id>`; docs/FORMAT.md,
    /// "Compaction"): what a checkpoint holds past a device's head moves no cursor, so the tag says
    /// which ones this vault holds the changes of, and keeps it from applying one again.
    package func appliedCheckpoints(in txn: Transaction) throws -> [String: String] {
        let prefix = checkpointKey("")
        var applied: [String: String] = [:]
        try txn.forEach(in: schema.meta, prefix: prefix) { key, value in
            let id = String(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            applied[id] = String(decoding: value, as: UTF8.self)
            return true
        }
        return applied
    }

    /// Records that checkpoint `id`'s bundle, tagged `etag`, was applied.
    package func recordCheckpointApplied(_ etag: String, id: String, in txn: Transaction) throws {
        try txn.put(schema.meta, key: checkpointKey(id), value: Array(etag.utf8))
    }

    /// Forgets checkpoint `id`, gone from the store.
    package func forgetCheckpointApplied(_ id: String, in txn: Transaction) throws {
        try txn.delete(schema.meta, key: checkpointKey(id))
    }

    private func checkpointKey(_ id: String) -> [UInt8] {
        Array("remote-checkpoint \(remote) \(id)".utf8)
    }

    private func offChainKey(_ name: RemoteLayout.BundleName, _ device: UUID) -> [UInt8] {
        Array("remote-off-chain \(remote) \(device.uuidString.lowercased()) \(name.fileName)".utf8)
    }

    private func answerKey(_ device: UUID) -> [UInt8] {
        Array("remote-answer \(remote) \(device.uuidString.lowercased())".utf8)
    }
}
