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

    private func offChainKey(_ name: RemoteLayout.BundleName, _ device: UUID) -> [UInt8] {
        Array("remote-off-chain \(remote) \(device.uuidString.lowercased()) \(name.fileName)".utf8)
    }

    private func answerKey(_ device: UUID) -> [UInt8] {
        Array("remote-answer \(remote) \(device.uuidString.lowercased())".utf8)
    }
}
